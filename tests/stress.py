#!/usr/bin/env python3
"""make stress: the guest's page tables under load, under vmi-hv with the
continuous shadow audit on (docs/MEMORY.md, "Shadow paging after activation"; docs/MEMORY.md, "Continuous audit").

    tests/stress.py [--audit every=1] [--strict] [--workers 1,4] [--rounds 8]
                    [--stressors vm,mmap,...] [--seconds 2] [--no-native]
                    [--smp N] [--vcpus N] [--out DIR]

Boots the guest under vmi-hv with audit=AUDIT (and with --strict,
strict_pt=on: a direct write to a page table stops the guest) and the
stress initramfs (the normal one plus Debian's i386 stress-ng,
scripts/build-stress-initrd.sh)
and, at its shell, runs with each number of workers in turn
guest/programs/ptstress (that many copies at once), then Debian's
stress-ng VM and page-table stressors one after another (that many
instances each, SECONDS each; tests/lib/stressng.py).  For each run, from
the hypervisor's statistics (Ctrl-] s) before and after: the page-table
operations by kind, the audits run, the entries checked, the mismatches,
and the shadow pages at the baseline (the peak is restarted there with
Ctrl-] r), at the peak and at the end (both counts taken with every CPU
settled, settle() below).  Then the same stress-ng runs
natively (QEMU -kernel bzImage, no hypervisor) and a table gives each
stressor's bogo-ops both ways.  Exit status 1 on a mismatch, a guest stop,
a ptstress or stress-ng failure or shadow pages that do not come back to
the baseline (bogo-ops are printed, never judged).  The serial logs are
DIR/stress-serial.log and DIR/stress-native.log (default build/stress).

With --vcpus N (more than 1) the guest is one SMP guest of N vCPUs that
run at once (vcpus=N vcpus_at_once=on; docs/SMP.md, "Concurrent vCPUs"),
its native twin runs on QEMU -smp N, and the run checks that the guest
counts N CPUs (nproc) and that the work spread over them: each run
prints every CPU's user+system time from /proc/stat, and a run of 2 or
more workers fails when a CPU got less than SPREAD of an even share.
"""

import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from hvguest import GUEST_FATAL, MARKER, PROMPT, SERIAL_CMDLINE, hv_modules, shell_search  # noqa: E402
from vmitest import Qemu, TestFailure, paths  # noqa: E402
import stressng  # noqa: E402
from hvstats import hv_statistics  # noqa: E402
from procstat import SYSTEM, USER, read_stat  # noqa: E402

# Page-table notifications by VMI call name, as "VMI calls:" prints them.
PT_CALLS = ["AllocatePage", "ReleasePage", "SetPxE", "SwapPxE", "TestAndSetPxEBit",
            "TestAndClearPxEBit", "InvalPage"]
# The same four updates made by the ROM without an exit and queued.
QUEUED = ["SetPxE", "SwapPxE", "TestAndSetPxEBit", "TestAndClearPxEBit"]
QUEUED_KEYS = ["queued " + k for k in QUEUED]
# A run of several workers on N vCPUs must give each CPU at least this
# fraction of an even share (1/N) of the run's user+system time: Linux's
# scheduler spreads them, and a vCPU that never ran (or never ran the
# stressors) gets none.
SPREAD = 0.25
SHOOTDOWNS = re.compile(r"vmi-hv: vCPUs at once: (\d+) shootdowns of the guest's other CPUs \((\d+) IPIs\)")
WAITS = re.compile(r"vmi-hv: vCPUs at once: waits for a CPU to leave the guest at a shootdown: (\d+) us in all, "
                   r"the longest (\d+) us")
AUDIT = re.compile(r"vmi-hv: continuous audit \(([^)]+)\): (\d+) audits, (\d+) entries checked, "
                   r"(\d+) mismatches, (\d+) entries not filled yet")


def statistics(q, at_once=False):
    """Ctrl-] s at the shell: the counters stress needs, as a dict (with
    at_once, those of vcpus_at_once's shootdowns, which must be there)."""
    stats = hv_statistics(q)
    block = stats.text
    q.send("\n")
    q.expect(PROMPT, timeout=60)
    if at_once and not WAITS.search(block):
        raise TestFailure("no vcpus_at_once shootdown waits in the statistics: is vcpus_at_once off?")

    s = {name: stats.vmi_calls.get(name, 0) for name in PT_CALLS}
    # AllocatePage and ReleasePage the ROM queued (F_PTLIFE) are operations
    # too, made without a hypercall.
    life = re.search(r"lifecycle calls queued without an exit: AllocatePage=(\d+) ReleasePage=(\d+)", block)
    if life:
        s["AllocatePage"] += int(life.group(1))
        s["ReleasePage"] += int(life.group(2))
    s["queued"] = int(re.search(r"without an exit: (\d+) queued entries", block).group(1))
    kinds = dict(re.findall(r" (\w+)=(\d+)", re.search(r"vmi-hv: queued page-table updates by call:([^\n]*)",
                                                     block).group(1)))
    s.update({"queued " + k: int(kinds[k]) for k in QUEUED})
    m = re.search(r"vmi-hv: shadow pages in use: (\d+) \(\d+ page directories; peak (\d+)\)", block)
    s["pages"], s["peak"] = int(m.group(1)), int(m.group(2))
    # vcpus_at_once: the shootdowns' IPIs and the waits for their exits.
    sd = SHOOTDOWNS.search(block)
    w = WAITS.search(block)
    s["shootdowns"], s["shootdown IPIs"] = (int(sd.group(1)), int(sd.group(2))) if sd else (0, 0)
    s["waited us"] = int(w.group(1)) if w else 0
    s["longest us"] = int(w.group(2)) if w else 0
    a = AUDIT.search(block)
    if not a:
        raise TestFailure("no continuous audit counters in the statistics: is audit= off?")
    s["mode"] = a.group(1)
    s["audits"], s["entries"], s["mismatches"], s["unfilled"] = (int(a.group(i)) for i in range(2, 6))
    return s


def cpu_times(q):
    """At the shell: each CPU's user+system time (USER_HZ ticks) from
    /proc/stat, {cpu: ticks}."""
    r = read_stat(q)
    q.expect(PROMPT, timeout=60)
    return {int(name[3:]): cols[USER] + cols[SYSTEM] for name, cols in r.stat.items()}


def settle(q, vcpus):
    """At the shell: leave every CPU holding the same kind of address space,
    so that two shadow-page counts taken after it compare.  An idle CPU
    keeps the last process's page directory loaded (Linux's lazy TLB
    mode): if that process has exited, its directory is freed (and its
    shadow released) only when the CPU next switches to a process.  Which
    CPU ran the last exiting process is chance, so a count can be one
    directory over or under another per CPU.  Here the shell is pinned to
    CPU 0, which then holds the shell's own directory, and each other
    CPU runs one short process, whose directory it then holds; the shell
    stays pinned until unsettle() (the count is read through the
    hypervisor's console, with no process of the guest)."""
    q.send("taskset -p 1 $$ >/dev/null; " +
           "".join(f"taskset -c {c} true; " for c in range(1, vcpus)) + "echo settled-$((1+1))\n")
    q.expect(r"\nsettled-2\r?\n", timeout=60)
    q.expect(PROMPT, timeout=60)


def unsettle(q, vcpus):
    """At the shell: the shell and what it starts may run on every CPU again."""
    q.send(f"taskset -p {(1 << vcpus) - 1:x} $$ >/dev/null; echo unsettled-$((1+1))\n")
    q.expect(r"\nunsettled-2\r?\n", timeout=60)
    q.expect(PROMPT, timeout=60)


def around(q, command, vcpus):
    """command() (which drives the shell) between two statistics requests,
    the peak restarted before it; (before, after, baseline, seconds,
    console output, command's result).  before and after hold "cpu", the
    guest's per-CPU user+system ticks.  The baseline and the end count of
    shadow pages are both taken settled (settle())."""
    at_once = vcpus > 1
    before = statistics(q, at_once)
    before["cpu"] = cpu_times(q)
    settle(q, vcpus)
    q.send("\x1dr")
    m = q.expect(r"vmi-hv: peaks reset: shadow pages in use (\d+),[^\n]*\n", timeout=30)
    baseline = int(m.group(1))
    q.send("\n")
    q.expect(PROMPT, timeout=60)
    unsettle(q, vcpus)
    started = time.monotonic()
    mark = q.cursor
    result = command()
    seconds = time.monotonic() - started
    out = q.output[mark:q.cursor]
    cpu = cpu_times(q)
    settle(q, vcpus)
    after = statistics(q, at_once)
    unsettle(q, vcpus)
    after["cpu"] = cpu
    return before, after, baseline, seconds, out, result


def ptstress(q, workers, rounds, vcpus):
    """ptstress x workers at once; the PASS count."""
    def command():
        q.send(f"i=0; while [ $i -lt {workers} ]; do /tests/ptstress {rounds} > /tmp/ptstress.$i 2>&1 & "
               f"i=$((i+1)); done; wait; cat /tmp/ptstress.*; rm -f /tmp/ptstress.*; echo stress-done\n")
        q.expect(r"\nstress-done", timeout=600 * workers)
        q.expect(PROMPT, timeout=60)
    before, after, baseline, seconds, out, _ = around(q, command, vcpus)
    passed = len(re.findall(r"PTSTRESS result=PASS", out))
    title = f"ptstress x{workers} ({rounds} rounds, {seconds:.1f} s): {passed}/{workers} PASS"
    problems = [] if passed == workers else [f"ptstress x{workers}: {passed} of {workers} runs passed"]
    return title, before, after, baseline, problems


def stress_ng(q, workers, stressors, seconds_each, vcpus):
    """The stress-ng stressors in turn, x workers each; their results too."""
    before, after, baseline, seconds, _, results = around(
        q, lambda: stressng.run(q, stressors, workers, seconds_each), vcpus)
    title = (f"stress-ng x{workers} ({len(stressors)} stressors, {seconds_each} s each, "
             f"{seconds:.1f} s): all completed")
    return title, before, after, baseline, [], results


def report(title, before, after, baseline, problems, workers, vcpus):
    """One block of the table; returns the problems found and the run's
    differences (page-table operations by kind, "total", the audit's)."""
    d = {k: after[k] - before[k]
         for k in PT_CALLS + ["queued"] + QUEUED_KEYS + ["audits", "entries", "mismatches", "unfilled",
                                                         "shootdowns", "shootdown IPIs", "waited us"]}
    d["total"] = total = sum(d[k] for k in PT_CALLS + ["queued"])
    print(title)
    print(f"  page-table operations: {' '.join(f'{k}={d[k]}' for k in PT_CALLS)}")
    kinds = " ".join(f"{k}={d['queued ' + k]}" for k in QUEUED)
    print(f"    queued by the ROM: {d['queued']} ({kinds}); total {total}")
    print(f"  audit ({after['mode']}): {d['audits']} audits, {d['entries']} entries checked, "
          f"{d['mismatches']} mismatches, {d['unfilled']} entries not filled yet")
    print(f"  shadow pages: baseline {baseline}, peak {after['peak']}, end {after['pages']}")
    if vcpus > 1:
        ipis = d["shootdown IPIs"]
        print(f"  shootdowns: {d['shootdowns']}, {ipis} IPIs to the other CPU in the guest; waited for its exit "
              f"{d['waited us']} us in all ({d['waited us'] // ipis if ipis else 0} us per IPI; "
              f"the longest since the boot {after['longest us']} us)")
    name = title.split(" (")[0]
    grew = {c: after["cpu"][c] - before["cpu"].get(c, 0) for c in sorted(after["cpu"])}
    busy = sum(grew.values())
    print(f"  guest CPU time (user+system ticks): " +
          " ".join(f"cpu{c}={g}" for c, g in grew.items()) + f"; total {busy}")
    if vcpus > 1 and workers >= 2:
        idle = [c for c in range(vcpus) if grew.get(c, 0) <= 0 or grew.get(c, 0) < SPREAD * busy / vcpus]
        if idle:
            problems.append(f"{name}: CPU {', '.join(map(str, idle))} got less than {SPREAD} of an even share "
                            f"of the {busy} ticks of user+system time ({grew})")
    if after["mismatches"]:
        problems.append(f"{name}: {after['mismatches']} audit mismatches")
    if after["pages"] != baseline:
        problems.append(f"{name}: {after['pages']} shadow pages at the end, baseline {baseline}")
    return problems, d


def native(args, workers, stressors, log):
    """The same stress-ng runs natively: {workers: results}."""
    # Two sockets of one core each: the guest kernel (no ACPI) counts the
    # CPUs of SeaBIOS's MP table, which lists one per package.
    machine = ["-smp", f"{args.vcpus},sockets={args.vcpus},cores=1,threads=1"] if args.vcpus > 1 else []
    q = Qemu([*machine, "-m", "128", "-kernel", paths.BZIMAGE, "-initrd", paths.STRESS_INITRD,
              "-append", SERIAL_CMDLINE], log, fatal=GUEST_FATAL,
             accel="tcg,thread=multi" if args.vcpus > 1 else "tcg")
    try:
        q.expect(MARKER, timeout=300)
        expect_nproc(q, args.vcpus, "natively")
        return {w: stressng.run(q, stressors, w, args.seconds) for w in workers}
    finally:
        q.kill()


def expect_nproc(q, n, where):
    """At the shell: the guest counts n CPUs (TestFailure if not)."""
    q.expect(PROMPT, timeout=120)
    m = shell_search(q, "echo CPUS=$(nproc)", r"^CPUS=(\d+)$")
    q.expect(PROMPT, timeout=60)
    if int(m.group(1)) != n:
        raise TestFailure(f"the guest {where} counts {m.group(1)} CPUs (nproc), not {n}")
    print(f"stress: the guest {where} counts {n} CPU{'s' if n > 1 else ''} (nproc)")


def bogo_table(hv, nat, stressors):
    """Per stressor and worker count: bogo-ops natively and under vmi-hv."""
    print("stress-ng bogo-ops (in the same seconds; vmi-hv with the audit on):")
    print(f"  {'stressor':<10} {'workers':>7} {'native':>10} {'vmi-hv':>10} {'vmi-hv/native':>14}")
    for w in sorted(hv):
        for s in stressors:
            h = hv[w][s][0]
            n = nat[w][s][0] if nat else None
            ratio = f"{h / n:.3f}" if n else "-"
            print(f"  {s:<10} {w:>7} {n if n is not None else '-':>10} {h:>10} {ratio:>14}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--audit", default="every=1", help="the hypervisor's audit= (default every=1)")
    ap.add_argument("--strict", action="store_true", help="also strict_pt=on (docs/HV.md, strict mode)")
    ap.add_argument("--workers", default="1,4", help="comma-separated worker counts (default 1,4)")
    ap.add_argument("--rounds", type=int, default=8, help="ptstress rounds per worker (default 8)")
    ap.add_argument("--stressors", default=",".join(stressng.STRESSORS),
                    help="comma-separated stress-ng stressors (default: tests/lib/stressng.py)")
    ap.add_argument("--seconds", type=int, default=2, help="seconds per stress-ng stressor (default 2)")
    ap.add_argument("--no-native", action="store_true", help="skip the native stress-ng runs")
    ap.add_argument("--smp", type=int, default=1,
                    help="CPUs of the machine under vmi-hv (MTTCG beyond 1; make stress passes SMP, default 2)")
    ap.add_argument("--vcpus", type=int, default=1,
                    help="vCPUs of the guest, run at once (vcpus=N vcpus_at_once=on; default 1)")
    ap.add_argument("--out", default=os.path.join(paths.BUILD, "stress"), help="output directory")
    args = ap.parse_args()
    try:
        workers = [int(w) for w in args.workers.split(",")]
    except ValueError:
        ap.error("--workers takes counts such as 1,4")
    stressors = [s for s in args.stressors.split(",") if s]
    if args.rounds < 1 or not workers or min(workers) < 1 or args.audit == "off" or args.seconds < 1:
        ap.error("--rounds, --seconds and the worker counts must be positive, and the audit on")
    if not 1 <= args.vcpus <= 8:
        ap.error("--vcpus takes 1 to 8 (the hypervisor's GUEST_MAX_VCPUS)")
    for f in (paths.HV_ELF, paths.BZIMAGE, paths.STRESS_INITRD):
        if not os.path.exists(f):
            print(f"stress: error: {f} is missing: run 'make hv guest stress-initrd'", file=sys.stderr)
            return 1
    if stressors and stressng.missing():
        print(f"stress: error: the stress initrd has no stress-ng: {stressng.missing()}", file=sys.stderr)
        return 1
    os.makedirs(args.out, exist_ok=True)

    started = time.monotonic()
    module = hv_modules(SERIAL_CMDLINE, paths.STRESS_INITRD)
    log = os.path.join(args.out, "stress-serial.log")
    hv_args = f"audit={args.audit}" + (" strict_pt=on" if args.strict else "")
    if args.vcpus > 1:
        hv_args += f" vcpus={args.vcpus} vcpus_at_once=on"
    machine = ["-smp", str(args.smp)] if args.smp > 1 else []
    print(f"stress: vmi-hv on {args.smp} CPU{'s' if args.smp > 1 else ''}" +
          (" (MTTCG)" if args.smp > 1 else ""))
    q = Qemu([*machine, "-m", "256", "-kernel", paths.HV_ELF, "-initrd", module, "-append", hv_args],
             log, fatal=GUEST_FATAL, accel="tcg,thread=multi" if args.smp > 1 else "tcg")
    problems, totals, hv = [], {}, {}
    try:
        q.expect(MARKER, timeout=300)
        expect_nproc(q, args.vcpus, "under vmi-hv")
        q.send("sleep 1; echo settled\n")
        q.expect(r"\nsettled", timeout=60)
        q.expect(PROMPT, timeout=60)
        print(f"vmi-hv with {hv_args}; serial log {log}")
        for program in ("ptstress", "stress-ng") if stressors else ("ptstress",):
            for w in workers:
                if program == "ptstress":
                    title, before, after, baseline, found = ptstress(q, w, args.rounds, args.vcpus)
                else:
                    title, before, after, baseline, found, hv[w] = stress_ng(q, w, stressors, args.seconds, args.vcpus)
                found, d = report(title, before, after, baseline, found, w, args.vcpus)
                problems += found
                totals = {k: totals.get(k, 0) + v for k, v in d.items()}
        q.send("reboot -f\n")
        q.expect(r"vmi-hv: guest reboot", timeout=60)
        q.wait_exit(timeout=60)
    except TestFailure as e:
        problems.append(str(e))
    finally:
        q.kill()
    if totals:
        print(f"all runs: {totals['total']} page-table operations under the audit, {totals['audits']} audits, "
              f"{totals['entries']} entries checked, {totals['mismatches']} mismatches")
    if hv:
        nat = None
        if not args.no_native:
            nlog = os.path.join(args.out, "stress-native.log")
            try:
                nat = native(args, sorted(hv), stressors, nlog)
            except TestFailure as e:
                problems.append(f"native: {e}")
        bogo_table(hv, nat, stressors)
    print(f"make stress: {time.monotonic() - started:.0f} s")
    for p in problems:
        print(f"stress: FAIL: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
