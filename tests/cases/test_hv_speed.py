"""System calls without an exit (docs/VROM.md, "The ROM's IRET, cheap exits, system calls without an exit"): the mechanisms, measured by the
hypervisor's counters, never by the clock.

The guest runs /tests/syscall_exits: 100,000 getppid() calls through
int $0x80, then a spin in user mode for as long as the calls took,
between pauses at which the test reads the counters with Ctrl-] s.  The
spin window holds what the time costs (the guest's own timer ticks: the
alarm, the 8259's mask and EOI) and a pause, as the calls window does,
so calls minus spin is what the calls add.  With the fast paths on, the
calls go through the guest's own gate in the CPU's IDT and return
through the ROM's IRET: they add no #GP exit (vector 13, the old
int $0x80 path), no IRET hypercall, and fewer than 100 exits of any kind
that are not the hypervisor's own interrupts (the 8259's, the local
APIC's).  With fastpaths=off the same calls cost at least two exits each:
the test shows the counters see the difference.
"""

from vmitest import paths, test
from hvguest import HV_INTERRUPT_VECTORS, MARKER, hv_modules
from hvstats import hv_statistics
from verdicts import judge_tries

CALLS = 100000


def counters(q):
    """Ctrl-] s: ({vector: exits}, {VMI call: count})."""
    s = hv_statistics(q)
    return s.exits_by_vector, s.vmi_calls


def syscall_window(t, fastpaths):
    """Exits by vector and VMI calls that CALLS getppid() calls add: the
    calls window less the spin window of the same length."""
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    # quiet: the kernel's late boot messages (the TSC clocksource's, at
    # about 2.6 s) are console output that may fall in one window and not
    # the other: ~120 OUTB exits that no system call made.
    cmdline = "console=ttyS0,115200 quiet vmitest=syscall_exits"
    hv_cmd = "" if fastpaths else "fastpaths=off"
    module = hv_modules(cmdline)
    args = ["-m", "256", "-kernel", paths.HV_ELF, "-initrd", module]
    if hv_cmd:
        args += ["-append", hv_cmd]
    q = t.qemu(*args)
    q.expect(MARKER, timeout=120)
    marks = []
    for where in ("before", "calls", "spin"):
        q.expect(r"SYSCALL-EXITS-PAUSE %s" % where, timeout=600)
        marks.append(counters(q))
        q.send("\n")
    q.expect(r"SYSCALL-EXITS calls=%d ppid=\d+ cycles=\d+" % CALLS, timeout=60)
    q.kill()
    before, calls, spin = marks

    def added(i):
        keys = set(before[i]) | set(calls[i]) | set(spin[i])
        d = {k: (calls[i].get(k, 0) - before[i].get(k, 0)) - (spin[i].get(k, 0) - calls[i].get(k, 0))
             for k in keys}
        return {k: n for k, n in d.items() if n}

    def window(a, b, i):
        return {k: b[i].get(k, 0) - a[i].get(k, 0) for k in b[i] if b[i].get(k, 0) - a[i].get(k, 0)}

    t.note(f"calls window: exits by vector {window(before, calls, 0)}, VMI calls {window(before, calls, 1)}")
    t.note(f"spin window:  exits by vector {window(calls, spin, 0)}, VMI calls {window(calls, spin, 1)}")
    return added(0), added(1), window(before, calls, 0), window(before, calls, 1)


def guest_caused(vec):
    """Exits the guest caused: all but the hypervisor's own interrupts."""
    return sum(n for v, n in vec.items() if v not in HV_INTERRUPT_VECTORS)


# Boots to try: the spin window matches the calls window in TSC time, but
# on a busy host their timer ticks (about six exits each: the alarm's
# interrupt, SetAlarm, the 8259's mask, EOI and unmask) can differ by a
# few dozen.  Noise of that kind is small either way; calls that exit are
# 100,000 exits or more in every try.  So for the total of exits the first
# try under 100 counts; no #GP exit and no IRET hypercall must hold in
# every try (verdicts.judge_tries).
TRIES = 3


@test("hv-syscall-no-exit", alone="exits in a spin window as long as the calls took")
def syscall_no_exit(t):
    """100,000 getppid() calls add no int $0x80 #GP, fewer than 100 IRET
    hypercalls, and fewer than 100 exits the guest caused."""
    def one_try(attempt):
        vec, calls, _, _ = syscall_window(t, fastpaths=True)
        t.note(f"try {attempt}: {CALLS} getppid() add: exits by vector {vec}; VMI calls {calls}; "
               f"{guest_caused(vec)} guest-caused exits in all")
        return vec, calls

    def always(figures):
        # No host load makes int $0x80 trap or the ROM's IRET exit: these
        # hold on every try, not only on the best one.
        vec, calls = figures
        if vec.get(13, 0):
            yield f"{vec.get(13, 0)} #GP exits: int $0x80 still traps"
        if calls.get("IRET", 0) >= 100:
            yield f"{calls.get('IRET', 0)} IRET hypercalls: the ROM's IRET is not used"

    problems, (vec, _) = judge_tries(one_try, TRIES, always, lambda f: abs(guest_caused(f[0])) < 100)
    t.check(not problems, "; ".join(problems))
    t.check(abs(guest_caused(vec)) < 100, f"{guest_caused(vec)} exits the guest caused for {CALLS} system calls")


@test("hv-syscall-fastpaths-off", alone="exits in a spin window as long as the calls took")
def syscall_fastpaths_off(t):
    """fastpaths=off turns the direct gate and the ROM's IRET off: every
    call in the calls window is an int $0x80 exit and an IRET hypercall
    again."""
    _, _, vec, calls = syscall_window(t, fastpaths=False)
    t.check(vec.get(13, 0) >= CALLS, f"only {vec.get(13, 0)} #GP exits for {CALLS} int $0x80")
    t.check(calls.get("IRET", 0) >= CALLS, f"only {calls.get('IRET', 0)} IRET hypercalls for {CALLS} calls")
