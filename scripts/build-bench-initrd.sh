#!/usr/bin/env bash
# Build the benchmark initramfs of `make compare`: the normal initramfs's
# base (static i386 busybox, guest/initramfs/init), the benchmark programs
# of guest/programs/bench/ and Debian's i386 hackbench and cyclictest with
# their libraries.  A separate image, so that the normal initrd stays small;
# `make compare` boots it natively and under vmi-hv alike.
#
#   build-bench-initrd.sh OUTDIR   -> OUTDIR/bench-initrd.img (gzip'd newc cpio)
#
# /tests/compare is what init runs for vmitest=compare.
set -euo pipefail

out=$(realpath -m "$1")
top=$(cd "$(dirname "$0")/.." && pwd)
src=$top/guest/programs/bench
busybox=/bin/busybox
stage=$out/bench-initramfs
cflags=(-m32 -static -O2 -Wall -Wextra -Werror)

die() { echo "bench-initrd: error: $*" >&2; exit 1; }

file -L "$busybox" 2>/dev/null | grep -q 'ELF 32-bit.*Intel 80386.*statically linked' ||
	die "$busybox is not Debian's static i386 busybox (run 'make deps': busybox-static:i386)"

rm -rf "$stage"
mkdir -p "$stage"/{bin,dev,proc,sys,tmp,tests,etc,bench}
cp "$busybox" "$stage/bin/busybox"
install -m 0755 "$top/guest/initramfs/init" "$stage/init"
echo 'PS1="vmi-guest# "' > "$stage/etc/profile"

gcc "${cflags[@]}" -o "$stage/tests/microbench" "$src/microbench.c" ||
	die "cannot build microbench"
# No libc: exec of the smallest static program (one loadable segment).
gcc "${cflags[@]}" -nostdlib -Os -Wl,-z,noseparate-code -o "$stage/tests/nop" "$src/nop.c" ||
	die "cannot build nop"
install -m 0755 "$src/compare.sh" "$stage/tests/compare"
install -m 0755 "$src/loop.sh" "$stage/bench/loop.sh"

# hackbench and cyclictest; without them microbench reports the reason
# in bench/rt-tests.missing.
"$top/scripts/deb-i386-programs.sh" "$stage" "$out/bench-debs" bench/rt-tests.missing \
	rt-tests:i386 libc6:i386 libnuma1:i386 -- usr/bin/hackbench usr/bin/cyclictest

(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) |
	gzip -9 > "$out/bench-initrd.img.tmp"
mv "$out/bench-initrd.img.tmp" "$out/bench-initrd.img"
echo "bench-initrd: built $out/bench-initrd.img ($(stat -c %s "$out/bench-initrd.img") bytes)"
