#!/usr/bin/env python3
"""make stress: the guest's page tables under load, under vmi-hv with the
continuous shadow audit on (issue 17; docs/HV.md, "Continuous audit").

    tests/stress.py [--audit every=1] [--workers 1,4] [--rounds 8] [--out DIR]

Boots the guest under vmi-hv with audit=AUDIT and, at its shell, runs
guest/programs/ptstress with each number of workers in turn (that many
copies at once).  For each run, from the hypervisor's statistics (Ctrl-] s)
before and after: the page-table operations by kind, the audits run, the
entries checked, the mismatches, and the shadow pages at the baseline (the
peak is restarted there with Ctrl-] r), at the peak and at the end.
Exit status 1 on a mismatch, a guest stop, a ptstress failure or shadow
pages that do not come back to the baseline.  The serial log is
DIR/stress-serial.log (default build/stress).
"""

import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from hvguest import GUEST_FATAL, MARKER, PROMPT, SERIAL_CMDLINE  # noqa: E402
from vmitest import Qemu, TestFailure, paths  # noqa: E402

# Page-table notifications by VMI call name, as "VMI calls:" prints them.
PT_CALLS = ["AllocatePage", "ReleasePage", "SetPxE", "SwapPxE", "TestAndSetPxEBit",
            "TestAndClearPxEBit", "InvalPage"]
AUDIT = re.compile(r"vmi-hv: continuous audit \(([^)]+)\): (\d+) audits, (\d+) entries checked, "
                   r"(\d+) mismatches, (\d+) entries not filled yet")


def statistics(q):
    """Ctrl-] s at the shell: the counters stress needs, as a dict."""
    q.send("\x1ds")
    q.expect(r"vmi-hv: statistics \(guest running, hypervisor up \d+ ms, \d+ timer interrupts\):", timeout=60)
    start = q.cursor
    q.expect(r"vmi-hv: virtual interrupts:[^\n]*\n", timeout=60)
    block = q.output[start:q.cursor]
    q.send("\n")
    q.expect(PROMPT, timeout=60)

    calls = dict(re.findall(r" (\w+)=(\d+)", re.search(r"vmi-hv: VMI calls:([^\n]*)", block).group(1)))
    s = {name: int(calls.get(name, 0)) for name in PT_CALLS}
    s["queued"] = int(re.search(r"without an exit: (\d+) queued entries", block).group(1))
    m = re.search(r"vmi-hv: shadow pages in use: (\d+) \(\d+ page directories; peak (\d+)\)", block)
    s["pages"], s["peak"] = int(m.group(1)), int(m.group(2))
    a = AUDIT.search(block)
    if not a:
        raise TestFailure("no continuous audit counters in the statistics: is audit= off?")
    s["mode"] = a.group(1)
    s["audits"], s["entries"], s["mismatches"], s["unfilled"] = (int(a.group(i)) for i in range(2, 6))
    return s


def run_workers(q, workers, rounds):
    """ptstress x workers at once; the statistics around it and the PASS count."""
    before = statistics(q)
    q.send("\x1dr")
    m = q.expect(r"vmi-hv: peaks reset: shadow pages in use (\d+),[^\n]*\n", timeout=30)
    baseline = int(m.group(1))
    q.send("\n")
    q.expect(PROMPT, timeout=60)
    started = time.monotonic()
    mark = q.cursor
    q.send(f"i=0; while [ $i -lt {workers} ]; do /tests/ptstress {rounds} > /tmp/ptstress.$i 2>&1 & "
           f"i=$((i+1)); done; wait; cat /tmp/ptstress.*; rm -f /tmp/ptstress.*; echo stress-done\n")
    q.expect(r"\nstress-done", timeout=600 * workers)
    seconds = time.monotonic() - started
    out = q.output[mark:q.cursor]
    q.expect(PROMPT, timeout=60)
    after = statistics(q)
    return before, after, baseline, seconds, len(re.findall(r"PTSTRESS result=PASS", out))


def report(workers, rounds, before, after, baseline, seconds, passed):
    """One block of the table; returns the problems found."""
    d = {k: after[k] - before[k] for k in PT_CALLS + ["queued", "audits", "entries", "mismatches", "unfilled"]}
    ops = " ".join(f"{k}={d[k]}" for k in PT_CALLS + ["queued"])
    print(f"ptstress x{workers} ({rounds} rounds, {seconds:.1f} s): {passed}/{workers} PASS")
    print(f"  page-table operations: {ops} (total {sum(d[k] for k in PT_CALLS + ['queued'])})")
    print(f"  audit ({after['mode']}): {d['audits']} audits, {d['entries']} entries checked, "
          f"{d['mismatches']} mismatches, {d['unfilled']} entries not filled yet")
    print(f"  shadow pages: baseline {baseline}, peak {after['peak']}, end {after['pages']}")
    problems = []
    if passed != workers:
        problems.append(f"x{workers}: {passed} of {workers} ptstress runs passed")
    if after["mismatches"]:
        problems.append(f"x{workers}: {after['mismatches']} audit mismatches")
    if after["pages"] != baseline:
        problems.append(f"x{workers}: {after['pages']} shadow pages at the end, baseline {baseline}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--audit", default="every=1", help="the hypervisor's audit= (default every=1)")
    ap.add_argument("--workers", default="1,4", help="comma-separated worker counts (default 1,4)")
    ap.add_argument("--rounds", type=int, default=8, help="ptstress rounds per worker (default 8)")
    ap.add_argument("--out", default=os.path.join(paths.BUILD, "stress"), help="output directory")
    args = ap.parse_args()
    try:
        workers = [int(w) for w in args.workers.split(",")]
    except ValueError:
        ap.error("--workers takes counts such as 1,4")
    if args.rounds < 1 or not workers or min(workers) < 1 or args.audit == "off":
        ap.error("--rounds and the worker counts must be positive, and the audit on")
    for f in (paths.HV_ELF, paths.BZIMAGE, paths.INITRD):
        if not os.path.exists(f):
            print(f"stress: error: {f} is missing: run 'make hv guest initrd'", file=sys.stderr)
            return 1
    os.makedirs(args.out, exist_ok=True)

    module = f"{paths.BZIMAGE} {SERIAL_CMDLINE.replace(',', ',,')},{paths.INITRD}"
    log = os.path.join(args.out, "stress-serial.log")
    q = Qemu(["-m", "256", "-kernel", paths.HV_ELF, "-initrd", module, "-append", f"audit={args.audit}"],
             log, fatal=GUEST_FATAL)
    problems = []
    try:
        q.expect(MARKER, timeout=300)
        q.expect(PROMPT, timeout=120)
        q.send("sleep 1; echo settled\n")
        q.expect(r"\nsettled", timeout=60)
        q.expect(PROMPT, timeout=60)
        print(f"vmi-hv with audit={args.audit}; serial log {log}")
        for w in workers:
            problems += report(w, args.rounds, *run_workers(q, w, args.rounds))
        q.send("reboot -f\n")
        q.expect(r"vmi-hv: guest reboot", timeout=60)
        q.wait_exit(timeout=60)
    except TestFailure as e:
        problems.append(str(e))
    finally:
        q.kill()
    for p in problems:
        print(f"stress: FAIL: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
