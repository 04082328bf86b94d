"""The outputs of `make compare`: the ratio table (terminal and a text
file) and the CSV files, from compare_stats' rows."""

import csv
import math
import os

from compare_guest import HOST_MARKS
from compare_stats import CAUSES, TICK_WINDOW


def fmt(x):
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}" if x >= 0.1 else f"{x:.3f}"


def cell(stats, unit):
    """'median [min-max] unit' of one mode."""
    if not stats:
        return "not run"
    med, lo, hi = stats
    return f"{fmt(med)} [{fmt(lo)}-{fmt(hi)}] {unit}"


def failure_reason(name, boots):
    """Why a row has no figures: the first failure microbench reported."""
    key = "cyclictest" if name.startswith("cyclictest") else name
    for b in boots:
        if key in b["failures"]:
            return f"{MODE_LABEL[b['mode']]}: {b['failures'][key]}"
    return None


MODE_LABEL = {"native": "native", "hv": "vmi-hv", "stock": "stock kernel"}


def table(rows, boots, header):
    """The ratio table as text lines."""
    cols = ["test", "native median [min-max]", "vmi-hv median [min-max]", "ratio", "target",
            "exits/op", "VMI calls/op"]
    body = []
    notes = []
    for r in rows:
        ratio = f"{r['ratio']:.2f}x" if r["ratio"] is not None else "-"
        target = f"<={r['target']}x" if r["target"] else ""
        if r["target"] and r["ratio"] is not None:
            target += " met" if r["ratio"] <= r["target"] else " missed"
        body.append([r["test"], cell(r["native_stats"], r["unit"]), cell(r["hv_stats"], r["unit"]),
                     ratio, target, fmt(r["exits_per_op"]), fmt(r["hypercalls_per_op"])])
        if not r["native"] or not r["hv"]:
            why = failure_reason(r["test"], boots)
            if why and not any(why in n for n in notes):
                notes.append(f"{r['test']}: not run: {why}")
    widths = [max(len(str(x[i])) for x in [cols] + body) for i in range(len(cols))]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    out = [header, "", line(cols), line(["-" * w for w in widths])]
    out += [line(b) for b in body]
    out.append("")
    out.append("ratio = vmi-hv median / native median (lower is better, 1.00x = no overhead); "
               "exits and VMI calls per operation under vmi-hv, the pause protocol's own taken off.")
    out += notes
    out += tick_line(rows)
    out += causes_table(rows)
    return out


def tick_line(rows):
    """Exits per guest timer tick, from the window that has nothing else."""
    for r in rows:
        if r["test"] == TICK_WINDOW and r.get("exits_per_tick"):
            med, lo, hi = r["exits_per_tick"]
            return ["", f"exits per guest timer tick: {fmt(med)} [{fmt(lo)}-{fmt(hi)}] "
                        f"({TICK_WINDOW}: user-mode arithmetic only; all the window's exits, the pause "
                        "protocol's included, over the alarm interrupts the hypervisor raised in it; target <= 1.5)"]
    return []


def causes_table(rows):
    """Where vmi-hv's exits come from, per operation, with the top VMI calls
    and what the hypervisor spent per exit (exit to next entry)."""
    cols = ["test", "exits/op", *CAUSES, "guest's #PF native", "vmi-hv", "hv us/exit", "top VMI calls/op"]
    body = [[r["test"], fmt(r["exits_per_op"]), *(fmt(r["causes"][c]) for c in CAUSES),
             *(fmt(r["guest_faults_per_op"][m]) for m in ("native", "hv")),
             fmt(r["hv_us_per_exit"]), r["top_calls"]]
            for r in rows if r.get("causes") and r["exits_per_op"]]
    if not body:
        return []
    widths = [max(len(str(x[i])) for x in [cols] + body) for i in range(len(cols))]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return ["", "Exits under vmi-hv by cause, per operation (exit vector: 14 page faults, 0x82 VMI calls, "
            "32 and up the machine's interrupts); hv us/exit: the hypervisor's own time per exit in the window.",
            "guest's #PF: the page faults the guest's kernel handled per operation (getrusage), natively and "
            "under vmi-hv; each of them costs two page-fault exits under vmi-hv (the fault, and the retry "
            "that derives the entry its handler queued), the rest of the page-fault exits are the shadow's own.",
            "", line(cols), line(["-" * w for w in widths]), *(line(b) for b in body)]


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["test", "what", "unit", "native_median", "native_min", "native_max",
                    "hv_median", "hv_min", "hv_max", "ratio", "target_ratio",
                    "hv_exits_per_op", "hv_vmi_calls_per_op", "hv_top_vmi_calls_per_op",
                    *(f"hv_{c.replace(' ', '_')}_per_op" for c in CAUSES), "hv_us_per_exit",
                    "hv_exits_per_tick", "native_runs", "hv_runs",
                    "native_guest_faults_per_op", "hv_guest_faults_per_op"])
        for r in rows:
            n = r["native_stats"] or (None, None, None)
            h = r["hv_stats"] or (None, None, None)
            w.writerow([r["test"], r["what"], r["unit"], *n, *h, r["ratio"], r["target"],
                        r["exits_per_op"], r["hypercalls_per_op"], r["top_calls"],
                        *((r["causes"] or {}).get(c) for c in CAUSES), r["hv_us_per_exit"],
                        (r["exits_per_tick"] or (None,))[0], len(r["native"]), len(r["hv"]),
                        *(r["guest_faults_per_op"].get(m) for m in ("native", "hv"))])


def write_runs_csv(path, rows):
    """Every boot's figure, for whoever wants more than the median."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["test", "unit", "mode", "run", "value"])
        for r in rows:
            for mode in ("native", "hv", "stock"):
                for i, v in enumerate(r.get(mode, []), 1):
                    w.writerow([r["test"], r["unit"], mode, i, v])


def write_timeline_csv(path, events):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["event", "native_s", "hv_s"])
        for label, native, hv in events:
            w.writerow([label, native, hv])


# What the VMI kernel may cost natively against the stock kernel
# (docs/COMPARE.md, "Native overhead"): each test's ratio of medians, and
# their geometric mean.
NATIVE_MAX_RATIO, NATIVE_MAX_GEOMEAN = 1.05, 1.02


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def native_table(rows, header):
    """The second table: the VMI kernel natively vs the stock kernel."""
    cols = ["test", "stock median [min-max]", "VMI native median [min-max]", "ratio", "target"]
    body = []
    for r in rows:
        ratio = r.get("native_ratio")
        verdict = "" if ratio is None else ("met" if ratio <= NATIVE_MAX_RATIO else "missed")
        body.append([r["test"], cell(r.get("stock_stats"), r["unit"]), cell(r["native_stats"], r["unit"]),
                     f"{ratio:.3f}x" if ratio is not None else "-", f"<={NATIVE_MAX_RATIO}x {verdict}"])
    g = geomean(r.get("native_ratio") for r in rows)
    widths = [max(len(str(x[i])) for x in [cols] + body) for i in range(len(cols))]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    out = [header, "", line(cols), line(["-" * w for w in widths]), *(line(b) for b in body), ""]
    if g is not None:
        out.append(f"geometric mean of the ratios: {g:.3f}x (target <={NATIVE_MAX_GEOMEAN}x "
                   f"{'met' if g <= NATIVE_MAX_GEOMEAN else 'missed'})")
    out.append("ratio = VMI kernel natively / stock kernel (the tarball without the series, the same "
               "fragment less the series' options), same initrd and command line; 1.00x = no overhead.")
    return out


def write_native_csv(path, rows):
    """native-overhead.csv: test,stock_us,vmi_native_us,ratio (medians, in us)."""
    scale = {"us": 1.0, "s": 1e6}
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["test", "stock_us", "vmi_native_us", "ratio"])
        for r in rows:
            s, n = r.get("stock_stats"), r["native_stats"]
            k = scale[r["unit"]]
            w.writerow([r["test"], s[0] * k if s else "", n[0] * k if n else "",
                        r["native_ratio"] if r.get("native_ratio") is not None else ""])
    return path


def write_all(outdir, rows, events, table_lines):
    """compare.txt, compare.csv, compare-runs.csv, compare-boot.csv."""
    paths = {k: os.path.join(outdir, v) for k, v in
             {"table": "compare.txt", "csv": "compare.csv", "runs": "compare-runs.csv",
              "boot": "compare-boot.csv"}.items()}
    with open(paths["table"], "w") as f:
        f.write("\n".join(table_lines) + "\n")
    write_csv(paths["csv"], rows)
    write_runs_csv(paths["runs"], rows)
    write_timeline_csv(paths["boot"], events)
    return paths


def boot_phase_table(marks, banner, header):
    """Boot phases of both modes by the host's clock (docs/COMPARE.md,
    "Boot phases"): each phase runs from the mode's previous mark to this
    one (medians of the runs); natively the hypervisor's two are absent."""
    labels = [label for label, _ in HOST_MARKS]
    names = {"hypervisor started": "QEMU start -> hypervisor's banner (firmware, hypervisor load)",
             "guest entered": "-> guest's first instruction (hypervisor start, guest load)",
             "console on ttyS0": "-> kernel console on (decompression, early kernel)",
             "init started": "-> /init started (initcalls, initramfs)",
             "init marker": "-> init marker (init script)"}
    rows = []
    prev = {"native": 0.0, "hv": 0.0}
    for label in labels:
        cells = []
        for mode in ("native", "hv"):
            t = marks.get(mode, {}).get(label)
            if t is None:
                cells.append("-")
                continue
            cells.append(f"{t - prev[mode]:.2f} (at {t:.2f})")
            prev[mode] = t
        rows.append([names[label], *cells])
    cols = ["phase", "native s (at s)", "vmi-hv s (at s)"]
    widths = [max(len(str(x[i])) for x in [cols] + rows) for i in range(len(cols))]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    out = [header, "", line(cols), line(["-" * w for w in widths]), *(line(r) for r in rows), ""]
    if banner.get("hv") is not None:
        out.append(f"under vmi-hv the kernel's first printk time is {banner['hv']:.2f} s: its clock is the TSC "
                   "since the machine's reset, so that is firmware, hypervisor start, guest load and "
                   "decompression by the guest's own clock.")
    out.append("Times are when each line reached the serial console (the kernel holds its lines until "
               "its console is on); the machine is shared, so they move with the host's load.")
    return out
