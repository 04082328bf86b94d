"""Running a guest (docs/HV.md, "Running the guest"): the vCPU, the world switch, trap routing,
exception delivery, port I/O, the hypercall gate and VMI activation.

Two kinds of guest:
  - the real one (build/guest/bzImage, Linux 6.1 with the VMI patches),
    booted from the ISO's default entry, up to VMI activation and beyond;
  - the tiny test guest (tests/guests/, build/tests/guests/tguest.bzImage),
    which does one forbidden thing chosen by its command line, to check
    that each is caught with a diagnostic while the hypervisor stays up.

A stopped guest leaves the hypervisor running: 's' on the serial console
prints statistics (the uptime grows), 'q' exits with status 13
(HV_EXIT_GUEST_STOPPED = 6 in hv/include/exit_codes.h).
"""

import re

from vmitest import ExpectTimeout, paths, test
from testguest import tguest_modules
from hvguest import (GUEST_FATAL, GUEST_FAULT_STOPS, GUEST_REBOOT, GUEST_STOPPED_LINE, HV_FAULT_STOPS,
                     LINE_END, MARKER, NATIVE_REBOOT, REGS, ends_cleanly, hv_modules, shell_search,
                     stays_responsive)
from guest_end import HV_BROKEN, audits
from hvstats import hv_statistics



def tguest(t, what, append=None):
    """Boot the hypervisor (QEMU multiboot) with the test guest doing `what`."""
    args = ["-m", "128", "-kernel", paths.HV_ELF, "-initrd", tguest_modules(t, f"tguest={what}")]
    if append:
        args += ["-append", append]
    q = t.qemu(*args)
    q.expect(r"vmi-hv: vcpu: guest entry eip=00100000 esi=00010000 cs=0011", timeout=60)
    q.expect(r"tguest: hello from the test guest, command line: tguest=%s" % what, timeout=30)
    return q


def counters_note(t, q):
    m = re.search(r"vmi-hv: emulated by kind:([^\n]*)\n", q.output)
    if m:
        t.note("emulated by kind:" + m.group(1))


@test("hv-tguest-unsupported-instruction")
def tguest_unsupported(t):
    """A privileged instruction the emulator does not know (sysexit, 0f 35):
    stopped with the bytes, EIP and registers; the hypervisor answers."""
    q = tguest(t, "unsupported")
    q.expect(r"tguest: executing sysexit")
    # Said once: the emulator's reason already begins "unsupported instruction".
    q.expect(r"vmi-hv: guest stopped: unsupported instruction 0f 35\r?\n", timeout=30)
    q.expect(r"vmi-hv: instruction at guest eip 0011:001[0-9a-f]{5} \(vCPU 0\): 0f 35")
    q.expect(REGS)
    q.expect(r"guest cr0=00000011")
    q.expect(r"vmi-hv: emulated by kind:[^\n]*cli=1")
    counters_note(t, q)
    stays_responsive(t, q)


@test("hv-tguest-triple-fault")
def tguest_triple_fault(t):
    """IDT limit 0 then ud2: #UD, #GP and #DF all fail to deliver."""
    q = tguest(t, "triple")
    q.expect(r"tguest: IDT limit 0, then ud2")
    # The delivery chain, each step named: #UD (6) beyond the limit
    # raises #GP (13), which cannot be delivered either, nor the #DF.
    want = (r"triple fault: vector 6, then 13 \(beyond the IDT limit\), "
            r"then the double fault \(beyond the IDT limit\)")
    m = q.expect(GUEST_STOPPED_LINE + r"\n", timeout=30)
    t.check(re.fullmatch(want, m.group(1)), f"guest stopped: {m.group(1)}; expected /{want}/")
    q.expect(r"vmi-hv: at guest eip 0011:001[0-9a-f]{5} \(vCPU 0\)\r?\n")
    q.expect(REGS)
    stays_responsive(t, q)


@test("hv-tguest-outside-memory")
def tguest_outside_memory(t):
    """Touching guest-physical memory beyond its RAM is a rule break."""
    q = tguest(t, "outside", append="guest_mem=32M")
    q.expect(r"tguest: reading guest-physical 0x3f000000")
    m = q.expect(r"vmi-hv: guest stopped: page fault at 3f000000[^\n]*\n", timeout=30)
    t.note(m.group(0).strip())
    q.expect(REGS)
    stays_responsive(t, q)


@test("hv-tguest-page-fault-delivery")
def tguest_page_fault_delivery(t):
    """The guest's own #PF handler gets the fault (CR2, error code) through
    its IDT, irets back and goes on; paging with 4 MiB pages via the vTLB."""
    q = tguest(t, "pagefault")
    q.expect(r"tguest: paging on", timeout=30)
    q.expect(r"tguest: page fault handled: count 00000001 cr2 02000000 error 00000000", timeout=30)
    q.expect(r"vmi-hv: guest stopped: unsupported instruction", timeout=30)
    stays_responsive(t, q)


@test("hv-tguest-vmi-init")
def tguest_vmi_init(t):
    """int $0x82 with edi = 4 (Init) activates; a call the hypervisor has
    no code for (SetPxELong, a PAE call, made straight through int $0x82:
    its ROM slot answers without the hypervisor) answers unsupported, -38 in eax and
    0xffffffff in edx (docs/VROM.md, "Transport", item 6), logged once
    and counted, and the guest runs on to its Shutdown."""
    q = tguest(t, "vmi")
    m = q.expect(r"vmi-hv: guest activated VMI after (\d+) emulated instructions, (\d+) shadow faults "
                 r"\((\d+) ms since hypervisor start", timeout=30)
    q.expect(r"tguest: Init returned 00000000")
    q.expect(r"VMI call 48 \(SetPxELong\) answered unsupported \(the hypervisor has no code for it\)",
             timeout=30)
    q.expect(r"tguest: SetPxELong returned eax ffffffda edx ffffffff\n", timeout=30)
    q.expect(r"vmi-hv: guest powered off: the guest called Shutdown\n", timeout=30)
    q.expect(r"vmi-hv: VMI calls with no code answered unsupported: 1\n", timeout=30)
    ends_cleanly(t, q, timeout=30)


@test("hv-tguest-trapped-after-activation")
def tguest_trapped_after_activation(t):
    """The counter hv-guest-sanity-vs-native expects to be 0 counts: after
    VMI Init the test guest runs three privileged instructions (mov from
    cr0, emulated, not a stop) and shuts down; the hypervisor reports
    exactly 3 trapped after activation."""
    q = tguest(t, "trapped")
    q.expect(r"tguest: VMI Init, then 3 x mov %cr0, %eax, then Shutdown")
    q.expect(r"vmi-hv: guest activated VMI", timeout=30)
    q.expect(r"vmi-hv: guest powered off: the guest called Shutdown\n", timeout=30)
    m = q.expect(r"vmi-hv: privileged instructions trapped after activation: (\d+)\n", timeout=30)
    t.note(m.group(0).strip())
    t.check(m.group(1) == "3", f"privileged instructions trapped after activation: {m.group(1)}, expected 3")
    ends_cleanly(t, q, timeout=30)


def guest_end(t, q):
    """After `reboot -f` (the kernel calls VMI Reboot): the hypervisor
    reports the reboot and exits with the guest-reboot status; returns
    (run ms, exits, exits/s)."""
    q.expect(r"vmi-hv: guest reboot: the guest called Reboot \(hard, how 1\)", timeout=60)
    m = q.expect(r"vmi-hv: guest ran (\d+) ms: (\d+) exits, (\d+) exits/s\n", timeout=30)
    q.expect(r"vmi-hv: stopped \(exit code 7\): guest reboot", timeout=30)
    status = q.wait_exit(timeout=30)
    t.check(status == GUEST_REBOOT, f"exit status {status}, expected {GUEST_REBOOT}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


@test("hv-guest-linux-iso")
def guest_linux_iso(t):
    """The ISO's default entry: GRUB -> vmi-hv -> the real Linux guest,
    deprivileged from its first instruction, paravirtualized from VMI
    activation on, to the init marker (mode=vmi) and the shell: a command
    typed on the serial console reaches the guest shell through the
    virtual UART and its output comes back; dmesg shows the ROM and the
    VMI time device; the hypervisor's escape (Ctrl-] s) still works;
    `reboot -f` ends the run with the guest-reboot exit status."""
    t.require(paths.ISO)
    q = t.qemu("-m", "256", "-cdrom", paths.ISO, fatal=GUEST_FATAL)
    q.expect(r"vmi-hv: vcpu: guest entry eip=00100000", timeout=90)
    m = q.expect(r"vmi-hv: guest activated VMI after (\d+) emulated instructions, (\d+) shadow faults "
                 r"\((\d+) ms since hypervisor start, (\d+) ms since guest start\)", timeout=180)
    kinds = q.expect(r"vmi-hv: emulated by kind:([^\n]*)\n")
    t.note(f"activation: {m.group(1)} emulated instructions, {m.group(2)} shadow faults, "
           f"{m.group(3)} ms after hypervisor start ({m.group(4)} ms of guest); by kind:{kinds.group(1)}")
    q.expect(r"Detected VMI ROM version 13\.0", timeout=180)
    q.expect(r"VMI: paravirtual mode, 65536 KiB reserved at the top", timeout=60)
    q.expect(r"Linux version 6\.1", timeout=60)
    q.expect(r"VMI: VMI timer: [1-9]\d* Hz cycle counter, alarm \d+ Hz, clockevent and clocksource vmi-timer",
             timeout=120)
    q.expect(r"serial8250: ttyS0 at I/O 0x3f8 \(irq = 4, base_baud = 115200\) is a 16550A", timeout=180)
    m = q.expect(MARKER, timeout=240)
    t.check(m.group(3) == "vmi", f"guest reports mode {m.group(3)}")
    t.note(f"QEMU start to init marker under the hypervisor through GRUB: {q.elapsed():.1f}s")
    q.expect(r"vmi-guest# ", timeout=60)
    q.send("echo typed-$((6 * 7))-back\n")
    q.expect(r"typed-42-back", timeout=60)
    q.expect(r"vmi-guest# ", timeout=60)
    m = shell_search(q, "dmesg | grep -c -e 'Detected VMI ROM version 13.0' -e 'clockevent and clocksource vmi-timer'"
                     " -e 'Switched to clocksource vmi-timer'", r"^(\d+)$")
    t.check(m.group(1) == "3", f"dmesg has {m.group(1)} of the 3 VMI lines")
    q.expect(r"vmi-guest# ", timeout=60)
    # GetWallclockTime: the CMOS RTC read at boot (QEMU's RTC is the host's UTC).
    m = shell_search(q, "date -u +%Y", r"^(\d+)$")
    t.check(int(m.group(1)) >= 2024, f"guest wall clock says year {m.group(1)}")
    q.expect(r"vmi-guest# ", timeout=60)
    irq = hv_statistics(q).interrupts
    t.check(irq["delivered"] > 0 and irq["alarms"] > 0, f"no interrupts: {irq}")
    t.note(f"{irq['delivered']} virtual interrupts delivered, {irq['alarms']} alarms, "
           f"alarm lateness at worst {irq['late_us']} us, {irq['mean_late_us']} us on average (TCG)")
    q.send("\n")
    q.expect(r"vmi-guest# ", timeout=60)
    q.send("reboot -f\n")
    ms, exits, rate = guest_end(t, q)
    t.note(f"guest ran {ms} ms, {exits} exits, {rate} exits/s")


def sanity_lines(t, q):
    """The sanity program's output after the marker, as test_foundation checks it."""
    out = []
    m = q.expect(r"SANITY forks=(\d+) execs_ok=(\d+)" + LINE_END, timeout=180)
    t.check(m.group(1) == m.group(2) == "16", f"fork+exec: {m.group(0)}")
    out.append(m.group(0).strip())
    m = q.expect(r"SANITY pipe_bytes=(\d+)" + LINE_END, timeout=120)
    t.check(int(m.group(1)) == 256 * 1024, f"pipe: {m.group(0)}")
    out.append(m.group(0).strip())
    m = q.expect(r"SANITY mmap_pages=(\d+) cow_ok=(\d)" + LINE_END, timeout=120)
    t.check(m.group(1) == "1024" and m.group(2) == "1", f"mmap: {m.group(0)}")
    out.append(m.group(0).strip())
    q.expect(r"SANITY result=PASS", timeout=60)
    q.expect(r"VMITEST-DONE name=sanity rc=0", timeout=60)
    return out


@test("hv-guest-sanity-vs-native", bench=True)
def guest_sanity_vs_native(t):
    """The same bzImage, initrd and command line (vmitest=sanity), first
    natively, then under the hypervisor (QEMU -kernel vmi-hv.elf, the
    guest as multiboot modules): the same SANITY lines, and QEMU exits
    after VMITEST-DONE (the guest's reboot -f).  Notes the time from QEMU
    start to the init marker for both, and the hypervisor's exit rate.
    After VMI activation no privileged instruction may trap (docs/MEMORY.md, "Shadow paging after activation")."""
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    cmdline = "console=ttyS0,115200 vmitest=sanity"
    native = t.qemu("-m", "128", "-kernel", paths.BZIMAGE, "-initrd", paths.INITRD,
                    "-append", cmdline)
    m = native.expect(MARKER, timeout=120)
    t.check(m.group(3) == "native", f"native guest reports mode {m.group(3)}")
    native_s = native.elapsed()
    native_out = sanity_lines(t, native)
    status = native.wait_exit(timeout=60)
    t.check(status == NATIVE_REBOOT, f"native guest: exit status {status}, expected {NATIVE_REBOOT} (its reboot)")

    module = hv_modules(cmdline)
    q = t.qemu("-m", "256", "-kernel", paths.HV_ELF, "-initrd", module, fatal=GUEST_FATAL)
    m = q.expect(MARKER, timeout=300)
    t.check(m.group(3) == "vmi", f"guest under the hypervisor reports mode {m.group(3)}")
    hv_s = q.elapsed()
    hv_out = sanity_lines(t, q)
    t.check(hv_out == native_out, f"SANITY lines differ: native {native_out}, hypervisor {hv_out}")
    ms, exits, rate = guest_end(t, q)
    t.note(f"QEMU start to init marker (TCG): native {native_s:.1f}s, under vmi-hv {hv_s:.1f}s "
           f"({hv_s / native_s:.1f}x)")
    t.note(f"under vmi-hv: guest ran {ms} ms, {exits} exits, {rate} exits/s")
    drained = re.findall(r"vmi-hv: (page-table updates without an exit: [^\n]*)\n", q.output)
    t.check(drained and not drained[-1].startswith("page-table updates without an exit: 0 "),
            f"no page-table update went through the shared page's queue: {drained}")
    t.note(drained[-1])
    for what in (r"privileged instructions trapped after activation: \d+",
                 r"emulated by kind:[^\n]*", r"exits by vector:[^\n]*"):
        found = re.findall(r"vmi-hv: (" + what + r")\n", q.output)
        t.check(found, f"the hypervisor's statistics lack /{what}/")
        t.note(found[-1])
    # docs/MEMORY.md, "Shadow paging after activation": once VMI is active every privileged operation is a VMI call;
    # a trapped instruction is a guest site the patch series missed (boot
    # the hypervisor with loglevel=debug to see each one's guest EIP).
    trapped = re.findall(r"vmi-hv: privileged instructions trapped after activation: (\d+)\n", q.output)
    t.check(trapped and trapped[-1] == "0",
            f"privileged instructions trapped after activation: {trapped[-1] if trapped else 'no figure'}, "
            f"expected 0 (every privileged operation after Init must be a VMI call)")


@test("hv-tguest-unknown-port")
def tguest_unknown_port(t):
    """An absent legacy device reads as all ones (Linux probes those); a
    port beyond the PC's legacy range is a rule break."""
    q = tguest(t, "port")
    # The hypervisor's "denied" log line lands in the middle of the
    # guest's row; the console then shows that row again from its start,
    # so the log holds it whole (docs/CONSOLE.md, "The consoles").
    q.expect(r"tguest: port 0x3e8 reads \n")
    q.expect(r"vmi-hv: guest: port in 0x3e8 \(1 bytes, returning 0xff\) denied[^\n]*\n"
             r"tguest: port 0x3e8 reads 000000ff; writing port 0x5000\n")
    q.expect(r"vmi-hv: guest stopped: port out 0x5000 \(1 bytes\) is outside the legacy PC I/O range", timeout=30)
    q.expect(REGS)
    q.expect(r"last VMI call: none")
    t.check("tguest: nothing caught me" not in q.output, "the write went through")
    stays_responsive(t, q)


FUZZ_SEEDS = range(1, 33)
# tests/guests/tguest.c: the well-formed calls each run makes before the
# garbage (all must be answered), and the calls it makes before them (Init
# and a GetGDT).
FUZZ_WELL_FORMED = 300
FUZZ_SETUP_CALLS = 2
# At least this many VMI calls per run, and in all (Init, GetGDT, the
# well-formed calls, then at least one garbage call).
FUZZ_MIN_CALLS = FUZZ_SETUP_CALLS + FUZZ_WELL_FORMED + 1
COUNTERS = r"vmi-hv: counters: \d+ exits, \d+ emulated instructions, [^\n]*?(\d+) hypercalls"


def fuzz_one(t, seed):
    """One fuzz run; returns (VMI calls the hypervisor counted, how it ended)."""
    q = tguest(t, f"fuzz:{seed}")
    q.fatal = HV_BROKEN
    q.expect(r"tguest: fuzz: %08x well-formed calls answered; now garbage\n" % FUZZ_WELL_FORMED,
             timeout=60, fatal=HV_BROKEN + [GUEST_STOPPED_LINE])
    try:
        m = q.expect(GUEST_STOPPED_LINE + r"\n|tguest: fuzz survived|vmi-hv: guest powered off", timeout=30)
    except ExpectTimeout:
        # Not a fatal line, not QEMU gone (those fail the test): the guest
        # is still running.
        m = None
    garbage = q.output.count("tguest: fuzz call ")
    if m is None:
        # Still running (garbage code spinning, say): the hypervisor must
        # still answer its escape and stop the guest.
        hv_statistics(q, timeout=30)
        q.send("\x1dq")
        q.expect(r"vmi-hv: guest stopped: stopped from the console \(Ctrl-\] q\)", timeout=30)
        how = "still running after 30 s; stopped with Ctrl-] q"
    elif m.group(1) is None:
        # Survived every call (then called Shutdown), or shut down itself.
        if not m.group(0).startswith("vmi-hv: guest powered off"):
            q.expect(r"vmi-hv: guest powered off", timeout=30)
        calls = int(q.expect(COUNTERS, timeout=30).group(1))
        ends_cleanly(t, q, f"seed {seed} after shutdown", timeout=30)
        return calls, f"{garbage} garbage calls, then shut down"
    else:
        reason = m.group(1)
        for bad in HV_FAULT_STOPS:
            t.check(not re.match(bad, reason), f"seed {seed}: the hypervisor failed: guest stopped: {reason}")
        t.check(any(re.match(ok, reason) for ok in GUEST_FAULT_STOPS),
                f"seed {seed}: guest stopped for a reason not known to blame the guest "
                f"(classify it in hvguest.GUEST_FAULT_STOPS or fix the hypervisor): {reason}")
        how = "stopped: " + reason[:80]
    q.expect(REGS, timeout=30)
    q.expect(r"last VMI call: ", timeout=30)
    calls = int(q.expect(COUNTERS, timeout=30).group(1))
    stays_responsive(t, q)
    return calls, f"{garbage} garbage calls, then {how}"


@test("hv-tguest-vmi-fuzz")
def tguest_vmi_fuzz(t):
    """VMI calls from the test guest (seeds 1-32): Init, 300 well-formed
    calls with random arguments (each must be answered), then garbage
    (random call numbers and arguments).  Each run ends with the guest
    stopped for a reason that blames the guest, shut down, or still running
    and stoppable; never with the hypervisor hurt (an exception, a panic,
    a stop reason that names a hypervisor fault, a reset).  The
    hypervisor's own count of VMI calls must show every run made them."""
    total = 0
    for seed in FUZZ_SEEDS:
        calls, how = fuzz_one(t, seed)
        t.note(f"seed {seed}: {calls} VMI calls, {how}")
        t.check(calls >= FUZZ_MIN_CALLS,
                f"seed {seed}: the hypervisor counted {calls} VMI calls, expected at least {FUZZ_MIN_CALLS}")
        total += calls
    t.note(f"{total} VMI calls in {len(FUZZ_SEEDS)} runs")
    t.check(total >= FUZZ_MIN_CALLS * len(FUZZ_SEEDS),
            f"{total} VMI calls in all, expected at least {FUZZ_MIN_CALLS * len(FUZZ_SEEDS)}")


def write_is_stopped(t, what, announced, reason):
    """The test guest announces a write (regex `announced`), makes it, and
    is stopped with `reason`; the write never completes."""
    q = tguest(t, what)
    q.expect(announced)
    q.expect(r"vmi-hv: guest stopped: " + reason, timeout=30)
    t.check("tguest: nothing caught me" not in q.output, "the write went through")
    stays_responsive(t, q)


@test("hv-tguest-rom-read-only")
def tguest_rom_read_only(t):
    """The VMI ROM at guest-physical 0xC0000 reads as an option ROM
    (0xAA55) and is read-only: a write to it is a rule break."""
    write_is_stopped(t, "romwrite", r"tguest: ROM signature 0000aa55; writing it",
                     r"page fault at 000c0000 \(error 3\) breaks the rules: "
                     r"paging off: write to the VMI ROM area at guest-physical 0x000c0000")


@test("hv-tguest-switcher-read-only")
def tguest_switcher_read_only(t):
    """The switcher is mapped in the guest's address space (it must be, for
    traps), readable from ring 1 but read-only (CR0.WP): the write is a
    protection fault (error 3 = present|write) and a rule break."""
    write_is_stopped(t, "switcher", r"tguest: switcher word 0: [0-9a-f]{8}; writing it",
                     r"page fault at ffc00000 \(error 3\) breaks the rules: [^\n]*reserved top")


@test("hv-tguest-ring3-delivery")
def tguest_ring3_delivery(t):
    """Guest user mode: iret to ring 3 (native), int $0x80 through the
    guest's DPL 3 gate and a #GP from cli, both delivered on the ring-0
    stack of the guest's TSS (ltr) with the user ss:esp pushed."""
    q = tguest(t, "user")
    q.expect(r"tguest: entering ring 3")
    q.expect(r"tguest: syscall from ring 3: eax 0000002a cs 00000023", timeout=30)
    q.expect(r"tguest: #GP from ring 3: error 00000000 cs 00000023 ss 0000002b", timeout=30)
    q.expect(r"vmi-hv: guest stopped: unsupported instruction", timeout=30)
    q.expect(r"tr=0030")
    stays_responsive(t, q)


# ---- a resume EIP beyond the code segment's limit (docs/HV.md, "What the guest can reach")
# The switcher's iret would raise #GP at CPL 0 ("CPU exception 13 in the
# hypervisor"): every path that sets CS:EIP must check the limit first.

def not_hurt(t, q):
    t.check("in the hypervisor" not in q.output and "PANIC" not in q.output,
            "the hypervisor itself faulted")


@test("hv-tguest-cslimit-iret")
def tguest_cslimit_iret(t):
    """VMI IRET to an EIP beyond its code segment's limit: the CPU's iret
    raises #GP(0), and so does the VMI IRET (docs/VROM.md, "A faulting
    IRET"): delivered to the guest's own #GP handler with the IRET
    hypercall's int $0x82 as the faulting instruction (it was made from
    the guest's code, not the ROM)."""
    q = tguest(t, "cslimit-iret")
    m = q.expect(r"tguest: VMI IRET to 0020:03000000, beyond the limit 01ffffff, from ([0-9a-f]{8})\n",
                 timeout=30)
    where = m.group(1)
    m = q.expect(r"tguest: #GP delivered: error ([0-9a-f]{8}) eip ([0-9a-f]{8})", timeout=30)
    t.check(m.group(1) == "00000000" and m.group(2) == where,
            f"#GP error {m.group(1)} at {m.group(2)}, expected error 0 at the int $0x82 ({where})")
    q.expect(r"vmi-hv: guest stopped: unsupported instruction", timeout=30)
    not_hurt(t, q)
    stays_responsive(t, q)


@test("hv-tguest-cslimit-gate")
def tguest_cslimit_gate(t):
    """ud2 through an IDT gate whose offset is beyond the gate's code
    segment limit: delivered as #GP(0) to the guest's own #GP handler,
    with the ud2 as the faulting instruction, as the CPU does."""
    q = tguest(t, "cslimit-gate")
    q.expect(r"tguest: ud2 through a gate to 0020:03000000", timeout=30)
    q.expect(r"tguest: #GP delivered: error 00000000 eip 001[0-9a-f]{5}", timeout=30)
    q.expect(r"vmi-hv: guest stopped: unsupported instruction", timeout=30)
    not_hurt(t, q)
    stays_responsive(t, q)


@test("hv-tguest-cslimit-lgdt")
def tguest_cslimit_lgdt(t):
    """lgdt of a table whose descriptor for the loaded CS no longer holds
    EIP: the CPU keeps its cached CS, so the guest runs on."""
    q = tguest(t, "cslimit-lgdt")
    q.expect(r"tguest: lgdt with cs 0010 shrunk to 64 KiB", timeout=30)
    q.expect(r"tguest: still running on the cached cs", timeout=30)
    q.expect(r"vmi-hv: guest stopped: unsupported instruction", timeout=30)
    not_hurt(t, q)
    stays_responsive(t, q)


@test("hv-tguest-link-count")
def tguest_link_count(t):
    """One page table linked from more shadow PDEs than 16 bits count
    (docs/HV.md, "Tests"): 70 directories each cloning all 1008 PDEs, which name
    the same table.  The hypervisor refuses the 65,536th link and stops
    the guest with the reason; the statistics' audit is clean."""
    q = tguest(t, "links")
    q.expect(r"tguest: paging on, 1008 PDEs name one page table", timeout=30)
    q.expect(r"vmi-hv: guest activated VMI", timeout=30)
    m = q.expect(r"vmi-hv: guest stopped: AllocatePage breaks the rules: directory 0x[0-9a-f]+ PDE 15: "
                 r"table 0x[0-9a-f]+ is linked from 65535 PDEs \(the limit\)", timeout=60)
    t.note(m.group(0))
    t.check("nothing stopped the link count" not in q.output, "the link count went past its limit")
    not_hurt(t, q)
    stays_responsive(t, q)
    found = audits(q.output)
    t.check(found and all(a[3] == 0 for a in found), f"shadow audit mismatches: {found}")
