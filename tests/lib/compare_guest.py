"""One boot of `make compare`: the benchmark initramfs, natively or under
vmi-hv, with the same bzImage, initrd and kernel command line; or the stock
kernel (build/guest-stock: the tarball without the series) natively, for
the VMI kernel's native overhead.

The guest runs /tests/compare (guest/programs/bench/compare.sh, then
microbench), which stops before and after each timed part with
"BENCH-PAUSE NAME before|after" and waits for a newline.  Under vmi-hv we
read the hypervisor's counters there (Ctrl-] s); natively we only answer
the newline, so both boots run the same protocol.  run_boot() returns what
one boot measured: boot time, the printk timeline, every test's figures
and, under vmi-hv, the exits and VMI calls of every timed window.
"""

import re

from vmitest import Qemu, TestFailure
from hvguest import GUEST_FATAL, GUEST_REBOOT, MARKER, NATIVE_REBOOT, hv_modules
from hvstats import hv_statistics

MODES = ("native", "hv", "stock")
MODE_NAMES = {"native": "native", "hv": "vmi-hv", "stock": "stock kernel"}

# QEMU's memory: natively the guest's RAM; under vmi-hv the hypervisor's
# share on top of the guest's default 128M (guest_mem, docs/HV.md).
MEMORY = {"native": "128", "hv": "256", "stock": "128"}

# Key boot messages for the timeline: (label, regex of the printk text).
# The same kernel prints each of them in both boots.
BOOT_EVENTS = [
    ("kernel banner", r"Linux version 6\.1"),
    ("memory set up", r"Memory: \d+K/\d+K available"),
    ("console on ttyS0", r"printk: console \[ttyS0\] enabled"),
    ("clocksource switch", r"clocksource: Switched to clocksource"),
    ("initramfs unpacked", r"Trying to unpack rootfs image as initramfs|Freeing initrd memory"),
    ("init started", r"Run /init as init process"),
]
PRINTK = re.compile(r"^\[\s*(\d+\.\d+)\] (.*)$", re.M)

# Boot phases by the host's clock (docs/COMPARE.md, "Boot phases"): when
# the first line matching each mark arrived on the serial console, in
# seconds from QEMU's start.  The first two are the hypervisor's own (none
# natively).  The kernel holds its messages until its console is enabled,
# so "console on ttyS0" is when the decompressed kernel's early boot is
# done; under vmi-hv the guest's first printk time (its clock is the TSC
# since the machine's reset) is noted too.
HOST_MARKS = [
    ("hypervisor started", r"vmi-hv \d+\.\d+: a VMI"),
    ("guest entered", r"vmi-hv: guest entry: "),
    ("console on ttyS0", r"printk: console \[ttyS0\] enabled"),
    ("init started", r"Run /init as init process"),
    ("init marker", r"VMIHV-INIT-MARKER "),
]

PAUSE = r"BENCH-PAUSE (\S+) (before|after)\n|BENCH-END failures=(\d+)\n"
# faults=: the page faults the guest's kernel handled in the window
# (microbench's getrusage, itself and its waited-for children).
BENCH = re.compile(r"^BENCH name=(\S+) ops=(\d+) ns=(\d+) faults=(\d+)", re.M)
BENCH_FAIL = re.compile(r"^BENCH-FAIL name=(\S+) reason=(.*)$", re.M)
BENCH_OUT = re.compile(r"^BENCH-OUT name=(\S+) line=(.*)$", re.M)
CYCLICTEST = re.compile(r"Min:\s+(\d+) Act:\s+\d+ Avg:\s+(\d+) Max:\s+(\d+)")

# Generous: one timed part under vmi-hv (a macro workload) may take a minute
# on a busy TCG host.
STEP_TIMEOUT = 300

# make compare COMPAREARGS=--icount (docs/COMPARE.md, "Instructions, not
# time"): the guest's clock counts its instructions (1 ns each), so every
# figure is instructions executed, whatever else the host does; idle time
# is skipped.  The boot figure is then the guest kernel's uptime at the
# init marker (its own clock), not the host's.
ICOUNT_ARGS = ["-icount", "shift=0,sleep=off"]


def qemu_args(mode, bzimage, initrd, cmdline, hv_elf):
    """The same bzImage, initrd and command line; natively with -kernel,
    under vmi-hv as the hypervisor's multiboot modules."""
    if mode in ("native", "stock"):
        return ["-m", MEMORY[mode], "-kernel", bzimage, "-initrd", initrd, "-append", cmdline]
    module = hv_modules(cmdline, initrd, kernel=bzimage)
    return ["-m", MEMORY[mode], "-kernel", hv_elf, "-initrd", module]


def read_counters(q):
    """Ctrl-] s: {exits, hypercalls, alarms: the guest's alarm interrupts
    (its timer ticks), calls: {VMI call: count}, vectors: {exit vector:
    count}, hv_ns: the hypervisor's time in all its exits} now."""
    s = hv_statistics(q)
    return {"exits": s.counters["exits"], "hypercalls": s.counters["hypercalls"], "alarms": s.interrupts["alarms"],
            "calls": s.vmi_calls, "vectors": s.exits_by_vector,
            "hv_ns": s.hv_time["ns"] * s.hv_time["timed_exits"]}


def window(before, after):
    """Counts of a timed window: after minus before."""
    def diff(key):
        d = {k: after[key].get(k, 0) - before[key].get(k, 0) for k in after[key]}
        return {k: n for k, n in d.items() if n}
    return {"exits": after["exits"] - before["exits"],
            "hypercalls": after["hypercalls"] - before["hypercalls"],
            "alarms": after["alarms"] - before["alarms"],
            "calls": diff("calls"), "vectors": diff("vectors"),
            "hv_ns": after["hv_ns"] - before["hv_ns"]}


def boot_timeline(output):
    """{label: printk seconds} of the key boot messages (the first of each)."""
    found = {}
    for m in PRINTK.finditer(output):
        for label, rx in BOOT_EVENTS:
            if label not in found and re.search(rx, m.group(2)):
                found[label] = float(m.group(1))
    return found


def host_marks(q):
    """{label: host seconds from QEMU's start} of HOST_MARKS that appeared."""
    found = {}
    for label, rx in HOST_MARKS:
        m = re.search(rx, q.output)
        if m:
            found[label] = next((t for t, n in q.arrivals if n >= m.end()), None)
    return {k: v for k, v in found.items() if v is not None}


def run_boot(mode, bzimage, initrd, cmdline, hv_elf, log_path, icount=False):
    """Boot once, run the benchmarks, return their figures (a dict)."""
    args = qemu_args(mode, bzimage, initrd, cmdline, hv_elf) + (ICOUNT_ARGS if icount else [])
    q = Qemu(args, log_path, fatal=GUEST_FATAL)
    try:
        m = q.expect(MARKER, timeout=STEP_TIMEOUT)
        boot_s = float(m.group(1)) if icount else q.elapsed()
        want = "vmi" if mode == "hv" else "native"
        if m.group(3) != want:
            raise TestFailure(f"{mode} boot: the guest reports mode={m.group(3)}, expected {want}")
        windows, pending = {}, {}
        while True:
            p = q.expect(PAUSE, timeout=STEP_TIMEOUT)
            if p.group(3) is not None:
                end_failures = int(p.group(3))
                break
            if mode == "hv":
                counts = read_counters(q)
                if p.group(2) == "before":
                    pending[p.group(1)] = counts
                else:
                    windows[p.group(1)] = window(pending.pop(p.group(1)), counts)
            q.send("\n")
        done = q.expect(r"VMITEST-DONE name=compare rc=(\d+)\n", timeout=60)
        if mode == "hv":
            q.expect(r"vmi-hv: guest reboot", timeout=60)
        status = q.wait_exit(timeout=60)
        expected = GUEST_REBOOT if mode == "hv" else NATIVE_REBOOT
        if status != expected:
            raise TestFailure(f"{mode} boot: QEMU exit status {status}, expected {expected} (the guest's reboot)")
    finally:
        q.kill()

    out = q.output
    tests = {}
    for name, ops, ns, faults in BENCH.findall(out):
        tests[name] = {"ops": int(ops), "ns": int(ns), "guest_faults": int(faults), **windows.get(name, {})}
    outputs = {}
    for name, line in BENCH_OUT.findall(out):
        outputs.setdefault(name, []).append(line)
    ct = CYCLICTEST.search("\n".join(outputs.get("cyclictest", [])))
    kernel_cmdline = re.search(r"Kernel command line: ([^\n]*)\n", out)
    return {
        "mode": mode,
        "boot_s": boot_s,
        "init_uptime_s": float(m.group(1)),
        "timeline": boot_timeline(out),
        "host_marks": host_marks(q),
        "tests": tests,
        "cyclictest_us": {"min": int(ct.group(1)), "avg": int(ct.group(2)), "max": int(ct.group(3))}
        if ct else None,
        "failures": dict(BENCH_FAIL.findall(out)),
        # microbench's own count of the tests and workloads that failed.
        "bench_end_failures": end_failures,
        "outputs": outputs,
        "guest_rc": int(done.group(1)),
        # As the kernel saw it: the proof that both boots had the same.
        "kernel_cmdline": kernel_cmdline.group(1).strip() if kernel_cmdline else None,
        "log": log_path,
    }
