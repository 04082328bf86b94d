#!/bin/bash
# Does every prefix of the guest patch series build?  (make check-series)
#
# Unpacks Debian's linux-source tarball into OUT/linux, then applies the
# patches of guest/patches/series one at a time; after each one it
# configures the tree again (tinyconfig + the config fragments: an option
# the series has not introduced yet is simply dropped by olddefconfig) and
# builds bzImage incrementally.  The first patch that does not apply or
# does not build stops the run, with the tail of the build log.
#
# usage: scripts/check-series.sh OUT [JOBS] [FRAGMENT...]
# Each build after the first recompiles what the patch touched; a patch to
# a widely included header costs nearly a full build.  Not part of make
# test: on 2 cores the whole run takes the better part of an hour.
set -euo pipefail

tag=series
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/kernel-tree.sh"
kernel_args "$@"
mapfile -t series < <(grep -v -e '^#' -e '^[[:space:]]*$' "$patches/series")
[ ${#series[@]} -gt 0 ] || die "guest/patches/series names no patch"

build() {
	local what=$1 log=$out/build.log start=$SECONDS
	if ! make -C "$tree" ARCH=i386 -j"$jobs" bzImage >"$log" 2>&1; then
		grep -E 'error|Error' "$log" | head -n 20 >&2 || tail -n 20 "$log" >&2
		die "$what does not build (log: $log)"
	fi
	say "$what builds ($((SECONDS - start)) s, $(grep -c ' warning: ' "$log" || true) compiler warnings)"
}

say "unpacking $(basename "$tarball")"
rm -rf "$tree"
mkdir -p "$tree"
tar -xf "$tarball" -C "$tree" --strip-components=1
kernel_configure "$tree" "${fragments[@]}"
build "the tarball without patches"

n=0
for p in "${series[@]}"; do
	n=$((n + 1))
	patch -d "$tree" -p1 --batch --forward --quiet < "$patches/$p" ||
		die "patch $n ($p) does not apply on the ones before it"
	kernel_configure "$tree" "${fragments[@]}"
	build "patch $n/${#series[@]} ($p)"
done
vmi=$(grep -c '^CONFIG_X86_VMI=y' "$tree/.config" || true)
say "all ${#series[@]} patches build one after another; the last with CONFIG_X86_VMI=y: $([ "$vmi" -eq 1 ] && echo yes || echo no)"
