#!/usr/bin/env bash
# Install the Debian 12 packages that building and testing vmi-hv needs.
# Idempotent: when everything is present it only checks and returns.
set -euo pipefail

packages=(
	make gcc gcc-multilib binutils nasm python3 file
	grub-pc-bin grub-common xorriso mtools
	qemu-system-x86 qemu-user gdb
	linux-source bc flex bison libelf-dev libssl-dev cpio xz-utils
	libcmocka-dev
	busybox-static:i386
	gnuplot-nox
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing packages: ${missing[*]}" >&2
	echo "deps: run 'make deps' as root (or install them with apt-get)" >&2
	exit 1
fi

echo "deps: installing ${missing[*]}"
# The guest's busybox is the i386 static build.
dpkg --print-foreign-architectures | grep -qx i386 || dpkg --add-architecture i386
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
