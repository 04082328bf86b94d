"""Running a guest (issue 6): the vCPU, the world switch, trap routing,
exception delivery, port I/O, the hypercall gate and VMI activation.

Two kinds of guest:
  - the real one (build/guest/bzImage, Linux 6.1 with the VMI patches),
    booted from the ISO's default entry, up to VMI activation and beyond;
  - the tiny test guest (hv/test-guests/, build/hv/test-guests/tguest.bzImage),
    which does one forbidden thing chosen by its command line, to check
    that each is caught with a diagnostic while the hypervisor stays up.

A stopped guest leaves the hypervisor running: 's' on the serial console
prints statistics (the tick count grows), 'q' exits with status 13
(HV_EXIT_GUEST_STOPPED = 6 in hv/include/exit_codes.h).
"""

import os
import re

from vmitest import paths, test

GUEST_STOPPED = 13
TGUEST = os.path.join(paths.BUILD, "hv", "test-guests", "tguest.bzImage")
REGS = r"eax=[0-9a-f]{8} ebx=[0-9a-f]{8} ecx=[0-9a-f]{8} edx=[0-9a-f]{8}"


def tguest(t, what, append=None):
    """Boot the hypervisor (QEMU multiboot) with the test guest doing `what`."""
    t.require(paths.HV_ELF, TGUEST)
    initrd = t.tmpfile("tiny-initrd", b"not an initramfs, the test guest ignores it\n")
    args = ["-m", "128", "-kernel", paths.HV_ELF,
            "-initrd", f"{TGUEST} tguest={what},{initrd}"]
    if append:
        args += ["-append", append]
    q = t.qemu(*args)
    q.expect(r"vmi-hv: vcpu: guest entry eip=00100000 esi=00010000 cs=0011", timeout=60)
    q.expect(r"tguest: hello from the test guest, command line: tguest=%s" % what, timeout=30)
    return q


def stays_responsive(t, q):
    """After a guest stop: statistics on 's' (twice, the tick count moves),
    then 'q' exits with the guest-stopped status."""
    q.expect(r"the hypervisor is still running: on the serial console, 's' prints statistics, 'q' exits",
             timeout=30)
    ticks = []
    for _ in range(2):
        q.send("s")
        m = q.expect(r"statistics \(guest stopped, hypervisor tick (\d+)\):", timeout=20)
        ticks.append(int(m.group(1)))
        q.expect(r"vmi-hv: counters: \d+ exits, \d+ emulated instructions")
    t.check(ticks[1] > ticks[0], f"hypervisor ticks did not advance: {ticks}")
    q.send("q")
    q.expect(r"vmi-hv: stopped \(exit code 6\): guest stopped", timeout=20)
    status = q.wait_exit(timeout=30)
    t.check(status == GUEST_STOPPED, f"exit status {status}, expected {GUEST_STOPPED}")


def counters_note(t, q):
    m = re.search(r"vmi-hv: emulated by kind:([^\n]*)\n", q.output)
    if m:
        t.note("emulated by kind:" + m.group(1))


@test("hv-tguest-unsupported-instruction")
def tguest_unsupported(t):
    """A privileged instruction the emulator does not know (rdpmc, 0f 33):
    stopped with the bytes, EIP and registers; the hypervisor answers."""
    q = tguest(t, "unsupported")
    q.expect(r"tguest: executing rdpmc")
    q.expect(r"vmi-hv: guest stopped: unsupported instruction: [^\n]+", timeout=30)
    q.expect(r"vmi-hv: instruction at guest eip 0011:001[0-9a-f]{5}: 0f 33")
    q.expect(REGS)
    q.expect(r"guest cr0=00000011")
    q.expect(r"vmi-hv: emulated by kind:[^\n]*cli=1")
    counters_note(t, q)
    stays_responsive(t, q)


@test("hv-tguest-triple-fault")
def tguest_triple_fault(t):
    """IDT limit 0 then ud2: #UD, #GP and #DF all fail to deliver."""
    q = tguest(t, "triple")
    q.expect(r"vmi-hv: guest stopped: triple fault[^\n]*", timeout=30)
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
    """int $0x82 with edi = 4 (Init) activates; an unimplemented call stops
    the guest with its number and name."""
    q = tguest(t, "vmi")
    m = q.expect(r"vmi-hv: guest activated VMI after (\d+) emulated instructions, (\d+) shadow faults "
                 r"\((\d+) ms since hypervisor start", timeout=30)
    q.expect(r"tguest: Init returned 00000000")
    q.expect(r"vmi-hv: guest stopped: unimplemented VMI call 81 \(SetAlarm\)", timeout=30)
    q.expect(REGS)
    stays_responsive(t, q)


@test("hv-guest-linux-iso")
def guest_linux_iso(t):
    """The ISO's default entry: GRUB -> vmi-hv -> the real Linux guest,
    deprivileged from its first instruction (decompressor, head_32.S) up
    to VMI activation; its early console then shows the ROM it found.
    The guest runs on until it needs what issue 7 brings; we stop it from
    the hypervisor's serial console (Ctrl-] s, Ctrl-] q)."""
    t.require(paths.ISO)
    q = t.qemu("-m", "256", "-cdrom", paths.ISO)
    q.expect(r"vmi-hv: vcpu: guest entry eip=00100000", timeout=90)
    m = q.expect(r"vmi-hv: guest activated VMI after (\d+) emulated instructions, (\d+) shadow faults "
                 r"\((\d+) ms since hypervisor start, (\d+) ms since guest start\)", timeout=180)
    kinds = q.expect(r"vmi-hv: emulated by kind:([^\n]*)\n")
    t.note(f"activation: {m.group(1)} emulated instructions, {m.group(2)} shadow faults, "
           f"{m.group(3)} ms after hypervisor start ({m.group(4)} ms of guest); by kind:{kinds.group(1)}")
    q.expect(r"Detected VMI ROM version 13\.0", timeout=180)
    q.expect(r"VMI: paravirtual mode, 65536 KiB reserved at the top", timeout=60)
    q.expect(r"Linux version 6\.1", timeout=60)
    q.send("\x1ds")
    q.expect(r"vmi-hv: statistics \(guest running, hypervisor tick \d+\):", timeout=60)
    m = q.expect(r"vmi-hv: counters: (\d+) exits, (\d+) emulated instructions, (\d+) hidden[^\n]*?(\d+) hypercalls")
    q.send("\x1dq")
    q.expect(r"vmi-hv: guest stopped: stopped from the serial console", timeout=60)
    q.expect(r"guest registers \(ring [13], paravirtual mode")
    stays_responsive(t, q)


@test("hv-tguest-switcher-read-only")
def tguest_switcher_read_only(t):
    """The switcher is mapped in the guest's address space (it must be, for
    traps), readable from ring 1 but read-only (CR0.WP): the write is a
    protection fault (error 3 = present|write) and a rule break."""
    q = tguest(t, "switcher")
    q.expect(r"tguest: switcher word 0: [0-9a-f]{8}; writing it")
    q.expect(r"vmi-hv: guest stopped: page fault at ffc00000 \(error 3\) breaks the rules: "
             r"[^\n]*reserved top", timeout=30)
    t.check("tguest: nothing caught me" not in q.output, "the write went through")
    stays_responsive(t, q)


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
