"""The plot of `make compare`, drawn by gnuplot (Debian's gnuplot-nox,
installed by scripts/deps.sh) as one SVG with two panels:
  - ratio bars per test (vmi-hv / native, log scale), with the spread of
    the runs as error bars (lowest vmi-hv over highest native, and the
    other way round) and the issue's targets as marks;
  - the boot timeline: key boot messages at their printk times, native and
    under vmi-hv (medians).
"""

import os
import subprocess

GNUPLOT = """\
set terminal svg size 1100,900 dynamic font "sans,11"
set output '{svg}'
set termoption noenhanced
set datafile separator "\\t"
set datafile missing "-"
set multiplot layout 2,1 title "same bzImage, initrd and command line: native vs vmi-hv ({runs})"

set title "vmi-hv / native, median of the runs (bars: spread of the runs; diamonds: docs/COMPARE.md targets)"
set logscale y
set yrange [0.5:*]
set ylabel "ratio (log)"
set grid ytics
set xtics rotate by -40 nomirror
set style fill solid 0.5 border -1
set offsets 0.6, 0.6, 0, 0
set key top right
plot '{ratios}' using 0:2:3:4:(0.7):xtic(1) with boxerrorbars lc rgb "#4477aa" title "ratio", \\
     '' using 0:5 with points pt 13 ps 1.5 lc rgb "#cc3311" title "target", \\
     1 with lines lc rgb "#555555" dt 2 notitle

unset logscale y
set offsets 0, 0, 0, 0
set yrange [*:*]
unset xtics
set xtics nomirror
set title "boot timeline from the guest's printk timestamps (median of the runs)"
set xlabel "printk seconds; each kernel's own clock: natively 0 until the TSC is calibrated, under vmi-hv the TSC from the machine's reset"
unset ylabel
set ytics nomirror
set yrange [-0.5:{last}]
set grid xtics
set key bottom right
plot '{boot}' using 2:0:ytic(1) with linespoints pt 7 lc rgb "#228833" title "native", \\
     '' using 3:0 with linespoints pt 5 lc rgb "#cc3311" title "vmi-hv"
unset multiplot
"""


def num(x):
    return "-" if x is None else f"{x:.6g}"


def write_data(outdir, rows, events):
    """The two gnuplot data files (tab-separated; '-' is missing)."""
    ratios = os.path.join(outdir, "compare-ratios.dat")
    with open(ratios, "w") as f:
        for r in rows:
            if r["ratio"] is None:
                continue
            (_, nlo, nhi), (_, hlo, hhi) = r["native_stats"], r["hv_stats"]
            low = hlo / nhi if nhi else None
            high = hhi / nlo if nlo else None
            f.write("\t".join([r["test"], num(r["ratio"]), num(low), num(high), num(r["target"])]) + "\n")
    boot = os.path.join(outdir, "compare-boot.dat")
    with open(boot, "w") as f:
        for label, native, hv in events:
            f.write("\t".join([label, num(native), num(hv)]) + "\n")
    return ratios, boot


def plot(outdir, rows, events, runs_label):
    """Write compare.svg (and its gnuplot script); returns the SVG's path.
    Raises RuntimeError with gnuplot's message when it fails."""
    ratios, boot = write_data(outdir, rows, events)
    svg = os.path.join(outdir, "compare.svg")
    script = os.path.join(outdir, "compare.gp")
    with open(script, "w") as f:
        f.write(GNUPLOT.format(svg=svg, ratios=ratios, boot=boot, runs=runs_label,
                               last=len(events) - 0.5))
    try:
        proc = subprocess.run(["gnuplot", script], capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise RuntimeError("gnuplot is not installed (make deps installs gnuplot-nox)")
    if proc.returncode != 0:
        raise RuntimeError(f"gnuplot {script} failed: {proc.stderr.strip()[-500:]}")
    return svg
