"""Rates a guest controls (docs/TIME.md, "Rates a guest controls"): the
alarm flood measured; and the x87's exceptions reaching a user program
(hv-fpexcept-vs-native).

The victim (tguest=busy, guest 2) counts loops in 200 ms windows of TSC
time, beside a neighbour that halts with IRQ0 masked (tguest=f:partner),
then beside the same neighbour with a periodic alarm of period 1 cycle
armed (tguest=f:partner-flood).  The hypervisor raises the period to its
minimum and spends no timer interrupt on an alarm whose IRQ0 request is
still latched, so the victim's throughput beside the flood stays within
10% of its throughput beside the quiet neighbour (the issue's
requirement).  QEMU runs with -icount (ICOUNT): the guest's TSC and the
timers advance with the instructions executed, not the host's clock, so
a window's count is what the victim could execute in 200 ms of the
machine's time whatever else the shared host runs (without it single
windows moved by half either way); what the flood costs (timer
interrupts, world switches, polls) is instructions taken from the
victim's windows.  Two boots of each, alternating, each side's median
window; the figures are printed.  The hostile suite runs the flood cases themselves
(block "floods and consoles" in test_hv_hostile.py).
"""

import re
import statistics

from vmitest import paths, test
from testguest import tguest_modules
from guest_end import HV_BROKEN, check_invariants
from hvstats import hv_statistics
from hvguest import GUEST_BROKEN, boot_hv, boot_native, program_lines, quiet_console, stop_console_guest_and_quit

WINDOW = r"\[guest2\] busy: window ([0-9a-f]{8}): loops ([0-9a-f]{8})"
# 8 ns of machine time per instruction; no sleeping when every vCPU
# halts (the clock jumps to the next timer instead).
ICOUNT = ("-icount", "shift=3,sleep=off")
CHARGED = r"vmi-hv: alarm limits \(100 us minimum\): \d+ SetAlarm calls raised, \d+ expiries found their IRQ0 or LVTT vector still requested, (\d+) us of alarm work charged to this guest"
RAISED = (r"vmi-hv: guest guest1: SetAlarm \(flags 100\) period 1 cycles, expiry \d+: "
          r"raised to the minimum, 100 us")


def victim_beside(t, partner):
    """One boot: the partner as guest 1, the victim as guest 2; returns the
    victim's loop counts (the first window left out: the partner may still
    be starting) and the hypervisor's timer interrupts during the windows."""
    q = t.qemu(*ICOUNT, "-m", "128", "-kernel", paths.HV_ELF, "-initrd",
               tguest_modules(t, f"tguest=f:{partner}", "tguest=busy"), fatal=HV_BROKEN)
    q.expect(r"\[guest2\] busy: window 00000000", timeout=120)
    s0 = hv_statistics(q)
    q.expect(r"\[guest2\] busy: done", timeout=120)
    s1 = hv_statistics(q)
    loops = [int(m.group(2), 16) for m in re.finditer(WINDOW, q.output)][1:]
    ms = s1.up_ms - s0.up_ms
    irqs = s1.timer_irqs - s0.timer_irqs
    # The console stops the partner (it has the console once the victim
    # ended): a partner on a period-1 alarm may never get to its input,
    # since under -icount one tick's handling takes about the period and
    # IRQ0 stays in front of the UART's IRQ4; it harms only itself.  Then
    # the hypervisor, up after a stop, exits on 'q'.
    stop_console_guest_and_quit(q)
    check_invariants(t, q.output, partner)
    t.check(len(loops) == 7, f"{partner}: {len(loops)} windows counted, expected 7")
    flood = partner != "partner"
    t.check(bool(re.search(RAISED, q.output)) == flood,
            f"{partner}: the period-1 alarm was {'not ' if flood else ''}reported raised")
    # Each guest's end report follows the line that says it ended.
    charged = []
    for n in (2, 1):
        m = re.search(rf"vmi-hv: guest {n} \(guest{n}\) has ended(?s:.*?){CHARGED}", q.output)
        t.check(m, f"{partner}: no alarm-limit line in guest {n}'s end report")
        charged.append(int(m.group(1)) if m else -1)
    return loops, irqs * 1000 // max(ms, 1), charged


@test("hv-alarm-flood-throughput")
def hv_alarm_flood_throughput(t):
    """The victim's median 200 ms window beside a guest flooding alarms with
    IRQ0 masked is within 10% of its best beside the same guest quiet."""
    t.require(paths.HV_ELF, paths.TGUEST)
    windows = {"partner": [], "partner-flood": []}
    rates = {"partner": [], "partner-flood": []}
    for _ in range(2):
        for partner in windows:
            loops, irq_rate, _ = victim_beside(t, partner)
            windows[partner] += loops
            rates[partner].append(irq_rate)
            t.note(f"beside {partner}: loops per window {loops}; {irq_rate} hypervisor timer interrupts per second")
    med = {p: statistics.median(w) if w else 0 for p, w in windows.items()}
    ratio = med["partner-flood"] / max(med["partner"], 1)
    t.note(f"victim throughput (median loops per 200 ms) beside the alarm flood / beside the quiet guest: "
           f"{med['partner-flood']:.0f} / {med['partner']:.0f} = {ratio:.3f} (required >= 0.90)")
    t.check(ratio >= 0.9, f"victim throughput ratio {ratio:.3f} beside the alarm flood, required >= 0.90")
    # What the ratio rests on, free of the host's load: the flood costs
    # the hypervisor no timer interrupts (at most one per minimum period
    # would be 10,000 a second).
    t.check(max(rates["partner-flood"]) <= max(rates["partner"]) + 100,
            f"hypervisor timer interrupts per second beside the flood {rates['partner-flood']}, "
            f"beside the quiet guest {rates['partner']}")


@test("hv-fpexcept-vs-native")
def hv_fpexcept_vs_native(t):
    """/tests/fpexcept (guest/programs/fpexcept.c) natively and under
    vmi-hv: unmasked x87 divide-by-zero and invalid operation, one pending
    across a system call, SSE and integer divide by zero, each in its own
    child; the outputs are identical line by line, SIGFPE with the
    exception's code where natively (CR0.NE: #MF, not the lost IRQ13)."""
    native = boot_native(t, fatal=GUEST_BROKEN)
    native_lines = program_lines(t, native, "native", "/tests/fpexcept", "FPEXCEPT start")
    native.kill()
    q = boot_hv(t, fatal=GUEST_BROKEN)
    quiet_console(q)
    hv_lines = program_lines(t, q, "vmi-hv", "/tests/fpexcept", "FPEXCEPT start")
    t.check(any("x87 divide by zero unmasked: SIGFPE code 3" == line for line in native_lines),
            f"natively the x87 divide by zero is not SIGFPE/FPE_FLTDIV: {native_lines}")
    differ = [f"native '{a}', vmi-hv '{b}'" for a, b in zip(native_lines, hv_lines) if a != b]
    t.check(len(native_lines) == len(hv_lines), f"native printed {len(native_lines)} lines, vmi-hv {len(hv_lines)}")
    t.check(not differ, f"{len(differ)} lines differ:\n  " + "\n  ".join(differ))
    for line in hv_lines[1:-1]:
        t.note(line)


@test("hv-alarm-work-charged")
def hv_alarm_work_charged(t):
    """Beside a guest that takes a period-1 alarm (raised to 100 us) and
    halts between its ticks, the victim's timer interrupts are the ticking
    guest's: the cycles from such an interrupt's exit to the poll that
    found the alarm are charged to it (docs/TIME.md, "Rates a guest
    controls"), not to the victim, whose report shows none.  Under
    -icount; the victim's throughput beside the ticks is printed, as a
    figure (10,000 ticks a second, each a world switch, are real work)."""
    t.require(paths.HV_ELF, paths.TGUEST)
    quiet, _, _ = victim_beside(t, "partner")
    ticks, irq_rate, charged = victim_beside(t, "partner-ticks")
    victim_us, owner_us = charged
    t.note(f"beside the ticking guest: {irq_rate} hypervisor timer interrupts per second; "
           f"{owner_us} us of alarm work charged to it, {victim_us} us to the victim")
    t.note(f"victim throughput beside the ticking guest / beside the quiet guest: "
           f"{statistics.median(ticks):.0f} / {statistics.median(quiet):.0f} = "
           f"{statistics.median(ticks) / max(statistics.median(quiet), 1):.3f}")
    t.check(owner_us > 0, "no alarm work charged to the guest that owns the alarm")
    t.check(victim_us == 0, f"{victim_us} us of alarm work charged to the victim, which has no alarm")
