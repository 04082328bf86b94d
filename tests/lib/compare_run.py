"""`make compare` from start to end: boot the benchmark initramfs natively
and under vmi-hv, and the stock kernel natively, interleaved, `reps` times
each; then the tables, the CSV files and the plot under `outdir`.  tests/compare.py (the command) and the
bench test compare-native-vs-hv (fewer, shorter runs) both call run()."""

import json
import os
import time

import compare_guest
import compare_plot
import compare_report
import compare_stats
from vmitest import paths

BENCH_INITRD = os.path.join(paths.BUILD, "guest", "bench-initrd.img")
SERIAL_CMDLINE = "console=ttyS0,115200"


def cmdline(bench_ms, scale):
    """The one kernel command line of both boots."""
    return f"{SERIAL_CMDLINE} vmitest=compare bench_ms={bench_ms} bench_scale={scale}"


def order(reps, modes=("native", "hv")):
    """native, hv, hv, native, native, hv, ... (with the stock kernel:
    native, hv, stock, hv, stock, native, stock, native, hv, ...):
    interleaved, and each mode in each place as often as the others, so a
    host getting busier or quieter during the run favours none of them."""
    for i in range(reps):
        k = i % len(modes)
        yield from (modes[k:] + modes[:k])


def run(outdir, reps=3, bench_ms=300, scale=4, log=print, stock=True, icount=False):
    """Returns {"rows", "events", "boots", "paths", "table", "native_table",
    "cmdline"}.  stock=False leaves the stock kernel out (no native-overhead
    table, native_table is None): the short compare of make test, which
    never builds that kernel (docs/COMPARE.md, "Native overhead").
    icount=True: QEMU -icount, figures in guest instructions
    (compare_guest.ICOUNT_ARGS)."""
    modes = compare_guest.MODES if stock else tuple(m for m in compare_guest.MODES if m != "stock")
    needed = (paths.BZIMAGE, paths.HV_ELF, BENCH_INITRD) + ((paths.BZIMAGE_STOCK,) if stock else ())
    for f in needed:
        if not os.path.isfile(f):
            raise FileNotFoundError(f"missing {os.path.relpath(f, paths.ROOT)} (run make compare, "
                                    f"which builds it)")
    os.makedirs(os.path.join(outdir, "logs"), exist_ok=True)
    line = cmdline(bench_ms, scale)
    log(f"compare: {reps} boot(s) per mode, interleaved; kernel command line: {line}"
        + ("; QEMU -icount: figures are guest instructions (1 ns each), boot the kernel's uptime" if icount else ""))
    boots = []
    counter = dict.fromkeys(modes, 0)
    for mode in order(reps, modes):
        counter[mode] += 1
        logpath = os.path.join(outdir, "logs", f"{mode}-{counter[mode]}.log")
        started = time.monotonic()
        bzimage = paths.BZIMAGE_STOCK if mode == "stock" else paths.BZIMAGE
        boot = compare_guest.run_boot(mode, bzimage, BENCH_INITRD, line, paths.HV_ELF, logpath, icount)
        boots.append(boot)
        log(f"compare: {compare_guest.MODE_NAMES[mode]} run {counter[mode]}: init marker at "
            f"{boot['boot_s']:.1f}s, done in {time.monotonic() - started:.0f}s "
            f"({len(boot['tests'])} figures, {len(boot['failures'])} failed; log {os.path.relpath(logpath)})")
    seen = {b["kernel_cmdline"] for b in boots}
    if seen != {line}:
        raise RuntimeError(f"the kernels saw other command lines than {line!r}: {sorted(map(str, seen))}")
    with open(os.path.join(outdir, "compare-boots.json"), "w") as f:
        json.dump(boots, f, indent=1)

    rows = compare_stats.summarize(boots)
    events = compare_stats.timeline(boots)
    runs_label = f"{reps} boot{'s' if reps > 1 else ''} each, TCG" + (" -icount (guest instructions)" if icount else "")
    header = (f"vmi-hv vs native, {runs_label}; medians [min-max] of the runs; "
              f"command line: {line}")
    table = compare_report.table(rows, boots, header)
    marks, banner = compare_stats.boot_phases(boots)
    table += [""] + compare_report.boot_phase_table(
        marks, banner, f"Boot phases by the host's clock, {runs_label}; medians of the runs")
    native_table = None
    if stock:
        native_table = compare_report.native_table(
            rows, f"VMI kernel natively vs stock kernel, {runs_label}; medians [min-max] of the runs")
    written = compare_report.write_all(outdir, rows, events, table + ([""] + native_table if stock else []))
    native_csv = os.path.join(outdir, "native-overhead.csv")
    if stock:
        written["native_csv"] = compare_report.write_native_csv(native_csv, rows)
    elif os.path.exists(native_csv):
        os.remove(native_csv)     # an earlier run's, not this one's
    written["plot"] = compare_plot.plot(outdir, rows, events, runs_label)
    return {"rows": rows, "events": events, "boots": boots, "paths": written, "table": table,
            "native_table": native_table, "cmdline": line}
