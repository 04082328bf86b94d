"""Boot time against a base revision (docs/COMPARE.md: one guest must not boot
more than 5% slower than before the scheduler and the tickless timer).

The hypervisor of the base revision (VMIHV_BASE_REV, default HEAD~1, the
previous commit) is built beside this one (tests/lib/base_build.py); both
boot the same bzImage, initrd and command line, alternately, REPS times
each, and the medians of QEMU start to the init marker are compared.  A
benchmark: it prints the figures and the target, and fails only when a
boot fails, never on the time (a noisy machine must not decide)."""

import os
import statistics

from vmitest import paths, test
from hvguest import GUEST_FATAL, MARKER, hv_modules
import base_build

REPS = int(os.environ.get("VMIHV_BOOT_REPS", "4"))
BASE_REV = os.environ.get("VMIHV_BASE_REV", "HEAD~1")
CMDLINE = "console=ttyS0,115200"


def boot_seconds(t, elf):
    """QEMU start to the init marker, one guest under the hypervisor elf."""
    module = hv_modules(CMDLINE)
    q = t.qemu("-m", "256", "-kernel", elf, "-initrd", module, fatal=GUEST_FATAL)
    m = q.expect(MARKER, timeout=300)
    t.check(m.group(3) == "vmi", f"{elf}: guest reports mode {m.group(3)}")
    secs = q.elapsed()
    q.kill()
    return secs


def spread(xs):
    return f"median {statistics.median(xs):.2f}s (min {min(xs):.2f}, max {max(xs):.2f})"


@test("hv-boot-vs-base", bench=True)
def hv_boot_vs_base(t):
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    try:
        sha, base_elf = base_build.build_hv(BASE_REV)
    except base_build.BaseUnavailable as e:
        t.skip(f"no base hypervisor to compare with: {e}")
    head = base_build.resolve("HEAD")
    if sha == head and not base_build.git("status", "--porcelain", "--", "hv", "vrom"):
        t.note(f"base {BASE_REV} is this very commit, {sha[:12]}: comparing it with itself")
    base, this = [], []
    for _ in range(REPS):
        base.append(boot_seconds(t, base_elf))
        this.append(boot_seconds(t, paths.HV_ELF))
    ratio = statistics.median(this) / statistics.median(base)
    t.note(f"one guest, QEMU start to init marker, {REPS} boots each, alternating (TCG):")
    t.note(f"  base {BASE_REV} ({sha[:12]}): {spread(base)}")
    t.note(f"  this tree:               {spread(this)}")
    t.note(f"  ratio {ratio:.3f} (target <= 1.05)")
