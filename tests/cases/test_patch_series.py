"""The guest patch series is checkpatch-clean: no errors in any patch
(warnings, e.g. long lines in the generated ABI header, are allowed); and
make check-series's boot check (tests/series_boot.py) tells an activating
kernel from a dormant one."""

import os
import re
import subprocess
import sys

from vmitest import paths, test

TREE = os.path.join(paths.BUILD, "guest", "linux")
PATCHES = os.path.join(paths.ROOT, "guest", "patches")
# Seconds per patch; the largest takes a few.  A hung checkpatch (perl
# waiting on something) fails the test instead of stopping the run.
CHECKPATCH_TIMEOUT = 120


@test("guest-patches-checkpatch")
def guest_patches_checkpatch(t):
    checkpatch = os.path.join(TREE, "scripts", "checkpatch.pl")
    t.require(checkpatch)
    with open(os.path.join(PATCHES, "series")) as f:
        series = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    t.check(series, "the series is empty")
    bad = []
    for name in series:
        # Run inside the kernel tree: checkpatch then reads the file as a patch.
        try:
            r = subprocess.run(["perl", checkpatch, "--no-tree",
                                os.path.join(PATCHES, name)],
                               cwd=TREE, capture_output=True, text=True,
                               timeout=CHECKPATCH_TIMEOUT)
        except subprocess.TimeoutExpired:
            bad.append(f"{name}: checkpatch did not finish in {CHECKPATCH_TIMEOUT}s")
            continue
        m = re.search(r"total: (\d+) errors, (\d+) warnings", r.stdout)
        if not m:
            bad.append(f"{name}: no checkpatch summary ({r.stdout[-200:]!r})")
        elif m.group(1) != "0":
            errors = [l for l in r.stdout.splitlines() if l.startswith("ERROR:")]
            bad.append(f"{name}: {m.group(1)} errors: {errors[:3]}")
    t.check(not bad, "; ".join(bad))
    t.note(f"{len(series)} patches, no checkpatch errors")


SERIES_BOOT = os.path.join(paths.ROOT, "tests", "series_boot.py")


@test("check-series-boot-verdicts")
def check_series_boot_verdicts(t):
    """tests/series_boot.py on the whole series' bzImage: as the last
    prefix ("active") it passes, paravirtual to the shell under the audit;
    taken for an earlier prefix ("dormant") it must fail, naming the
    activation, as it would for a prefix that activated VMI before every
    page-table write reached the ROM (docs/GUEST.md, "The patches")."""
    t.require(paths.BZIMAGE, paths.INITRD, paths.HV_ELF)
    runs = {}
    for expect in ("active", "dormant"):
        r = subprocess.run([sys.executable, SERIES_BOOT, paths.BZIMAGE, os.path.join(t.tmpdir, expect), expect],
                           capture_output=True, text=True, timeout=900)
        runs[expect] = r
        t.note(f"{expect}: exit {r.returncode}: {r.stdout.strip()}")
    t.check(runs["active"].returncode == 0 and "paravirtual to its shell" in runs["active"].stdout,
            f"the whole series as the last prefix: {runs['active'].stdout.strip()} {runs['active'].stderr.strip()}")
    t.check(runs["dormant"].returncode == 1 and "VMI: paravirtual mode" in runs["dormant"].stdout,
            f"the whole series taken for an earlier prefix was not caught activating: "
            f"{runs['dormant'].stdout.strip()} {runs['dormant'].stderr.strip()}")
