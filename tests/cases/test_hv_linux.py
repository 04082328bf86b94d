"""The real Linux guest under the hypervisor (docs/HV.md, "Running the guest"): what it reports
about itself in /proc/vmi/info, and what happens when it breaks the
hypervisor's rules.

The broken guests are the same bzImage with `vmi_selftest=NAME` on its
command line (guest patch 0020): a late initcall does one forbidden thing
through the ordinary VMI paths.  Each must be stopped with its own
diagnostic ("vmi-hv: guest stopped: <reason>", the guest registers, the
last VMI call), and the hypervisor must stay up: 's' on the serial console
prints statistics (the uptime grows), 'q' exits with status 13
(HV_EXIT_GUEST_STOPPED = 6 in hv/include/exit_codes.h, (6 << 1) | 1).
"""

import os
import re

from vmitest import FATAL_PATTERNS, paths, test
from hvguest import (GUEST_REBOOT, GUEST_STOPPED_LINE, KERNEL_BROKEN, MARKER, REGS, hv_modules,
                     stays_responsive)
from hvstats import hv_statistics

# Fatal for every test here: the guest dying its own way instead.
FATAL = [*FATAL_PATTERNS, *KERNEL_BROKEN,
         r"vmi_selftest: [^\n]*the hypervisor let the guest go on"]


def boot(t, guest_args, fatal):
    """The hypervisor (QEMU multiboot) with the real guest and its initrd."""
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    cmdline = "console=ttyS0,115200 " + guest_args
    module = hv_modules(cmdline)
    return t.qemu("-m", "256", "-kernel", paths.HV_ELF, "-initrd", module, fatal=fatal)


def fast_calls():
    """Names of the calls of kind `fast` in the ABI definition (served in
    the ROM from the shared page when the hypervisor enables them)."""
    with open(os.path.join(paths.ROOT, "vrom", "abi", "vmi-13.0.def")) as f:
        return {w[2] for w in (line.split() for line in f)
                if len(w) > 3 and w[0] == "call" and w[3] == "fast"}


# MMU calls a boot to the shell cannot do without (page tables allocated
# and freed, PTEs written and cleared, COW write-protection, address
# space switches).
MMU_CALLS = ("AllocatePage", "ReleasePage", "SetPxE", "SwapPxE",
             "TestAndClearPxEBit", "FlushDeferredCalls", "SetCR3")


@test("hv-linux-proc-vmi-info")
def linux_proc_vmi_info(t):
    """The guest's shell under the hypervisor: `cat /proc/vmi/info` shows
    paravirtual mode, ROM 13.0, patched call sites and non-zero counts of
    the MMU calls; the hypervisor's own count of each call (Ctrl-] s,
    taken afterwards) is at least the guest's.  The guest counts its calls
    only with vmi_count_calls (its sites then call counting wrappers)."""
    q = boot(t, "vmi_count_calls", FATAL + [GUEST_STOPPED_LINE])
    m = q.expect(MARKER, timeout=300)
    t.check(m.group(3) == "vmi", f"guest reports mode {m.group(3)}")
    q.expect(r"vmi-guest# ", timeout=60)
    q.send("cat /proc/vmi/info; echo proc-info-done\n")
    m = q.expect(r"(?s)\n(VMI ROM version: .*?)\r?\nproc-info-done", timeout=60)
    info = m.group(1).replace("\r", "")
    t.check("VMI ROM version: 13.0" in info, f"no 'VMI ROM version: 13.0' in /proc/vmi/info:\n{info}")
    t.check("Mode: paravirtual" in info, f"no 'Mode: paravirtual' in /proc/vmi/info:\n{info}")
    sites = re.search(r"Patched call sites: (\d+)", info)
    t.check(sites and int(sites.group(1)) > 0, f"no patched call sites in /proc/vmi/info:\n{info}")
    guest = {name: int(n) for name, n in re.findall(r"^  (\w+) +(\d+)$", info, re.M)}
    mmu = {name: guest.get(name, 0) for name in MMU_CALLS}
    t.note("/proc/vmi/info: " + " ".join(f"{k}={v}" for k, v in mmu.items())
           + f", patched call sites {sites.group(1)}")
    zero = [name for name, n in mmu.items() if n == 0]
    t.check(not zero, f"MMU calls with a zero count in /proc/vmi/info: {', '.join(zero)}")
    q.expect(r"vmi-guest# ", timeout=60)

    stats = hv_statistics(q)
    hv = stats.vmi_calls
    # Calls the ROM serves from the shared page need not reach the
    # hypervisor at all: compare only the others.
    fast = fast_calls()
    fewer = [f"{name} guest {n} > hypervisor {hv.get(name, 0)}"
             for name, n in guest.items() if n > hv.get(name, 0) and name not in fast]
    t.check(not fewer, "the hypervisor saw fewer calls than the guest counted: " + "; ".join(fewer))
    # As docs/GUEST.md, "Time accounting" has it: sched_clock() and the clocksource read the counter
    # in the ROM (F_TIME: REAL is rdtsc there), not through an exit.
    reads, exits = guest.get("GetCycleCounter", 0), hv.get("GetCycleCounter", 0)
    t.note(f"GetCycleCounter: {reads} calls in the guest, {exits} reached the hypervisor")
    t.check(reads >= 1000 and exits * 100 <= reads,
            f"GetCycleCounter: {reads} calls in the guest, {exits} of them exits: "
            "the clocks do not read the counter through the ROM's fast path")
    # Every interrupt after activation must return through IRET: a raw
    # iret at CPL 1 cannot set IF, the virtual IF would stay off.  The
    # first interrupt is delivered before the first IRET call; a second
    # one means the first returned through a raw iret (the IRET
    # alternative patched after local_irq_enable(), docs/GUEST.md, "What is hooked").
    m = stats.search(r"vmi-hv: virtual interrupts delivered in paravirtual mode before the first IRET call: (\d+)")
    t.note(f"virtual interrupts before the first IRET call: {m.group(1)}")
    t.check(int(m.group(1)) <= 1,
            f"{m.group(1)} virtual interrupts delivered before the guest's first IRET call: "
            "interrupts returned through a raw iret (the pv IRET was patched too late)")

    q.send("\n")
    q.expect(r"vmi-guest# ", timeout=60)
    q.send("reboot -f\n")
    q.expect(r"vmi-hv: stopped \(exit code 7\): guest reboot", timeout=60)
    status = q.wait_exit(timeout=30)
    t.check(status == GUEST_REBOOT, f"exit status {status}, expected {GUEST_REBOOT}")


def broken_guest(t, name, reason, last_call=None):
    """Boot with vmi_selftest=name; the guest must be stopped with reason
    (a regex), its registers and the last VMI call; the hypervisor then
    answers 's' twice (growing uptime) and exits 13 on 'q'."""
    q = boot(t, f"vmi_selftest={name}", FATAL)
    q.expect(r"vmi_selftest: %s: breaking the hypervisor's rules on purpose" % re.escape(name),
             timeout=300)
    m = q.expect(r"vmi-hv: guest stopped: ([^\n]*)\n", timeout=60)
    t.note(f"vmi_selftest={name}: guest stopped: {m.group(1).strip()}")
    t.check(re.match(reason, m.group(1)), f"stop reason '{m.group(1).strip()}' does not match /{reason}/")
    q.expect(r"vmi-hv: guest registers \(ring 1, paravirtual mode", timeout=30)
    q.expect(REGS, timeout=30)
    m = q.expect(r"last VMI call: \d+ \((\w+)\)", timeout=30)
    if last_call:
        t.check(m.group(1) == last_call, f"last VMI call {m.group(1)}, expected {last_call}")

    stays_responsive(t, q)


@test("hv-linux-bad-descriptor")
def linux_bad_descriptor(t):
    """WriteGDTEntry of a DPL 0 call gate into the live GDT (entry 28)."""
    broken_guest(t, "bad-descriptor",
                 r"WriteGDTEntry 28 \(selector 0xe0\): system descriptor type 0xc ",
                 last_call="WriteGDTEntry")


@test("hv-linux-outside-frame")
def linux_outside_frame(t):
    """ioremap (SetPxE) of guest-physical 0xe0000000, beyond its memory, then a read."""
    broken_guest(t, "outside-frame",
                 r"page fault at [0-9a-f]{8} \(error \d+\) breaks the rules: guest PTE 0xe0000[0-9a-f]{3} "
                 r"for linear 0x[0-9a-f]{8} maps frame 0xe0000 outside its 0x[0-9a-f]+ pages")


@test("hv-linux-switcher-write")
def linux_switcher_write(t):
    """The switcher's 4 MiB (0xffc00000) mapped in the guest's page
    directory (SetPxE), then written: the mapping breaks the reserved top."""
    broken_guest(t, "switcher-write",
                 r"page fault at ffc00000 \(error 3\) breaks the rules: guest maps linear 0xffc00000 "
                 r"in the reserved top",
                 last_call="InvalPage")


@test("hv-linux-triple-fault")
def linux_triple_fault(t):
    """SetIDT with limit 0, then ud2: #UD, #GP and #DF cannot be delivered."""
    broken_guest(t, "triple-fault",
                 r"triple fault: vector 6, then 13 \(beyond the IDT limit\), then the double fault",
                 last_call="SetIDT")


@test("native-vmi-selftest-ignored")
def native_selftest_ignored(t):
    """Natively (no VMI ROM) vmi_selftest= is ignored with a message and
    the guest boots to its init marker."""
    t.require(paths.BZIMAGE, paths.INITRD)
    q = t.qemu("-m", "128", "-kernel", paths.BZIMAGE, "-initrd", paths.INITRD,
               "-append", "console=ttyS0,115200 vmi_selftest=triple-fault", fatal=FATAL)
    q.expect(r"vmi_selftest: triple-fault ignored: not running on VMI", timeout=120)
    m = q.expect(MARKER, timeout=120)
    t.check(m.group(3) == "native", f"guest reports mode {m.group(3)}")
