#!/usr/bin/env python3
"""make compare: the same bzImage, benchmark initrd and kernel command line,
natively and under vmi-hv, side by side (docs/COMPARE.md).

    tests/compare.py [--reps N] [--ms MS] [--scale N] [--out DIR] [--before CSV] [--icount]

Also boots the stock kernel (build/guest-stock) natively, interleaved with
the others.  Prints the ratio table vmi-hv vs native, the table "VMI kernel
natively vs stock kernel", and the vmi-hv ratios of a previous run's
compare.csv (--before) beside this run's; writes DIR/compare.txt,
compare.csv, compare-runs.csv, compare-boot.csv, native-overhead.csv and
compare.svg (default build/compare).  --icount: QEMU -icount, so every
figure counts guest instructions instead of time (build/compare-icount).
"""

import argparse
import csv
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import compare_run  # noqa: E402
from vmitest import TestFailure, paths  # noqa: E402


# The vmi-hv ratios before the pv call sites called the ROM directly
# (docs/GUEST.md, "How calls reach the ROM"): compare.csv of `make compare`
# at the commit before, 5 boots each.
BEFORE = os.path.join(paths.ROOT, "docs", "compare", "before-direct-sites.csv")


def before_after(before_csv, rows):
    """The vmi-hv / native ratio of each test in before_csv and now."""
    with open(before_csv, newline="") as f:
        before = {r["test"]: r for r in csv.DictReader(f)}
    ratio = lambda v: f"{float(v):.2f}x" if v not in (None, "", "None") else "-"
    out = [f"vmi-hv / native ratios before ({os.path.relpath(before_csv)}) and after", "",
           f"{'test':<16}{'before':>8}{'after':>8}", "-" * 32]
    for r in rows:
        b = before.get(r["test"], {}).get("ratio")
        out.append(f"{r['test']:<16}{ratio(b):>8}{ratio(r['ratio']):>8}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5, help="boots per mode (default 5)")
    ap.add_argument("--ms", type=int, default=300, help="time per micro test in ms (default 300)")
    ap.add_argument("--scale", type=int, default=4, help="size of the macro workloads (default 4)")
    ap.add_argument("--out", help="output directory (default build/compare, build/compare-icount with --icount)")
    ap.add_argument("--icount", action="store_true",
                    help="QEMU -icount: every figure counts guest instructions (1 ns each), not time, so host "
                         "load cannot move it (docs/COMPARE.md, \"Instructions, not time\")")
    ap.add_argument("--before", default=BEFORE,
                    help="a previous run's compare.csv whose vmi-hv ratios to show beside this run's "
                         "(default docs/compare/before-direct-sites.csv)")
    args = ap.parse_args()
    if args.reps < 1 or args.ms < 1 or args.scale < 1:
        ap.error("--reps, --ms and --scale must be positive")

    if args.out is None:
        args.out = os.path.join(paths.BUILD, "compare-icount" if args.icount else "compare")

    started = time.monotonic()
    try:
        result = compare_run.run(args.out, args.reps, args.ms, args.scale,
                                 log=lambda s: print(s, flush=True), icount=args.icount)
    except (TestFailure, FileNotFoundError, RuntimeError) as e:
        print(f"compare: error: {e}", file=sys.stderr)
        return 1
    print()
    print("\n".join(result["table"]))
    print()
    print("\n".join(result["native_table"]))
    print()
    if args.before and os.path.isfile(args.before):
        lines = before_after(args.before, result["rows"])
        print("\n".join(lines))
        with open(os.path.join(args.out, "before-after.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
        print()
    for what, path in result["paths"].items():
        print(f"compare: {what}: {os.path.relpath(path)}")
    print(f"compare: took {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
