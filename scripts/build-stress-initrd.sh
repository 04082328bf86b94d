#!/usr/bin/env bash
# Build the initramfs of `make stress`: the normal initrd (busybox, init,
# ptstress and the other test programs) followed by a second gzip'd cpio
# archive holding Debian's i386 stress-ng with its libraries.  The kernel
# unpacks concatenated archives one after the other, so the stress image
# is the normal one plus stress-ng, without a second copy of its recipe;
# it is apart so that the normal initrd stays small.
#
#   build-stress-initrd.sh OUTDIR   (needs OUTDIR/initrd.img)
#                                   -> OUTDIR/stress-initrd.img
#
# Without the .debs (no network, no i386 in dpkg) the image holds
# tests/stress-ng.missing with the reason instead, and make stress says it.
set -euo pipefail

out=$(realpath -m "$1")
top=$(cd "$(dirname "$0")/.." && pwd)
stage=$out/stress-initramfs

[ -f "$out/initrd.img" ] || { echo "stress-initrd: error: $out/initrd.img is missing (make initrd)" >&2; exit 1; }

rm -rf "$stage"
mkdir -p "$stage"
# stress-ng's whole DT_NEEDED closure (it links EGL, GBM, kmod, AppArmor,
# SCTP, ...), found with readelf -d on the unpacked packages.
"$top/scripts/deb-i386-programs.sh" "$stage" "$out/stress-debs" tests/stress-ng.missing \
	stress-ng:i386 libc6:i386 libapparmor1:i386 libbsd0:i386 libmd0:i386 libcrypt1:i386 \
	libegl1:i386 libgles2:i386 libglvnd0:i386 libgbm1:i386 libdrm2:i386 \
	libwayland-server0:i386 libffi8:i386 libexpat1:i386 libjpeg62-turbo:i386 \
	libjudydebian1:i386 libkmod2:i386 liblzma5:i386 libzstd1:i386 libssl3:i386 \
	libsctp1:i386 libxxhash0:i386 zlib1g:i386 -- usr/bin/stress-ng

(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) |
	gzip -9 | cat "$out/initrd.img" - > "$out/stress-initrd.img.tmp"
mv "$out/stress-initrd.img.tmp" "$out/stress-initrd.img"
echo "stress-initrd: built $out/stress-initrd.img ($(stat -c %s "$out/stress-initrd.img") bytes)"
