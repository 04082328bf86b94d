"""The hypervisor of another git revision, built beside this one, so that a
benchmark can boot both side by side in one run (for example this commit
against the one before it).

The revision's hv/, vrom/ and tests/ trees are exported with `git archive` into
build/bench-base/<sha>/src and built with their own Makefiles into
build/bench-base/<sha>/build; the result is cached per commit."""

import os
import subprocess

from vmitest import ROOT, paths


class BaseUnavailable(Exception):
    """The base revision cannot be had (no git, shallow clone, bad name)."""


def git(*args):
    r = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise BaseUnavailable(f"git {' '.join(args)}: {r.stderr.strip() or 'failed'}")
    return r.stdout.strip()


def resolve(rev):
    """The full commit id of rev, or BaseUnavailable saying why not."""
    try:
        return git("rev-parse", "--verify", "--quiet", rev + "^{commit}")
    except FileNotFoundError:
        raise BaseUnavailable("git is not installed")
    except BaseUnavailable:
        raise BaseUnavailable(f"revision {rev!r} is not a commit in this clone "
                              "(a misspelt name, or a shallow clone without that history)")


def build_hv(rev):
    """(commit id, path of its vmi-hv.elf), building it if needed."""
    sha = resolve(rev)
    top = os.path.join(paths.BUILD, "bench-base", sha[:12])
    src, out = os.path.join(top, "src"), os.path.join(top, "build")
    elf = os.path.join(out, "hv", "vmi-hv.elf")
    if os.path.isfile(elf):
        return sha, elf
    os.makedirs(src, exist_ok=True)
    # tests/ too: hv/Makefile builds the test guest from tests/guests/.
    archive = subprocess.run(["git", "-C", ROOT, "archive", sha, "hv", "vrom", "tests"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
    inc, unit = os.path.join(out, "include"), os.path.join(out, "unit")
    for comp in ("vrom", "hv"):
        r = subprocess.run(["make", "-s", "--no-print-directory", "-C", os.path.join(src, comp),
                            f"B={os.path.join(out, comp)}", f"I={inc}", f"U={unit}",
                            f"VROM={os.path.join(out, 'vrom', 'vmi.rom')}", "all"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise BaseUnavailable(f"building {comp}/ at {sha[:12]} failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    if not os.path.isfile(elf):
        raise BaseUnavailable(f"building hv/ at {sha[:12]} made no {elf}")
    return sha, elf
