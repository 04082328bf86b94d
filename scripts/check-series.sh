#!/bin/bash
# Does every prefix of the guest patch series build and boot?  (make
# check-series)
#
# Unpacks Debian's linux-source tarball into OUT/linux, then applies the
# patches of guest/patches/series one at a time; after each one it
# configures the tree again (tinyconfig + the config fragments: an option
# the series has not introduced yet is simply dropped by olddefconfig;
# before the patch that allows X86_VMI on SMP, SMP is turned off so that
# the prefix is a VMI kernel at all), builds bzImage incrementally and
# boots it natively and under vmi-hv (tests/series_boot.py): natively
# every prefix reaches its shell; under vmi-hv only the whole series may
# activate VMI, every earlier prefix must stay native and be stopped as a
# native kernel is.  The first patch that does not apply, build or boot
# as it must stops the run, with the tail of the build log or the boot's
# reason.
#
# usage: [SERIES_FROM=N] scripts/check-series.sh OUT [JOBS] [FRAGMENT...]
# SERIES_FROM=N (make check-series FROM=N): apply patches 1 to N-1 without
# building or booting them and start with patch N (a full build), to check
# the end of the series again without the hour the whole run takes.
# Each build after the first recompiles what the patch touched; a patch to
# a widely included header costs nearly a full build.  Not part of make
# test: on 2 cores the whole run takes well over an hour.
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

# A fragment turning SMP off, for the prefixes whose X86_VMI needs !SMP
up_fragment=$out/up.config
mkdir -p "$out"
echo "# CONFIG_SMP is not set" >"$up_fragment"

# The fragments, and SMP off when the tree knows X86_VMI but the
# fragments' SMP dropped it: what the configuration was, in words.
configure() {
	kernel_configure "$tree" "${fragments[@]}"
	if grep -q '^config X86_VMI$' "$tree/arch/x86/Kconfig" &&
	   ! grep -q '^CONFIG_X86_VMI=y' "$tree/.config"; then
		kernel_configure "$tree" "${fragments[@]}" "$up_fragment"
		config_said="X86_VMI, SMP off"
	elif grep -q '^CONFIG_X86_VMI=y' "$tree/.config"; then
		config_said="X86_VMI"
	else
		config_said="no X86_VMI"
	fi
}

# WHAT LOGNAME active|dormant: the prefix built, natively and under vmi-hv
boot() {
	local what=$1 logs=$out/boots/$2 expect=$3 said
	if ! said=$(python3 "$top/tests/series_boot.py" "$tree/arch/x86/boot/bzImage" "$logs" "$expect"); then
		echo "$said" >&2
		die "$what does not boot as it must ($expect)"
	fi
	say "${said#series-boot: }"
}

from=${SERIES_FROM:-0}
case $from in
''|*[!0-9]*) die "SERIES_FROM=$from: not a patch number" ;;
esac
[ "$from" -le ${#series[@]} ] || die "SERIES_FROM=$from: the series has ${#series[@]} patches"

say "unpacking $(basename "$tarball")"
rm -rf "$tree"
mkdir -p "$tree"
tar -xf "$tarball" -C "$tree" --strip-components=1
if [ "$from" -le 1 ]; then
	configure
	build "the tarball without patches ($config_said)"
	boot "the tarball without patches" 00-tarball dormant
fi

n=0
for p in "${series[@]}"; do
	n=$((n + 1))
	patch -d "$tree" -p1 --batch --forward --quiet < "$patches/$p" ||
		die "patch $n ($p) does not apply on the ones before it"
	[ "$n" -ge "$from" ] || continue
	configure
	build "patch $n/${#series[@]} ($p, $config_said)"
	expect=dormant
	[ "$n" -lt ${#series[@]} ] || expect=active
	boot "patch $n/${#series[@]}" "$(printf %02d "$n")" "$expect"
done
vmi=$(grep -c '^CONFIG_X86_VMI=y' "$tree/.config" || true)
first=$((from > 1 ? from : 1))
say "patches $first-${#series[@]} of ${#series[@]} build and boot one after another; only the last activates VMI; the last with CONFIG_X86_VMI=y: $([ "$vmi" -eq 1 ] && echo yes || echo no)"
