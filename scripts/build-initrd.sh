#!/usr/bin/env bash
# Build the guest initramfs: Debian's static i386 busybox, guest/initramfs/init
# and the test programs of guest/programs/*.c (gcc -m32 -static) in /tests.
#
#   build-initrd.sh OUTDIR    -> OUTDIR/initrd.img (gzip'd newc cpio)
set -euo pipefail

out=$1
top=$(cd "$(dirname "$0")/.." && pwd)
busybox=/bin/busybox
stage=$out/initramfs

die() { echo "initrd: error: $*" >&2; exit 1; }

file -L "$busybox" 2>/dev/null | grep -q 'ELF 32-bit.*Intel 80386.*statically linked' ||
	die "$busybox is not Debian's static i386 busybox (run 'make deps': busybox-static:i386)"

rm -rf "$stage"
mkdir -p "$stage"/{bin,dev,proc,sys,tmp,tests,etc}
cp "$busybox" "$stage/bin/busybox"
install -m 0755 "$top/guest/initramfs/init" "$stage/init"
echo 'PS1="vmi-guest# "' > "$stage/etc/profile"

# -I hv/include: a program that needs a fact of the hypervisor's (its GDT
# slots, its reserved top) includes the one header that defines it.
for src in "$top"/guest/programs/*.c; do
	name=$(basename "$src" .c)
	gcc -m32 -static -O2 -Wall -Wextra -Werror -I"$top/hv/include" -o "$stage/tests/$name" "$src" ||
		die "cannot build guest program $name"
done

(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) |
	gzip -9 > "$out/initrd.img.tmp"
mv "$out/initrd.img.tmp" "$out/initrd.img"
echo "initrd: built $out/initrd.img ($(stat -c %s "$out/initrd.img") bytes, programs: $(ls "$stage/tests" | tr '\n' ' '))"
