"""The figures of `make compare`, from the boots' raw results: one row per
test with every boot's value in each mode, the median and the spread
(min-max), the ratio vmi-hv / native of the medians, the issue's target,
and under vmi-hv the exits and VMI calls per operation; and the ratio of
the VMI kernel natively to the stock kernel (native overhead).

A ratio is a ratio of medians: with several boots per mode, no single run
(a noisy moment on a shared TCG host) decides it.  The spread shows how far
the runs were apart.
"""

import statistics

# (name, what is measured, unit, target ratio from docs/COMPARE.md or None).
# "micro" rows are ns per operation shown in us; "macro" rows are one run
# of a workload in s; "boot" rows come from the boot itself.
ROWS = [
    ("boot_to_init", "boot", "s", 1.6, "QEMU start to the init marker (host clock)"),
    ("null_syscall", "micro", "us", 1.5, "getppid()"),
    ("null_io", "micro", "us", None, "read 1 byte from /dev/zero"),
    ("stat", "micro", "us", 2.0, "stat(/bin/busybox)"),
    ("open_close", "micro", "us", 2.0, "open + close /bin/busybox"),
    ("sig_install", "micro", "us", None, "sigaction(SIGUSR1)"),
    ("sig_catch", "micro", "us", None, "kill(self, SIGUSR1), handler runs"),
    ("prot_fault", "micro", "us", None, "store to a read-only page, SIGSEGV caught"),
    ("page_fault", "micro", "us", 4.0, "first touch of a fresh anonymous page"),
    ("mprotect", "micro", "us", None, "mprotect of one dirty page"),
    ("mprotect16", "micro", "us", None, "mprotect of 16 dirty pages read-only and back"),
    ("tick_spin", "micro", "us", None, "1000 steps of user-mode arithmetic (the ticks' cost)"),
    ("fork_wait", "micro", "us", 2.0, "fork, child exits, waitpid"),
    ("fork_exec", "micro", "us", None, "fork, exec a tiny static program, waitpid"),
    ("pipe_latency", "micro", "us", None, "1-byte round trip between two processes"),
    ("ctx_switch", "micro", "us", None, "one switch of a two-process pipe ping-pong"),
    ("shell_loop", "macro", "s", 1.6, "busybox sh loop (loop.sh)"),
    ("gzip", "macro", "s", None, "busybox gzip -c of generated text"),
    ("hackbench", "macro", "s", None, "hackbench -p -g 2 -f 5 (pipes, processes)"),
    ("cyclictest_avg", "latency", "us", None, "cyclictest average wake-up latency"),
    ("cyclictest_max", "latency", "us", None, "cyclictest worst wake-up latency"),
]
MICRO = [r[0] for r in ROWS if r[1] == "micro"]
CALIBRATION = "empty"       # microbench's window with nothing in it


def value(boot, name, kind):
    """One boot's figure for a row, or None when that boot has none."""
    if name == "boot_to_init":
        return boot["boot_s"]
    if kind == "latency":
        ct = boot.get("cyclictest_us")
        return ct and ct[name.split("_")[1]]
    t = boot["tests"].get(name)
    if not t:
        return None
    if kind == "micro":
        return t["ns"] / t["ops"] / 1000.0
    return t["ns"] / 1e9


# Exit vectors by cause, for the breakdown (the hypervisor's IDT: 14 page
# fault, 0x82 the VMI hypercall, 32 and up the machine's interrupts).
PAGE_FAULT_VECTOR, HYPERCALL_VECTOR = 14, 0x82


def cause(vector):
    if vector == PAGE_FAULT_VECTOR:
        return "page faults"
    if vector == HYPERCALL_VECTOR:
        return "VMI calls"
    return "interrupts" if vector >= 32 else "other exceptions"


CAUSES = ("page faults", "VMI calls", "interrupts", "other exceptions")


def per_op(boot, name):
    """Per operation in one vmi-hv boot, the pause protocol's own counts
    (the empty window) taken off: (exits, hypercalls, {call: count},
    {cause: exits}, the hypervisor's ns per exit or None)."""
    t, base = boot["tests"].get(name), boot["tests"].get(CALIBRATION)
    if not t or "exits" not in t or not base or "exits" not in base:
        return None
    ops = t["ops"]
    calls = {c: max(n - base["calls"].get(c, 0), 0) / ops for c, n in t["calls"].items()}
    causes = dict.fromkeys(CAUSES, 0.0)
    for v, n in t.get("vectors", {}).items():
        causes[cause(v)] += n / ops
    for v, n in base.get("vectors", {}).items():
        causes[cause(v)] -= n / ops
    exits = max(t["exits"] - base["exits"], 0)
    return (exits / ops,
            max(t["hypercalls"] - base["hypercalls"], 0) / ops,
            {c: v for c, v in calls.items() if v > 0},
            {c: max(v, 0.0) for c, v in causes.items()},
            t["hv_ns"] / t["exits"] if t.get("hv_ns") and t["exits"] else None)


# The window whose exits are the guest's timer ticks and nothing else
# (microbench: user-mode arithmetic, no system calls).
TICK_WINDOW = "tick_spin"


def per_tick(boot, name):
    """Exits per guest timer tick in one vmi-hv boot's window: all its
    exits over the alarm interrupts the hypervisor raised in it; None
    without ticks.  The pause protocol's own exits are left in (an upper
    bound): the empty window's are not a fair share of them, since a
    kernel message that lands in it costs an exit per byte."""
    t = boot["tests"].get(name)
    if not t or not t.get("alarms"):
        return None
    return t["exits"] / t["alarms"]


def guest_faults_per_op(boots, mode, name):
    """The median over one mode's boots of the page faults the guest's
    kernel handled per operation of a test (microbench's faults=), or
    None when no boot has the figure."""
    per_boot = []
    for b in boots:
        t = b["tests"].get(name) if b["mode"] == mode else None
        if t and t["ops"]:
            per_boot.append(t["guest_faults"] / t["ops"])
    return statistics.median(per_boot) if per_boot else None


def spread(values):
    return (statistics.median(values), min(values), max(values)) if values else None


def summarize(boots):
    """Rows of figures (dicts) in ROWS order, from a list of boot results."""
    rows = []
    for name, kind, unit, target, what in ROWS:
        row = {"test": name, "kind": kind, "unit": unit, "target": target, "what": what}
        for mode in ("native", "hv", "stock"):
            vals = [v for b in boots if b["mode"] == mode
                    for v in [value(b, name, kind)] if v is not None]
            row[mode] = vals
            row[mode + "_stats"] = spread(vals)
        n, h = row["native_stats"], row["hv_stats"]
        row["ratio"] = h[0] / n[0] if n and h and n[0] > 0 else None
        # The VMI kernel natively against the stock kernel: VMI's native overhead.
        s = row["stock_stats"]
        row["native_ratio"] = n[0] / s[0] if n and s and s[0] > 0 else None
        counts = [c for b in boots if b["mode"] == "hv" for c in [per_op(b, name)] if c]
        row["exits_per_op"] = statistics.median(c[0] for c in counts) if counts else None
        row["hypercalls_per_op"] = statistics.median(c[1] for c in counts) if counts else None
        calls = {}
        for c in counts:
            for call, v in c[2].items():
                calls.setdefault(call, []).append(v)
        top = sorted(((statistics.median(v), call) for call, v in calls.items()), reverse=True)[:3]
        row["top_calls"] = " ".join(f"{call}={v:.1f}" for v, call in top)
        row["causes"] = {c: statistics.median(x[3][c] for x in counts) for c in CAUSES} if counts else None
        ticks = [x for b in boots if b["mode"] == "hv" for x in [per_tick(b, name)] if x is not None]
        row["exits_per_tick"] = spread(ticks)
        # The guest's own page faults per operation, in each mode: the
        # same work takes the same faults, and under vmi-hv each costs
        # two exits (the fault, and the retry that derives the entry its
        # handler queued), a floor of this design (docs/COMPARE.md).
        row["guest_faults_per_op"] = {mode: guest_faults_per_op(boots, mode, name) for mode in ("native", "hv")}
        ns = [x[4] for x in counts if x[4] is not None]
        row["hv_us_per_exit"] = statistics.median(ns) / 1000.0 if ns else None
        rows.append(row)
    return rows


def timeline(boots):
    """[(event, native median s, hv median s)] in boot order, from printk."""
    events = []
    for b in boots:
        for label in b["timeline"]:
            if label not in events:
                events.append(label)
    events.append("init marker")
    out = []
    for label in events:
        med = {}
        for mode in ("native", "hv"):
            vals = [b["init_uptime_s"] if label == "init marker" else b["timeline"].get(label)
                    for b in boots if b["mode"] == mode]
            vals = [v for v in vals if v is not None]
            med[mode] = statistics.median(vals) if vals else None
        out.append((label, med["native"], med["hv"]))
    return sorted(out, key=lambda e: (e[1] is None, e[1] or 0))


def boot_phases(boots):
    """{mode: {mark: median host seconds}} of compare_guest.HOST_MARKS, for
    native and hv, and {mode: median printk seconds of the kernel banner}."""
    marks, banner = {}, {}
    for mode in ("native", "hv"):
        ours = [b for b in boots if b["mode"] == mode]
        marks[mode] = {}
        for label in {k for b in ours for k in b.get("host_marks", {})}:
            vals = [b["host_marks"][label] for b in ours if label in b.get("host_marks", {})]
            marks[mode][label] = statistics.median(vals)
        vals = [b["timeline"]["kernel banner"] for b in ours if "kernel banner" in b["timeline"]]
        banner[mode] = statistics.median(vals) if vals else None
    return marks, banner
