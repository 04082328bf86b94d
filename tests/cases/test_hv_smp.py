"""More than one physical CPU (docs/SMP.md, "More than one CPU"): the CPUs
come from the ACPI MADT (or the MP table), each started one with
INIT-SIPI-SIPI gets its own tables and says so in the boot log; cpus=N
limits them; a one-CPU machine runs as before.  The machine runs with
MTTCG (one host thread per CPU), as `make run SMP=N` does."""

import re
import time

from vmitest import MTTCG, accel_for, paths, test
from hvguest import DONE, PANIC, PROMPT, ends_cleanly, expect_bad_input, hv_modules
from testguest import tguest_modules


def started(output):
    return [int(n) for n in re.findall(r"vmi-hv: CPU (\d+) started: APIC ID \d+", output)]


@test("hv-smp-bringup", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_bringup(t):
    """-smp 2: both CPUs found in the MADT, CPU 1 started; the guest still
    reaches its shell and answers."""
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    q = t.qemu("-smp", "2", "-m", "256", "-kernel", paths.HV_ELF, "-initrd",
               hv_modules(), accel=MTTCG)
    q.expect(r"CPU found \(ACPI MADT\): APIC ID 1\n", timeout=60)
    q.expect(r"vmi-hv: CPU 1 started: APIC ID 1, its own GDT, IDT, TSSes and stacks", timeout=60)
    q.expect(PROMPT, timeout=300)
    q.send("echo smp-$((6 * 7))\n")
    q.expect(r"smp-42", timeout=60)
    t.check(started(q.output) == [1], f"CPUs started: {started(q.output)}")


@test("hv-smp-cpus-limit", alone="QEMU on -smp 4")
def smp_cpus_limit(t):
    """-smp 4 with cpus=2: CPU 1 started, APIC IDs 2 and 3 not, with the
    reason; -smp 1 starts none and finds the one CPU."""
    guest = tguest_modules(t, "tguest=idle")
    q = t.qemu("-smp", "4", "-m", "128", "-kernel", paths.HV_ELF, "-append",
               "cpus=2 after_load=stop", "-initrd", guest, accel=MTTCG)
    q.expect(r"APIC ID 3 not started: cpus= asks for 2 CPUs", timeout=60)
    t.check(q.wait_exit(timeout=60) == DONE, "after_load=stop did not end with its DONE status")
    t.check(started(q.output) == [1], f"CPUs started: {started(q.output)}")
    t.check("APIC ID 2 not started: cpus= asks for 2 CPUs" in q.output, "APIC ID 2 not refused")
    q = t.qemu("-m", "128", "-kernel", paths.HV_ELF, "-append", "after_load=stop", "-initrd", guest)
    q.expect(r"CPU found \(ACPI MADT\): APIC ID 0\n", timeout=60)
    t.check(q.wait_exit(timeout=60) == DONE, "after_load=stop on -smp 1 did not end with its DONE status")
    t.check(started(q.output) == [], f"CPUs started on -smp 1: {started(q.output)}")



@test("hv-smp-locks-check", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_locks_check(t):
    """locks=check catches a lock taken against the order: lock_selftest=invert
    takes sched_lock inside console_lock, and the hypervisor stops naming both;
    without locks=check the same inversion goes unnoticed.  On -smp 2 CPU 1
    breaks the order (invert-ap) or holds a lock into a guest entry
    (entry-ap) and is caught too: the checks are per CPU.  A guest boots
    under locks=check on -smp 2 (every take and entry checked; the
    exit-heavy pair of hv-smp-parallel-exits shows each CPU's count)."""
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD, paths.TGUEST)
    q = t.qemu("-m", "128", "-kernel", paths.HV_ELF, "-append", "locks=check lock_selftest=invert",
               fatal=[])
    q.expect(r"locks=check: lock order inversion: sched_lock \(rank 10\) taken while holding "
             r"console_lock \(rank 40\) on CPU 0", timeout=60)
    status = q.wait_exit(timeout=60)
    t.check(status == PANIC, f"exit status {status}, expected {PANIC} (internal error)")
    idle = tguest_modules(t, "tguest=idle")
    q = t.qemu("-m", "128", "-kernel", paths.HV_ELF, "-append", "lock_selftest=invert after_load=stop",
               "-initrd", idle)
    q.expect(r"lock_selftest: the inversion went unnoticed \(locks=check is off\)", timeout=60)
    status = q.wait_exit(timeout=60)
    t.check(status == DONE, f"exit status {status}, expected {DONE} (after_load=stop)")
    # On an AP: CPU 1 breaks each per-CPU rule when it joins the run loop.
    for kind, caught in (("invert-ap", r"lock order inversion: sched_lock \(rank 10\) taken while holding "
                                       r"console_lock \(rank 40\) on CPU 1"),
                         ("entry-ap", r"lock_selftest_lock held across a guest entry on CPU 1")):
        q = t.qemu("-smp", "2", "-m", "128", "-kernel", paths.HV_ELF, "-append",
                   f"locks=check lock_selftest={kind}", "-initrd", idle,
                   accel=MTTCG, fatal=[])
        q.expect(r"vmi-hv: PANIC: locks=check: " + caught, timeout=60)
        status = q.wait_exit(timeout=60)
        t.check(status == PANIC, f"lock_selftest={kind}: exit status {status}, expected {PANIC}")
    q = t.qemu("-smp", "2", "-m", "256", "-kernel", paths.HV_ELF, "-initrd",
               hv_modules(), "-append", "locks=check",
               accel=MTTCG)
    q.expect(PROMPT, timeout=300)
    q.send("ls /proc > /dev/null; echo locks-$((6 * 7))\n")
    q.expect(r"locks-42", timeout=60)


@test("hv-smp-sixteen-guests", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_sixteen_guests(t):
    """The guest limit is 16: sixteen test guests (tguest=idle, 16 MiB
    each, with their 8 MiB frame budgets) load on -smp 2 in 512 MiB, each
    reaches its idle loop and the last one answers a key typed to it; a
    seventeenth module pair is refused at load with the limit named."""
    q = t.qemu("-smp", "2", "-m", "512", "-kernel", paths.HV_ELF, "-append", "guest_mem=16M",
               "-initrd", tguest_modules(t, *["tguest=idle"] * 16), accel=MTTCG)
    q.expect(r"vmi-hv: 16 guests share 2 CPUs", timeout=120)
    # Their lines interleave (a line held back is finished later): wait
    # for Ctrl-] l to list all sixteen halted in their idle loops.
    deadline = time.monotonic() + 180
    while True:
        mark = len(q.output)
        q.send("\x1dl")
        q.expect(r"guest16 +\w+ +weight 1[^\n]*\n", timeout=60)
        halted = re.findall(r"\d+ guest\d+ +halted", q.output[mark:])
        if len(halted) == 16 or time.monotonic() > deadline:
            break
        time.sleep(2)
    t.check(len(halted) == 16, f"{len(halted)} of 16 guests halted in their idle loops")
    q.send("\x1d9")
    q.expect(r"console input goes to guest 9 \(guest9\)", timeout=30)
    for n in range(10, 17):     # no digit for these: Ctrl-] n, the next one
        q.send("\x1dn")
        q.expect(r"console input goes to guest %d \(guest%d\)" % (n, n), timeout=30)
    q.send("k")
    q.expect(r"\[guest16\] idle: got k", timeout=30)
    q = t.qemu("-m", "512", "-kernel", paths.HV_ELF, "-append", "guest_mem=16M",
               "-initrd", tguest_modules(t, *["tguest=idle"] * 17))
    expect_bad_input(t, q, r"34 modules given: that is 17 guests, at most 16", "seventeen guests", timeout=60)


def exit_heavy_pair(t, smp):
    """Two test guests making VMI calls in a loop (tguest=exits) on an
    -smp SMP machine under locks=check, until both power off: each
    guest's calls per 200 ms window (the first, warm-up, left out) and
    its count of exits handled while another CPU handled one."""
    q = t.qemu("-smp", str(smp), "-m", "256", "-kernel", paths.HV_ELF, "-append",
               "guest_mem=16M locks=check", "-initrd", tguest_modules(t, "tguest=exits", "tguest=exits"),
               accel=accel_for(smp))
    for _ in range(2):
        q.expect(r"vmi-hv: guest ran \d+ ms: \d+ exits", timeout=240)
    ends_cleanly(t, q, f"two exit-heavy guests on -smp {smp}")
    calls = {}
    for name, window, n in re.findall(r"\[(guest\d)\] exits: window ([0-9a-f]{8}): calls ([0-9a-f]{8})",
                                      q.output):
        if int(window, 16) > 0:
            calls.setdefault(name, []).append(int(n, 16))
    # From the end reports (the activation log prints the counters too).
    ends = q.output.split("vmi-hv: guest powered off:")[1:]
    parallel = [(int(m.group(1)), int(m.group(2))) for m in
                (re.search(r"vmi-hv: exits handled while another CPU was handling one: (\d+) of (\d+)", e)
                 for e in ends) if m]
    checked = [int(n) for n in re.findall(r"vmi-hv: locks=check: CPU \d+ checked (\d+) lock takes", q.output)]
    t.check(len(checked) == smp and min(checked) > 0,
            f"locks=check takes checked per CPU: {checked}, wanted {smp} CPUs each above 0")
    t.check(sorted(calls) == ["guest1", "guest2"], f"windows seen for {sorted(calls)}")
    t.check(len(parallel) == 2, f"{len(parallel)} parallel-exit counts in the end reports")
    rate = {name: sum(c) / (0.2 * len(c)) for name, c in calls.items()}
    return rate, parallel


# Two guests that do little but exit, each on its own CPU, spend most of
# their time in exit handling: the share that overlaps is large when the
# guests' locks let them proceed at once, and nil under one shared lock.
PARALLEL_SHARE = 0.10


@test("hv-smp-parallel-exits", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_parallel_exits(t):
    """Two exit-heavy guests on -smp 2 (MTTCG): their exits are handled on
    both CPUs at once, so the end reports count exits handled, under their
    guest's lock, while the other CPU handled one under its own: at least
    PARALLEL_SHARE of all exits (one lock around all exit handling would
    give none).  Their call rates on -smp 2 and -smp 1 are noted."""
    rate2, parallel = exit_heavy_pair(t, 2)
    t.note(f"-smp 2: VMI calls/s {', '.join(f'{n} {r:.0f}' for n, r in sorted(rate2.items()))}; "
           f"exits handled in parallel (of all): {parallel}")
    share = sum(p for p, _ in parallel) / max(1, sum(n for _, n in parallel))
    t.check(share >= PARALLEL_SHARE,
            f"{share:.1%} of exits handled while another CPU handled one, "
            f"under {PARALLEL_SHARE:.0%}: {parallel}")
    rate1, _ = exit_heavy_pair(t, 1)
    t.note(f"-smp 1: VMI calls/s {', '.join(f'{n} {r:.0f}' for n, r in sorted(rate1.items()))}; "
           f"-smp 2 / -smp 1 total: {sum(rate2.values()) / max(1, sum(rate1.values())):.2f}")


@test("hv-smp-mp-table-only", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_mp_table_only(t):
    """No ACPI (-machine pc,acpi=off): the CPUs come from the MP table alone
    (SeaBIOS lists one per package, hence sockets=2), CPU 1 is started, and
    a guest of two vCPUs (tguest=smp) runs on both and powers off."""
    q = t.qemu("-machine", "pc,acpi=off", "-smp", "2,sockets=2", "-m", "128", "-kernel", paths.HV_ELF,
               "-append", "vcpus=2", "-initrd", tguest_modules(t, "tguest=smp smp_vcpus=2"), accel=MTTCG)
    q.expect(r"vmi-hv: CPU found \(MP table\): APIC ID 1\n", timeout=60)
    q.expect(r"vmi-hv: CPU 1 started: APIC ID 1", timeout=60)
    q.expect(r"tguest: smp: survived, APs 00000001\n", timeout=120)
    ends_cleanly(t, q, "the MP table's CPUs")
    t.check("ACPI MADT" not in q.output, "the CPUs were read from an ACPI MADT, not the MP table")
