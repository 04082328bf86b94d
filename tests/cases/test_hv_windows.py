"""Narrow windows of the run loop on several CPUs, made wide with the
test-only options debug_pick_delay= and debug_halt_delay= (docs/HV.md,
"The hypervisor command line"), so that a test lands in them every run."""

import re
import statistics
import time

from vmitest import MTTCG, accel_for, paths, test
from testguest import tguest_modules
from guest_end import HV_BROKEN, ends_powered_off
from hvguest import GUEST_STOPPED, stop_console_guest_and_quit

TWO_CPUS = "QEMU on -smp 2 with MTTCG: both host CPUs"


@test("hv-smp-death-picked-never-entered", alone=TWO_CPUS)
def smp_death_picked_never_entered(t):
    """tguest=smpdeath, vcpus=4 on -smp 2, 2 ms slices, 2 ms spun after
    every pick: vCPUs 1-3 spin (two to a CPU, each CPU switching between
    its two), vCPU 0 powers off.  The dying CPU's next pick, and the other
    CPU's pick in flight or next, are vCPUs of the dead guest picked and
    never entered, one on each CPU.  Each must leave the scheduler there,
    or each CPU sees the other's RUNNING and neither reaps the guest: the
    machine never powers off."""
    q = t.qemu("-smp", "2", "-m", "128", "-kernel", paths.HV_ELF, "-append",
               "guest_mem=16M vcpus=4 slice=2 debug_pick_delay=2000 locks=check",
               "-initrd", tguest_modules(t, "tguest=smpdeath smp_vcpus=4"),
               accel=MTTCG, fatal=HV_BROKEN)
    q.expect(r"test-only delays: 2000 us after each pick", timeout=30)
    q.expect(r"tguest: smpdeath: every AP counted; powering off\n", timeout=60)
    q.expect(r"vmi-hv: guest ran \d+ ms: \d+ exits", timeout=30)
    t.check("picked on CPU" in q.output and "but never entered, leaves the scheduler" in q.output,
            "no vCPU was picked and never entered: the window was missed")
    ends_powered_off(t, q, "a guest dying while its siblings were picked")


@test("hv-smp-console-stop-while-halting", alone=TWO_CPUS)
def smp_console_stop_while_halting(t):
    """tguest=idle pinned to CPU 1 (guest1.cpus=1) on -smp 2, 2 s spun in
    each halt's handling: Ctrl-] q typed as it says it waits for input
    lands while CPU 1 handles its Halt (the console, on CPU 0, sees its
    vCPU 0 running there and leaves the request).  That vCPU halts for good
    at that exit (no byte comes to wake it), so the request must be looked
    at as CPU 1's loop comes back from the exit, not at the next exit: the
    guest is stopped and the hypervisor stays up on the console."""
    q = t.qemu("-smp", "2", "-m", "128", "-kernel", paths.HV_ELF, "-append",
               "guest_mem=16M guest1.cpus=1 debug_halt_delay=2000000 locks=check",
               "-initrd", tguest_modules(t, "tguest=idle"), accel=MTTCG, fatal=HV_BROKEN)
    q.expect(r"idle: waiting for input\n", timeout=60)
    status = stop_console_guest_and_quit(q, timeout=20)
    t.check(status == GUEST_STOPPED, f"exit status {status}, expected the guest-stopped status")


TICKER = r"ticker: window ([0-9a-f]{8}) loops ([0-9a-f]{8})"


@test("hv-smp3-console-keys-beside-long-exit", alone="QEMU on -smp 3 with MTTCG: more threads than host CPUs")
def smp3_console_keys_beside_long_exit(t):
    """-smp 3: tguest=f:partner-ticks, the console guest, alone on CPU 1
    with every halt's exit 1.5 s long (debug_halt_delay=): its lock is
    nearly always held; tguest=ticker (a 1 ms tick, loops counted per
    100 ms window, printed at its end: no console_lock meanwhile) alone on
    CPU 2.  Ctrl-] l, s and r, typed on CPU 0, each
    need the partner's lock; waiting for it with sched_lock held stopped
    the ticker's CPU at its next tick for as long (14 windows in a row and
    more with no loops were seen).  The commands wait without sched_lock: no run
    of 8 emptied windows (the host's load, more QEMU threads than host
    CPUs, empties up to 4 in a row), and every command is answered."""
    q = t.qemu("-smp", "3", "-m", "128", "-kernel", paths.HV_ELF, "-append",
               "guest_mem=16M guest1.cpus=1 guest2.cpus=2 debug_halt_delay=1500000 locks=check",
               "-initrd", tguest_modules(t, "tguest=f:partner-ticks", "tguest=ticker ticker_windows=40 ticker_quiet"),
               accel=MTTCG, fatal=HV_BROKEN)
    q.expect(r"floods: partner taking a period-1 alarm: halting between ticks", timeout=60)
    time.sleep(0.5)			# the ticker's windows begin
    for key in ("\x1dl", "\x1ds", "\x1dr"):
        q.send(key)
        time.sleep(0.2)
    q.expect(r"\[guest2\] floods: ticker: done", timeout=120)
    # Each answer comes once the partner's lock is free: wait for the last.
    deadline = time.monotonic() + 30
    while "vmi-hv: peaks reset: " not in q.output and time.monotonic() < deadline:
        time.sleep(0.2)
    for pattern in (r"vmi-hv: 2 guests \(Ctrl-\] N gives", r"vmi-hv: statistics \(guest running", r"vmi-hv: peaks reset: "):
        got = len(re.findall(pattern, q.output))
        t.check(got == 1, f"/{pattern}/ answered {got} times, not once")
    joined = "".join(re.findall(r"^\[guest2\] ([^\n]*)", q.output, re.M))
    loops = [int(n, 16) for _, n in re.findall(TICKER, joined)][1:]
    med = statistics.median(loops) if loops else 0
    run = longest = 0
    for n in loops:
        run = run + 1 if n * 50 < med else 0
        longest = max(longest, run)
    t.note(f"ticker loops per 100 ms: median {med:.0f}; the longest run of emptied windows {longest}: {loops}")
    t.check(len(loops) >= 30 and med > 0, f"ticker windows: {loops}")
    t.check(longest < 8, f"{longest} ticker windows in a row kept less than a 50th of the median's loops: its CPU stalled")


@test("hv-smp-ticker-beside-reboot-loop", alone=TWO_CPUS)
def smp_ticker_beside_reboot_loop(t):
    """-smp 2: tguest=gdtreboot with 512 MiB, alone on CPU 1, reboots as
    soon as it runs, again and again; tguest=ticker (a 1 ms tick) alone on
    CPU 0.  Each reboot loads the guest again (its memory zeroed, its
    modules copied in: some 850 ms under TCG); done with sched_lock held,
    the ticker's CPU waited for it at its next tick, every reboot.  The
    reload is done without sched_lock (docs/HV.md, "Power-off and
    reboot"): the ticker's longest exit stays well below one reload
    (the host's load alone gave up to ~100 ms).  So are each end's report
    and the return of its frames (93 ms the first time under TCG): the
    hypervisor's own longest hold of sched_lock by a reap, printed after
    the ticker's end, stays far below that."""
    q = t.qemu("-smp", "2", "-m", "640", "-kernel", paths.HV_ELF, "-append",
               "guest_mem=16M guest1.mem=512M guest1.cpus=1 guest2.cpus=0 locks=check",
               "-initrd", tguest_modules(t, "tguest=gdtreboot", "tguest=ticker ticker_windows=30 ticker_quiet"),
               accel=accel_for(2), fatal=HV_BROKEN)
    q.expect(r"\[guest2\] floods: ticker: done", timeout=120)
    m = q.expect(r"vmi-hv: guest powered off:[^\n]*\n(?:[^\n]*\n)*?vmi-hv: the longest exit: (\d+) us", timeout=30)
    longest = int(m.group(1))
    held = int(q.expect(r"vmi-hv: guest ends held sched_lock at most (\d+) us at once", timeout=30).group(1))
    reboots = [int(n) for n in re.findall(r"guest guest1 starts again from its modules \(reboot (\d+)\)", q.output)]
    joined = "".join(re.findall(r"^\[guest2\] ([^\n]*)", q.output, re.M))
    loops = [int(n, 16) for _, n in re.findall(TICKER, joined)][1:]
    t.note(f"ticker: longest exit {longest} us; a reap held sched_lock {held} us at most; {max(reboots, default=0)} reboots of guest1; "
           f"loops per 100 ms {loops}")
    t.check(max(reboots, default=0) >= 3, f"guest1 rebooted {max(reboots, default=0)} times: too few to measure")
    run = emptied = 0
    med = statistics.median(loops) if loops else 0
    for n in loops:
        run = run + 1 if n * 50 < med else 0
        emptied = max(emptied, run)
    t.check(len(loops) >= 25 and med > 0, f"ticker windows: {loops}")
    t.check(emptied < 8, f"{emptied} ticker windows in a row kept less than a 50th of the median's loops: its CPU stalled")
    t.check(longest < 400000, f"the ticker's longest exit took {longest} us: its CPU waited for guest1's reload")
    t.check(held < 20000, f"a guest's end held sched_lock {held} us at once: every CPU's scheduling waited for its report")
