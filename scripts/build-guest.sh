#!/usr/bin/env bash
# Build the guest kernel: Debian's linux-source 6.1 tarball + guest/patches/series
# + config fragments, for i386, out of the repository tree.
#
#   build-guest.sh [--stock] OUTDIR JOBS [FRAGMENT...]   -> OUTDIR/bzImage (tree in OUTDIR/linux)
#
# --stock: the pristine tarball without the series, configured with the
# fragments less the options the series adds (scripts/stock-fragment.sh):
# the stock kernel that make compare measures the VMI kernel against
# natively, in build/guest-stock.
#
# The fragments (default: guest/config/vmi-hv.config) are merged in order on
# top of tinyconfig; a later one overrides an earlier one option by option,
# so a second configuration holds only its differences (make test-configs:
# vmi-hv.config + alt-preempt-hz1000.config into build/guest-alt).
#
# The tree is unpacked and patched afresh whenever the series or a patch
# changes (a stamp records their hash); otherwise the build is incremental.
set -euo pipefail

tag=guest
stock=0
if [ "${1:-}" = --stock ]; then
	stock=1 tag=guest-stock
	shift
fi
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/kernel-tree.sh"
kernel_args "$@"
mkdir -p "$out"

# The patches applied, in order: the series, or none for the stock kernel.
series_patches() {
	[ $stock -eq 1 ] && return 0
	{ grep -v -e '^#' -e '^[[:space:]]*$' "$patches/series" || true; }
}

if [ $stock -eq 1 ]; then
	# One fragment: the given ones merged, less the series' own options.
	"$top/scripts/stock-fragment.sh" "$patches" "${fragments[@]}" > "$out/stock.config.new"
	if cmp -s "$out/stock.config.new" "$out/stock.config"; then
		rm "$out/stock.config.new"
	else
		mv "$out/stock.config.new" "$out/stock.config"
	fi
	fragments=("$out/stock.config")
fi

# What the unpacked tree depends on: the tarball and every patch in order.
series_hash() {
	{
		stat -c '%n %s %Y' "$tarball"
		series_patches | while read -r p; do
			[ -f "$patches/$p" ] || die "series names $p, which does not exist"
			echo "$p"; cat "$patches/$p"
		done
	} | sha256sum | cut -d' ' -f1
}
want=$(series_hash)

if [ ! -f "$out/tree.stamp" ] || [ "$(cat "$out/tree.stamp")" != "$want" ]; then
	say "unpacking $(basename "$tarball") (about 20 s)"
	rm -rf "$tree" "$tree.tmp" "$out/tree.stamp"
	mkdir -p "$tree.tmp"
	tar -xf "$tarball" -C "$tree.tmp" --strip-components=1
	n=0
	while read -r p; do
		say "applying $p"
		patch -d "$tree.tmp" -p1 --batch --forward --quiet < "$patches/$p" ||
			die "patch $p does not apply to $(basename "$tarball")"
		n=$((n + 1))
	done < <(series_patches)
	say "applied $n patch(es)"
	mv "$tree.tmp" "$tree"
	echo "$want" > "$out/tree.stamp"
fi

# Configure whenever a fragment is newer than the config (or there is none),
# or the list of fragments changed (a stamp records it).
want_frags=$(printf '%s\n' "${fragments[@]}")
stale=0
[ -f "$tree/.config" ] || stale=1
[ "$out/tree.stamp" -nt "$tree/.config" ] && stale=1
[ "$(cat "$out/fragments.stamp" 2>/dev/null)" = "$want_frags" ] || stale=1
for f in "${fragments[@]}"; do
	[ "$f" -nt "$tree/.config" ] && stale=1
done
if [ $stale -eq 1 ]; then
	say "configuring: tinyconfig + $(for f in "${fragments[@]}"; do basename "$f"; done | paste -sd+)"
	kernel_configure "$tree" "${fragments[@]}"
	# Every option the fragments set must have survived, as the last
	# fragment to mention it says: a silently dropped option means a kernel
	# different from the one we think we test.
	bad=0
	while read -r line; do
		case "$line" in
		CONFIG_*=*) grep -qxF "$line" "$tree/.config" || { echo "guest: config: $line did not stick" >&2; bad=1; } ;;
		"# CONFIG_"*" is not set")
			opt=${line#\# }; opt=${opt%% *}
			grep -q "^$opt=" "$tree/.config" && { echo "guest: config: $opt is still set" >&2; bad=1; } ;;
		esac
	done < <(awk '
		/^CONFIG_[A-Za-z0-9_]+=/ { o = $0; sub(/=.*/, "", o) }
		/^# CONFIG_[A-Za-z0-9_]+ is not set$/ { o = $2 }
		o != "" { if (!(o in last)) order[n++] = o; last[o] = $0; o = "" }
		END { for (i = 0; i < n; i++) print last[order[i]] }' "${fragments[@]}")
	[ $bad -eq 0 ] || die "the config fragments do not apply cleanly"
	echo "$want_frags" > "$out/fragments.stamp"
fi

# Progress: on a terminal, one line rewritten in place at most once a
# second, with the step count (and a percentage against the previous build's
# count, kept in $out/build.steps) and the elapsed time; compiler errors and
# warnings go through as they come.  Not on a terminal (CI, logs): quiet
# until the result.
progress() {
	local tty=0 n=0 last=-1 total line pct
	[ -t 1 ] && tty=1
	total=$(cat "$out/build.steps" 2>/dev/null || echo 0)
	while IFS= read -r line; do
		case "$line" in
		*error:*|*warning:*)
			[ $tty -eq 1 ] && printf '\r\033[K'
			printf '%s\n' "$line" ;;
		"  "[A-Z]*) n=$((n + 1)) ;;
		esac
		if [ $tty -eq 1 ] && [ $SECONDS -ne $last ]; then
			last=$SECONDS
			pct=""
			[ "$total" -gt 0 ] && pct=" (~$((n * 100 / total > 99 ? 99 : n * 100 / total))%)"
			printf '\rguest: %d build steps%s, %dm%02ds' $n "$pct" $((SECONDS / 60)) $((SECONDS % 60))
		fi
	done
	[ $tty -eq 1 ] && printf '\r\033[K'
	# Only a full build's count is a useful 100% for the next one.
	[ "$n" -gt "$total" ] && echo "$n" > "$out/build.steps"
	return 0
}

say "building bzImage with -j$jobs (a cold build takes a few minutes)"
SECONDS=0
set +o pipefail
make -C "$tree" ARCH=i386 -j"$jobs" bzImage 2>&1 | progress
status=${PIPESTATUS[0]}
set -o pipefail
[ "$status" -eq 0 ] || die "kernel build failed (run make -C $tree ARCH=i386 bzImage to see why)"
cp "$tree/arch/x86/boot/bzImage" "$out/bzImage"
# The symbols for gdb (scripts/gdb/vmi-hv.gdb), next to the image they belong to.
cp "$tree/vmlinux" "$out/vmlinux"
say "built $out/bzImage ($(stat -c %s "$out/bzImage") bytes, ${SECONDS}s)"
