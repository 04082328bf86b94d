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

# A mirror caught mid-sync fails one index's size or hash check ("Mirror
# sync in progress?") and apt-get update exits 100, although the other
# indexes (often all the ones we need) arrived.  Retry a few times; if one
# index still fails, name it and go on: the install below is the real test.
update_log=$(mktemp)
trap 'rm -f "$update_log"' EXIT
updated=0
for attempt in 1 2 3; do
	if apt-get update -qq >"$update_log" 2>&1; then
		updated=1
		break
	fi
	echo "deps: apt-get update failed (attempt $attempt of 3)" >&2
	[ "$attempt" -lt 3 ] && sleep $((attempt * 10))
done
if [ "$updated" -eq 0 ]; then
	echo "deps: warning: these package indexes failed to download; going on with the ones that did:" >&2
	grep -E '^(E|W): Failed to fetch' "$update_log" | sed 's/^/deps:   /' >&2 ||
		sed 's/^/deps:   /' "$update_log" >&2
fi
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
	echo "deps: error: could not install: ${missing[*]}" >&2
	[ "$updated" -eq 1 ] || echo "deps: (apt-get update had failed; see the indexes named above)" >&2
	exit 1
fi
