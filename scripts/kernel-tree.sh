# Sourced by scripts/build-guest.sh and scripts/check-series.sh, after they
# set $tag (their message prefix) and $top (the repository): their
# arguments, Debian's linux-source tarball, the config fragments, and
# configuring a tree from them.

say() { echo "$tag: $*"; }
die() { echo "$tag: error: $*" >&2; exit 1; }

# OUT [JOBS] [FRAGMENT...]: out, jobs, tree (OUT/linux), patches,
# tarball, fragments.
kernel_args() {
	out=$(realpath -m "$1")
	jobs=${2:-2}
	shift 2 || shift $#
	tree=$out/linux
	patches=$top/guest/patches
	tarball=$(kernel_tarball)
	[ -n "$tarball" ] || die "no /usr/src/linux-source-6.1.tar.* (run 'make deps')"
	kernel_fragments "$@"
}

# The tarball that `apt-get install linux-source-6.1` installs, or "".
kernel_tarball() {
	ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n 1 || true
}

# fragments=(absolute paths of "$@"), guest/config/vmi-hv.config if none.
kernel_fragments() {
	local f
	[ $# -gt 0 ] || set -- "$top/guest/config/vmi-hv.config"
	fragments=()
	for f in "$@"; do
		[ -f "$f" ] || die "no config fragment $f"
		fragments+=("$(realpath "$f")")
	done
}

# tinyconfig, then the fragments merged in order, then olddefconfig: an
# option the tree does not know is dropped.
kernel_configure() {
	local tree=$1
	shift
	make -s -C "$tree" ARCH=i386 tinyconfig >/dev/null
	"$tree/scripts/kconfig/merge_config.sh" -m -O "$tree" "$tree/.config" "$@" >/dev/null
	make -s -C "$tree" ARCH=i386 olddefconfig >/dev/null
}
