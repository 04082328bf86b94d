"""The hostile-guest suite (issue 18, item 3): every case in one table,
with the diagnostic it must end in.

A case is one guest doing one hostile thing, from ring 1 (the tiny test
guest: `tguest=h:NAME` in hv/test-guests/tguest_hostile.c, or one of its
older modes; Linux's `vmi_selftest=NAME`) or from ring 3 (the test
guest's user mode).  Each runs beside a second guest, the test guest's
`tguest=idle`, which must keep running and answering through every case.

A case passes only if:
  1. the offender ends the way the table says (stopped by the hypervisor,
     or shut down after the fault was delivered to it, or rebooted) and
     its output or the stop line matches the case's diagnostic (a regex);
  2. the hypervisor never faulted (vmitest.FATAL_PATTERNS, a stop reason
     that blames the hypervisor: hvguest.HV_FAULT_STOPS);
  3. the second guest still answers a byte typed to it, then the
     hypervisor answers Ctrl-] s and Ctrl-] q (which stops the second
     guest), then, with no guest left, 's' twice and 'q';
  4. every shadow audit in the guests' end reports shows 0 mismatches;
  5. with both guests ended, the machine frames free are back at their
     count before the guests ran.

Cases that were already tests of their own (hv-tguest-*, hv-linux-*,
hv-tguest-ldt, hv-tguest-link-count) are counted in: the table lists them
and the suite runs them again under these five conditions.
"""

import os
import re
import time

from vmitest import paths, test
from hvguest import stays_responsive
from guest_end import HV_BROKEN, check_invariants


def _queue_len():
    """The shared page's page-table queue length, from its one definition."""
    with open(os.path.join(paths.ROOT, "vrom", "abi", "vmi-13.0.def")) as f:
        return int(re.search(r"const VMI_SHARED_PXE_QUEUE_LEN\s+(\d+)", f.read()).group(1))


QUEUE_LEN = _queue_len()

TGUEST = os.path.join(paths.BUILD, "hv", "test-guests", "tguest.bzImage")

# How the offender ends.
STOP, SHUTDOWN, REBOOT = "stopped", "shutdown", "reboot"

STOPPED = r"vmi-hv: guest stopped: "
DELIVERED = r"hostile: delivered vector %08x error %08x "
RESERVED_TOP = r"breaks the rules: (write|access) at linear 0x%s, in the hypervisor's reserved top"
TRIPLE = r"triple fault: "
# Back in ring 1 (cs 0011) with VM, RF, NT and IOPL clear in EFLAGS
# (bits 17, 16, 14, 13-12); the two lines may have the other guest's between.
LANDED_CLEAN = r"hostile: landed: cs 00000011\n(?s:.*)hostile: landed: eflags 000[048c][08][0-9a-f]{3}\n"
OUT_OF_RANGE = r"port out 0x%s \(\d bytes\) is outside the legacy PC I/O range"


def h(name):
    return f"tguest=h:{name}"


# (case, what the guest is given, the regex its output must match, how it ends)
CASES = [
    # ---- descriptors ----
    ("gdt-dpl0-code", h("gdt-dpl0-code"), r"hostile: landed: cs 00000041\n", SHUTDOWN),
    ("gdt-conforming", h("gdt-conforming"), r"hostile: landed: cs 00000041\n", SHUTDOWN),
    ("gdt-call-gate", h("gdt-call-gate"),
     STOPPED + r"WriteGDTEntry 8 \(selector 0x40\): system descriptor type 0xc \(a gate", STOP),
    ("gdt-task-gate", h("gdt-task-gate"),
     STOPPED + r"WriteGDTEntry 8 \(selector 0x40\): system descriptor type 0x5 \(a gate", STOP),
    ("gdt-int-gate", h("gdt-int-gate"),
     STOPPED + r"WriteGDTEntry 8 \(selector 0x40\): system descriptor type 0xe \(a gate", STOP),
    ("ldt-call-gate", h("ldt-call-gate"), DELIVERED % (13, 4), SHUTDOWN),
    ("ldt-gate-write", h("ldt-gate-write"),
     STOPPED + r"WriteLDTEntry 1 \(selector 0xc\): system descriptor type 0xc \(a gate\) in the loaded LDT", STOP),
    ("ldt-gate-lcall", "tguest=ldt", r"tguest: lcall through the LDT call gate: #GP count 00000001 error 00000004", STOP),
    ("seg-reserved-top", h("seg-reserved-top"), STOPPED + r"page fault at ffc00000 \(error 3\) " + RESERVED_TOP % "ffc00000", STOP),
    ("seg-expand-down", h("seg-expand-down"), STOPPED + r"page fault at ffc00010 \(error 3\) " + RESERVED_TOP % "ffc00010", STOP),
    ("gdt-loaded-revoked", h("gdt-loaded-revoked"),
     r"hostile: gs after its descriptor went 00000000\n(?s:.*)hostile: survived", SHUTDOWN),
    ("farjmp-user-code", h("farjmp-user-code"), DELIVERED % (13, 0x20), SHUTDOWN),
    ("cslimit-lgdt", "tguest=cslimit-lgdt", r"tguest: still running on the cached cs", STOP),
    # ---- IDT gates ----
    ("idt-not-present", h("idt-not-present"), DELIVERED % (11, 6 * 8 + 2), SHUTDOWN),
    ("idt-task-gate", h("idt-task-gate"), DELIVERED % (13, 6 * 8 + 2), SHUTDOWN),
    ("idt-16bit-gate", h("idt-16bit-gate"), DELIVERED % (13, 6 * 8 + 2), SHUTDOWN),
    ("idt-data-selector", h("idt-data-selector"), DELIVERED % (13, 0x18), SHUTDOWN),
    ("idt-limit", h("idt-limit"), STOPPED + TRIPLE + r"vector 6, then 13 \(beyond the IDT limit\)", STOP),
    ("idt-user-int-dpl0", h("idt-user-int-dpl0"), DELIVERED % (13, 0x40 * 8 + 2) + r"eip [0-9a-f]{8} cs 00000023", SHUTDOWN),
    ("idt-gate-beyond-limit", "tguest=cslimit-gate", r"tguest: #GP delivered: error 00000000 eip 001[0-9a-f]{5}", STOP),
    ("idt-triple", "tguest=triple", STOPPED + TRIPLE + r"vector 6, then 13 \(beyond the IDT limit\), then the double fault", STOP),
    # ---- ring 3 ----
    ("ring3-int82", h("ring3-int82"), DELIVERED % (13, 0x82 * 8 + 2) + r"eip [0-9a-f]{8} cs 00000023", SHUTDOWN),
    ("ring3-kbd-reset", h("ring3-kbd-reset"), DELIVERED % (13, 0) + r"eip [0-9a-f]{8} cs 00000023", SHUTDOWN),
    ("ring3-debug-exit", h("ring3-debug-exit"), DELIVERED % (13, 0) + r"eip [0-9a-f]{8} cs 00000023", SHUTDOWN),
    ("ring3-cli-int80", "tguest=user", r"tguest: #GP from ring 3: error 00000000 cs 00000023 ss 0000002b", STOP),
    # ---- TSS, I/O bitmap, UpdateKernelStack, delivery to a bad stack ----
    ("tss-iomap", h("tss-iomap"), DELIVERED % (13, 0) + r"eip [0-9a-f]{8} cs 00000023", SHUTDOWN),
    ("tss-esp0-unmapped", h("tss-esp0-unmapped"),
     STOPPED + TRIPLE + r"vector 14 \(delivery failed\), then 14 \(guest stack not writable\)", STOP),
    ("tss-ss0-user", h("tss-ss0-user"),
     STOPPED + TRIPLE + r"vector 10 \(delivery failed\), then 10 \(ring-0 stack segment not a writable ring-0 data segment\)", STOP),
    ("ukstack-user-ss", h("ukstack-user-ss"),
     STOPPED + TRIPLE + r"vector 10 \(delivery failed\), then 10 \(ring-0 stack segment not a writable ring-0 data segment\)", STOP),
    ("ukstack-switcher", h("ukstack-switcher"),
     STOPPED + TRIPLE + r"vector 14 \(delivery failed\), then 14 \(guest stack not writable\)", STOP),
    ("stack-unmapped", h("stack-unmapped"), STOPPED + TRIPLE + r"vector 6, then 14 \(guest stack not writable\)", STOP),
    ("stack-switcher", h("stack-switcher"), STOPPED + TRIPLE + r"vector 6, then 14 \(guest stack not writable\)", STOP),
    # ---- IRET frames ----
    ("iret-rpl0", h("iret-rpl0"), r"hostile: landed: cs 00000011\n", SHUTDOWN),
    ("iret-vm", h("iret-vm"), LANDED_CLEAN, SHUTDOWN),
    ("iret-nt", h("iret-nt"), LANDED_CLEAN, SHUTDOWN),
    ("iret-rf", h("iret-rf"), LANDED_CLEAN, SHUTDOWN),
    ("iret-iopl", h("iret-iopl"), STOPPED + OUT_OF_RANGE % "5000", STOP),
    # A frame the iret refuses is the guest's fault, as the CPU's iret's
    # (docs/VROM.md, "A faulting IRET"): ss with RPL 3 naming the DPL 0
    # data segment is #GP(0x18); an eip beyond the limit #GP(0).
    ("iret-user-ss-rpl", h("iret-user-ss-rpl"), DELIVERED % (13, 0x18), SHUTDOWN),
    ("iret-eip-limit", h("iret-eip-limit"), DELIVERED % (13, 0), SHUTDOWN),
    # ---- control registers ----
    ("cr0-pg-off", h("cr0-pg-off"), STOPPED + r"paravirtual guest turned paging off \(cr0=00010011\): not supported", STOP),
    ("cr0-wp-off", h("cr0-wp-off"), STOPPED + r"paravirtual guest turned CR0\.WP off \(cr0=80000011\): not supported", STOP),
    ("cr4-pae", h("cr4-pae"), STOPPED + r"VMI call 23 \(SetCR4\): mov to cr4 00000020: PAE \(vmi-hv guests are non-PAE\)", STOP),
    # VME and PVI stay the guest's: the real CR4 in the stop dump has neither.
    ("cr4-vme-pvi", h("cr4-vme-pvi"),
     r"hostile: cr4 after mov with VME\|PVI 00000003\n(?s:.*)" + STOPPED + OUT_OF_RANGE % "5000"
     + r"(?s:.*)\n  cr0=[0-9a-f]{8} cr2=[0-9a-f]{8} cr3=[0-9a-f]{8} cr4=[0-9a-f]{7}[048c]\n", STOP),
    # ---- MSRs, debug registers ----
    ("msr-sysenter-cs", h("msr-sysenter-cs"), r"hostile: SYSENTER_CS reads 00000000\n", SHUTDOWN),
    ("msr-unknown", h("msr-unknown"), DELIVERED % (13, 0), SHUTDOWN),
    ("msr-apic-base", h("msr-apic-base"), DELIVERED % (13, 0), SHUTDOWN),
    ("dr7-switcher", h("dr7-switcher"), r"hostile: dr7 reads 000f0003\n(?s:.*)hostile: switcher word 0 reads", SHUTDOWN),
    ("dr-bad-number", h("dr-bad-number"), r"hostile: survived", SHUTDOWN),
    ("dr-mov", h("dr-mov"), STOPPED + r"unsupported instruction: unsupported instruction 0f 23 f8 \(mov to DR", STOP),
    ("rdpmc", "tguest=unsupported", STOPPED + r"unsupported instruction: [^\n]*\nvmi-hv: instruction at guest eip 0011:001[0-9a-f]{5}: 0f 33", STOP),
    # ---- ports ----
    ("port-pci-config", h("port-pci-config"), STOPPED + r"port out 0xcf8 \(4 bytes\) is outside the legacy PC I/O range", STOP),
    ("port-kbd-reset", h("port-kbd-reset"), r"vmi-hv: guest reboot: keyboard controller reset \(port 0x64, 0xfe\)", REBOOT),
    ("port-debug-exit", h("port-debug-exit"),
     r"guest: port out 0xf4 \(1 bytes[^\n]*denied[^\n]*\n(?s:.*)" + STOPPED + OUT_OF_RANGE % "501", STOP),
    ("port-high", h("port-high"), STOPPED + OUT_OF_RANGE % "5000", STOP),
    # ---- page tables ----
    ("pt-outside-frame", h("pt-outside-frame"),
     STOPPED + r"page fault at 02000000 \(error 0\) breaks the rules: guest PTE 0x[0-9a-f]{8} for linear 0x02000000 "
     r"maps frame 0x[0-9a-f]+ outside its 0x[0-9a-f]+ pages", STOP),
    ("pt-far-frame", h("pt-far-frame"),
     STOPPED + r"page fault at 02000000 \(error 0\) breaks the rules: guest PTE 0xfffff021 for linear 0x02000000 "
     r"maps frame 0xfffff outside", STOP),
    ("pt-reserved-top", h("pt-reserved-top"),
     STOPPED + r"page fault at ff000000 \(error 0\) breaks the rules: guest maps linear 0xff000000 in the reserved top: PDE 1020", STOP),
    ("pt-switcher-pde", h("pt-switcher-pde"),
     STOPPED + r"page fault at ffc00000 \(error 3\) breaks the rules: guest maps linear 0xffc00000 in the reserved top: PDE 1023", STOP),
    ("pt-recursive", h("pt-recursive"),
     STOPPED + r"a page-table entry write breaks the rules: directory (0x[0-9a-f]+) PDE 8 names directory \1 as a page table", STOP),
    ("pt-pd-as-pt", h("pt-pd-as-pt"),
     STOPPED + r"a page-table entry write breaks the rules: directory 0x[0-9a-f]+ PDE 8 names directory 0x[0-9a-f]+ as a page table", STOP),
    ("pt-double-announce", h("pt-double-announce"), r"hostile: through the twice-announced table 00001234", SHUTDOWN),
    ("pt-release-linked", h("pt-release-linked"), r"hostile: after ReleasePage of the linked table, it still reads 00005678", SHUTDOWN),
    ("pt-release-linked-idle", h("pt-release-linked-idle"), r"hostile: survived", SHUTDOWN),
    ("pt-release-loaded-pd", h("pt-release-loaded-pd"),
     STOPPED + r"ReleasePage breaks the rules: ReleasePage: page directory 0x[0-9a-f]+ is loaded in CR3", STOP),
    ("pt-announce-outside", h("pt-announce-outside"),
     STOPPED + r"AllocatePage breaks the rules: AllocatePage: frame 0x([0-9a-f]+) is outside its 0x\1 pages", STOP),
    ("pt-clone-range", h("pt-clone-range"),
     STOPPED + r"AllocatePage breaks the rules: AllocatePage: clone range 1000\+100 is not inside a page directory", STOP),
    ("pt-cr3-outside", h("pt-cr3-outside"), STOPPED + r"a CR3 write breaks the rules: CR3 0x[0-9a-f]{8} is outside its", STOP),
    ("pt-cr3-table", h("pt-cr3-table"), STOPPED + r"a CR3 write breaks the rules: CR3 0x[0-9a-f]{8} is a page table, not a page directory", STOP),
    ("pt-4m-page", h("pt-4m-page"),
     STOPPED + r"page fault at 02000000 \(error 0\) breaks the rules: 4 MiB page at linear 0x02000000", STOP),
    ("pt-rom-table", h("pt-rom-table"),
     STOPPED + r"page fault at [0-9a-f]{8} \(error 0\) breaks the rules: page table at guest-physical 0x000c0000 "
     r"is in the read-only option-ROM area \(A/D bits\)", STOP),
    ("pt-pae-flags", h("pt-pae-flags"),
     STOPPED + r"AllocatePage\([0-9a-f]+, flags 5\): a non-PAE guest announces a page table", STOP),
    ("pt-link-count", "tguest=links",
     STOPPED + r"AllocatePage breaks the rules: directory 0x[0-9a-f]+ PDE 15: table 0x[0-9a-f]+ is linked from 65535 PDEs \(the limit\)", STOP),
    ("pt-outside-memory-nopaging", "tguest=outside", STOPPED + r"page fault at 3f000000", STOP),
    ("pt-switcher-write-nopaging", "tguest=switcher", STOPPED + r"page fault at ffc00000 \(error 3\) breaks the rules: [^\n]*reserved top", STOP),
    ("rom-write", "tguest=romwrite", STOPPED + r"page fault at 000c0000 \(error 3\) breaks the rules: paging off: write to the VMI ROM area", STOP),
    # ---- the shared page's queue ----
    ("queue-count", h("queue-count"), STOPPED + r"shared page: pxe_count %d is larger than the queue \(%d entries\)" % (QUEUE_LEN + 1, QUEUE_LEN), STOP),
    ("queue-count-negative", h("queue-count-negative"),
     STOPPED + r"shared page: pxe_count 4294967295 is larger than the queue \(%d entries\)" % QUEUE_LEN, STOP),
    ("queue-bad-address", h("queue-bad-address"),
     STOPPED + r"shared page: queued page-table entry 0 of 1 at 3f000000 does not translate", STOP),
    ("queue-switcher-address", h("queue-switcher-address"),
     STOPPED + r"shared page: queued page-table entry 0 of 1 at ffc00000 does not translate", STOP),
    ("queue-changed", h("queue-changed"), DELIVERED % (14, 0) + r"eip [0-9a-f]{8} cs 00000011 cr2 02000000", SHUTDOWN),
    # ---- VMI calls ----
    ("vmi-unimplemented", "tguest=vmi", STOPPED + r"unimplemented VMI call 84 \(WallclockUpdated\)", STOP),
    # ---- Linux, vmi_selftest= (guest patch 0011) ----
    ("linux-bad-descriptor", "linux:bad-descriptor", STOPPED + r"WriteGDTEntry 28 \(selector 0xe0\): system descriptor type 0xc ", STOP),
    ("linux-outside-frame", "linux:outside-frame",
     STOPPED + r"page fault at [0-9a-f]{8} \(error \d+\) breaks the rules: guest PTE 0xe0000[0-9a-f]{3} ", STOP),
    ("linux-switcher-write", "linux:switcher-write",
     STOPPED + r"page fault at ffc00000 \(error 3\) breaks the rules: guest maps linear 0xffc00000 in the reserved top", STOP),
    ("linux-triple-fault", "linux:triple-fault",
     STOPPED + TRIPLE + r"vector 6, then 13 \(beyond the IDT limit\), then the double fault", STOP),
]

END_LINE = {STOP: STOPPED, SHUTDOWN: r"vmi-hv: guest shutdown: the guest called Shutdown", REBOOT: r"vmi-hv: guest reboot: "}


def boot_pair(t, what):
    """The hypervisor with the offender as guest 1 and tguest=idle as guest 2."""
    t.require(paths.HV_ELF, TGUEST)
    tiny = t.tmpfile("tiny-initrd", b"not an initramfs, the test guest ignores it\n")
    idle = f"{TGUEST} tguest=idle,{tiny}"
    if what.startswith("linux:"):
        t.require(paths.BZIMAGE, paths.INITRD)
        first = f"{paths.BZIMAGE} console=ttyS0,,115200 vmi_selftest={what[6:]},{paths.INITRD}"
        mem = "320"
    else:
        first = f"{TGUEST} {what},{tiny}"
        mem = "128"
    # The test guests run under the continuous audit at every page-table
    # notification, so a shadow left stale even for a moment stops the
    # guest there (Linux boots too long for it).
    audit = [] if what.startswith("linux:") else ["-append", "audit=every=1"]
    return t.qemu("-m", mem, "-kernel", paths.HV_ELF, *audit, "-initrd", f"{first},{idle}", fatal=HV_BROKEN)


def run_case(t, name, what, diagnostic, end):
    """One case under the five conditions; returns its diagnostic line."""
    q = boot_pair(t, what)
    q.expect(r"vmi-hv: machine frames free: \d+ after guest guest1's end", timeout=300 if what.startswith("linux:") else 60)
    # The second guest may be ready before or after the first one ends.
    if not re.search(r"\[guest2\] idle: waiting for input", q.output):
        q.expect(r"\[guest2\] idle: waiting for input", timeout=60)
    m = re.search(diagnostic, q.output)
    t.check(m, f"{name}: no /{diagnostic}/ in the output")
    t.check(re.search(END_LINE[end], q.output), f"{name}: the guest did not end {end}")
    # The second guest still runs and answers; then Ctrl-] s, Ctrl-] q.
    q.send("y")
    q.expect(r"\[guest2\] idle: got y", timeout=30)
    q.send("\x1ds")
    q.expect(r"vmi-hv: statistics \(guest running", timeout=30)
    q.send("\x1dq")
    q.expect(r"vmi-hv: guest stopped: stopped from the console \(Ctrl-\] q\)", timeout=30)
    q.expect(r"vmi-hv: machine frames free: \d+ after guest guest2's end", timeout=30)
    stays_responsive(t, q)
    check_invariants(t, q.output, name)
    line = m.group(0).strip().splitlines()[-1] if m else "?"
    return re.sub(r"^(\[guest1\] )", "", line)


@test("hv-hostile-suite")
def hv_hostile_suite(t):
    """Every case of CASES beside a second guest, under the five
    conditions in this file's docstring; each case's diagnostic is noted.
    VMIHV_HOSTILE=name,name runs only those."""
    only = [n for n in os.environ.get("VMIHV_HOSTILE", "").split(",") if n]
    t.check(len(CASES) >= 40, f"{len(CASES)} cases, expected at least 40")
    names = [c[0] for c in CASES]
    t.check(len(names) == len(set(names)), "duplicate case names")
    start = time.monotonic()
    ran = 0
    for name, what, diagnostic, end in CASES:
        if only and name not in only:
            continue
        line = run_case(t, name, what, diagnostic, end)
        ran += 1
        t.note(f"{name} ({end}): {line}")
    t.note(f"{ran} cases, each beside a second guest that kept answering, in {time.monotonic() - start:.0f} s")
