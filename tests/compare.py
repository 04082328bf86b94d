#!/usr/bin/env python3
"""make compare: the same bzImage, benchmark initrd and kernel command line,
natively and under vmi-hv, side by side (docs/COMPARE.md).

    tests/compare.py [--reps N] [--ms MS] [--scale N] [--out DIR]

Prints the ratio table; writes DIR/compare.txt, compare.csv,
compare-runs.csv, compare-boot.csv and compare.svg (default build/compare).
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import compare_run  # noqa: E402
from vmitest import TestFailure, paths  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5, help="boots per mode (default 5)")
    ap.add_argument("--ms", type=int, default=300, help="time per micro test in ms (default 300)")
    ap.add_argument("--scale", type=int, default=4, help="size of the macro workloads (default 4)")
    ap.add_argument("--out", default=os.path.join(paths.BUILD, "compare"), help="output directory")
    args = ap.parse_args()
    if args.reps < 1 or args.ms < 1 or args.scale < 1:
        ap.error("--reps, --ms and --scale must be positive")

    started = time.monotonic()
    try:
        result = compare_run.run(args.out, args.reps, args.ms, args.scale,
                                 log=lambda s: print(s, flush=True))
    except (TestFailure, FileNotFoundError, RuntimeError) as e:
        print(f"compare: error: {e}", file=sys.stderr)
        return 1
    print()
    print("\n".join(result["table"]))
    print()
    for what, path in result["paths"].items():
        print(f"compare: {what}: {os.path.relpath(path)}")
    print(f"compare: took {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
