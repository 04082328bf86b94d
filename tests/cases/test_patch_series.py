"""The guest patch series is checkpatch-clean: no errors in any patch
(warnings, e.g. long lines in the generated ABI header, are allowed)."""

import os
import re
import subprocess

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
