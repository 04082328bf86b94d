#!/usr/bin/env bash
# Put Debian i386 programs into an initramfs stage, with the shared
# libraries they need and the i386 dynamic loader: for `make compare`
# hackbench and cyclictest (rt-tests), for `make stress` stress-ng.
# Nothing here runs an i386 binary (the host may not be able to): the
# libraries are found by reading DT_NEEDED with readelf.
#
#   deb-i386-programs.sh STAGE CACHE MISSING PACKAGE... -- PROGRAM...
#
# PACKAGEs (name:i386) must hold the programs and their whole library
# closure.  The .debs are fetched once with `apt-get download` into CACHE
# and reused.  When they cannot be had (no network, no i386 architecture in
# dpkg), the stage is left without them and STAGE/MISSING (a path inside
# the stage) says why, for the guest side or the runner to report.
set -euo pipefail

stage=$(realpath -m "$1") cache=$(realpath -m "$2") missing_file=$3
shift 3
packages=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do packages+=("$1"); shift; done
[ $# -gt 1 ] || { echo "usage: $0 STAGE CACHE MISSING PACKAGE... -- PROGRAM..." >&2; exit 2; }
shift
programs=("$@")
label=$(basename "$missing_file" .missing)

missing() {
	mkdir -p "$(dirname "$stage/$missing_file")"
	echo "$*" > "$stage/$missing_file"
	echo "$label: warning: no ${programs[*]##*/}: $*" >&2
	exit 0
}

# The version apt would install now, per package; one apt-cache run (each
# takes about a second).
declare -A candidates
while IFS= read -r line; do
	case $line in
	"  Candidate: "*) candidates[$pkg]=${line#  Candidate: } ;;
	[!\ ]*:) pkg=${line%:} ;;
	esac
done < <(apt-cache policy "${packages[@]}" 2>/dev/null)
candidate() { echo "${candidates[$1]:-}"; }

mkdir -p "$cache"
# The version apt would install now: a cached .deb of another version
# (after an apt-get update) is fetched afresh.
for p in "${packages[@]}"; do
	name=${p%%:*}
	version=$(candidate "$p")
	[ -n "$version" ] && [ "$version" != "(none)" ] ||
		missing "apt knows no candidate for $p (dpkg --add-architecture i386; apt-get update)"
	compgen -G "$cache/${name}_${version//:/%3a}_i386.deb" > /dev/null && continue
	(cd "$cache" && apt-get download -q "$p=$version" > /dev/null 2>"$cache/apt.err") ||
		missing "apt-get download $p failed: $(tail -1 "$cache/apt.err")"
done

tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
for p in "${packages[@]}"; do
	name=${p%%:*}
	version=$(candidate "$p")
	dpkg-deb -x "$cache/${name}_${version//:/%3a}_i386.deb" "$tree"
done

# The loader named in the programs' PT_INTERP, then the DT_NEEDED closure.
# All libraries go to /lib, which the i386 loader searches without an
# ld.so.cache.
interp=$(readelf -l "$tree/${programs[0]}" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
[ "$interp" = /lib/ld-linux.so.2 ] || missing "unexpected program interpreter '$interp' in ${programs[0]}"
mkdir -p "$stage/lib"
cp -L "$tree/lib/ld-linux.so.2" "$stage/lib/ld-linux.so.2"

find_lib() {
	local d
	for d in lib/i386-linux-gnu usr/lib/i386-linux-gnu lib usr/lib; do
		[ -e "$tree/$d/$1" ] && { echo "$tree/$d/$1"; return 0; }
	done
	return 1
}

queue=()
for prog in "${programs[@]}"; do
	mkdir -p "$(dirname "$stage/$prog")"
	cp "$tree/$prog" "$stage/$prog"
	queue+=("$tree/$prog")
done
while [ ${#queue[@]} -gt 0 ]; do
	elf=${queue[0]}
	queue=("${queue[@]:1}")
	for lib in $(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[ -e "$stage/lib/$lib" ] && continue
		path=$(find_lib "$lib") || missing "$lib (needed by $(basename "$elf")) is in none of ${packages[*]}"
		cp -L "$path" "$stage/lib/$lib"
		queue+=("$path")
	done
done
echo "$label: ${packages[0]%%:*} $(candidate "${packages[0]}"):" \
	"${programs[*]##*/} with $(ls "$stage/lib" | tr '\n' ' ')"
