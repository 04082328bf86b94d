#!/usr/bin/env bash
# Put Debian's i386 hackbench and cyclictest (package rt-tests) into a
# benchmark initramfs, with the shared libraries they need and the i386
# dynamic loader.  Called by build-bench-initrd.sh.
#
#   bench-rt-tests.sh STAGE CACHE
#
# The .debs are fetched once with `apt-get download` into CACHE and reused.
# When they cannot be had (no network, no i386 architecture in dpkg), the
# initramfs is still built, without them: STAGE/bench/rt-tests.missing says
# why, and microbench reports that reason for hackbench and cyclictest.
set -euo pipefail

stage=$(realpath -m "$1") cache=$(realpath -m "$2")
packages=(rt-tests:i386 libc6:i386 libnuma1:i386)
programs=(usr/bin/hackbench usr/bin/cyclictest)

missing() {
	mkdir -p "$stage/bench"
	echo "$*" > "$stage/bench/rt-tests.missing"
	echo "bench-initrd: warning: no hackbench/cyclictest: $*" >&2
	exit 0
}

mkdir -p "$cache"
# The version apt would install now: a cached .deb of another version
# (after an apt-get update) is fetched afresh.
for p in "${packages[@]}"; do
	name=${p%%:*}
	version=$(apt-cache policy "$p" 2>/dev/null | sed -n 's/^ *Candidate: //p')
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
	version=$(apt-cache policy "$p" | sed -n 's/^ *Candidate: //p')
	dpkg-deb -x "$cache/${name}_${version//:/%3a}_i386.deb" "$tree"
done

# The loader named in the programs' PT_INTERP, then the DT_NEEDED closure.
# All libraries go to /lib, which the i386 loader searches without an
# ld.so.cache.
interp=$(readelf -l "$tree/${programs[0]}" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
[ "$interp" = /lib/ld-linux.so.2 ] || missing "unexpected program interpreter '$interp' in ${programs[0]}"
mkdir -p "$stage/lib" "$stage/usr/bin"
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
echo "bench-initrd: rt-tests $(apt-cache policy rt-tests:i386 | sed -n 's/^ *Candidate: //p'):" \
	"${programs[*]##*/} with $(ls "$stage/lib" | tr '\n' ' ')"
