#!/usr/bin/env bash
# Assemble vmi-hv.iso with grub-mkrescue from iso/grub.cfg and the built files.
#
#   build-iso.sh ISO BZIMAGE INITRD [HV_ELF]
# HV_ELF is included when it exists (the hypervisor entry boots it).
set -euo pipefail

iso=$1 bzimage=$2 initrd=$3 hv=${4:-}
top=$(cd "$(dirname "$0")/.." && pwd)
inputs=("$top/iso/grub.cfg" "$bzimage" "$initrd" "$0")
[ -n "$hv" ] && [ -f "$hv" ] && inputs+=("$hv")

for f in "$bzimage" "$initrd"; do
	[ -s "$f" ] || { echo "iso: error: missing $f" >&2; exit 1; }
done

# Up to date when the ISO is newer than every input.
if [ -f "$iso" ]; then
	stale=0
	for f in "${inputs[@]}"; do [ "$f" -nt "$iso" ] && stale=1; done
	[ $stale -eq 0 ] && exit 0
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/boot/grub"
cp "$top/iso/grub.cfg" "$stage/boot/grub/grub.cfg"
cp "$bzimage" "$stage/boot/bzImage"
cp "$initrd" "$stage/boot/initrd.img"
[ -n "$hv" ] && [ -f "$hv" ] && cp "$hv" "$stage/boot/vmi-hv.elf"

grub-mkrescue -o "$iso.tmp" "$stage" >"$stage.log" 2>&1 ||
	{ cat "$stage.log" >&2; rm -f "$stage.log"; echo "iso: error: grub-mkrescue failed" >&2; exit 1; }
rm -f "$stage.log"
mv "$iso.tmp" "$iso"
echo "iso: built $iso ($(stat -c %s "$iso") bytes)"
