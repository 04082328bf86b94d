"""The hostile-guest suite (docs/HV.md, "Tests"): every case in one table,
with the diagnostic it must end in.

A case is one guest doing one hostile thing, from ring 1 (the tiny test
guest: `tguest=h:NAME` in tests/guests/tguest_hostile.c, or one of its
older modes; Linux's `vmi_selftest=NAME`) or from ring 3 (the test
guest's user mode).  Each runs beside a second guest, the test guest's
`tguest=idle`, which must keep running and answering through every case.

A case passes only if:
  1. the offender ends the way the table says (stopped by the hypervisor,
     or powered off after the fault was delivered to it, or rebooted: it
     starts again, and the console stops it) and its output or the stop
     line matches the case's diagnostic (a regex);
  2. the hypervisor never faulted (vmitest.FATAL_PATTERNS, a stop reason
     that blames the hypervisor: hvguest.HV_FAULT_STOPS);
  3. the second guest still answers a byte typed to it and is still
     granted frames (idle_allocate: an LDT, a new vTLB table), then the
     hypervisor answers Ctrl-] s and Ctrl-] q (which stops the second
     guest), then, with no guest left, 's' twice and 'q';
  4. every shadow audit in the guests' end reports shows 0 mismatches;
  5. with both guests ended, the machine frames free are back at their
     count before the guests ran.

After the suite, tests of their own on the same two-guest boot: the
string port I/O calls (hv-string-io-*: what they move, a #PF the guest
fixes half-way, a count of 2^32-1 that the test stops) and the
vmi_refuse= knob (hv-vmi-refuse, hv-vmi-refuse-bad-option), see
docs/VROM.md.

Cases that were already tests of their own (hv-tguest-*, hv-linux-*,
hv-tguest-ldt, hv-tguest-link-count) are counted in: the table lists them
and the suite runs them again under these five conditions.
"""

import os
import re
import statistics
import time

from vmitest import TestFailure, accel_for, paths, smp_args, test
from testguest import tguest_modules
from hvguest import (SERIAL_CMDLINE, ends_cleanly, expect_bad_input, hv_modules, stays_responsive,
                     stop_console_guest_and_quit)
from guest_end import HV_BROKEN, check_invariants
from hvstats import hv_statistics


def _queue_len():
    """The shared page's page-table queue length, from its one definition."""
    with open(os.path.join(paths.ROOT, "vrom", "abi", "vmi-13.0.def")) as f:
        return int(re.search(r"const VMI_SHARED_PXE_QUEUE_LEN\s+(\d+)", f.read()).group(1))


QUEUE_LEN = _queue_len()


def _budget_frames():
    """A guest's frame budget, HV_RESERVED_FRAMES, from its one definition."""
    with open(os.path.join(paths.ROOT, "hv", "mm", "guest_mem.h")) as f:
        expr = re.search(r"#define HV_RESERVED_FRAMES\s+\(([^)]*)\)", f.read()).group(1)
    return int(eval(expr.replace("u", ""), {}))


BUDGET_FRAMES = _budget_frames()


def _vmi_calls():
    """VMI call numbers by name, from the generated header (one definition)."""
    with open(os.path.join(paths.BUILD, "include", "vmi_abi.h")) as f:
        return {m.group(1): int(m.group(2)) for m in re.finditer(r"#define VMI_CALL_(\w+)\s+(\d+)\b", f.read())}


def _alarm_min_us():
    """VALARM_MIN_US, the least alarm period, from its one definition."""
    with open(os.path.join(paths.ROOT, "hv", "dev", "valarm.h")) as f:
        return int(re.search(r"#define VALARM_MIN_US\s+(\d+)", f.read()).group(1))


ALARM_MIN_US = _alarm_min_us()
# What tguest_floods.c's say_armed_span() reports after an alarm case.
ARMED_SPAN = (r"(?s:.*?)floods: REAL cycles armed, high word ([0-9a-f]{8})\n(?s:.*?)"
              r"floods: REAL cycles armed, low word ([0-9a-f]{8})\n(?s:.*?)floods: cycles per ms ([0-9a-f]{8})\n")
# The count each alarm case reports, its diagnostic with ARMED_SPAN.
ALARM_RATE_CASES = {"alarm-taken": r"floods: alarm interrupts taken: ([0-9a-f]{8})\n",
                    "alarm-past": r"floods: past one-shot alarm interrupts: ([0-9a-f]{8})\n"}


def alarm_rate_holds(t, name, output):
    """At most one alarm per VALARM_MIN_US of the REAL time the guest had
    its alarm armed, and at least a tenth of that, one interrupt taken (the first expiry is at least that far from the
    arming, each next one that far from the last): the alarms the
    hypervisor fired, in guest 1's end report, against the span the guest
    reports.  (The interrupts the guest took are fewer: an expiry that
    finds IRQ0 still requested adds none, and under TCG taking one costs
    the guest more than 100 us.)  One more is allowed for the one-shot
    that alarm-past's last tick armed, which fires after the count."""
    text = re.sub(r"\[guest1\] ", "", output)
    m = re.search(ALARM_RATE_CASES[name] + ARMED_SPAN, text)
    end = text.find("after guest guest1's end")
    fired = re.findall(r"vmi-hv: virtual interrupts: \d+ delivered, (\d+) alarms fired", text[:end])
    t.check(m and fired, f"{name}: no interrupt count, armed span or end report in the output")
    if not (m and fired):
        return ""
    ticks, high, low, per_ms = (int(x, 16) for x in m.groups())
    armed_us = ((high << 32) | low) * 1000 / per_ms
    bound = int(armed_us // ALARM_MIN_US) + 2
    t.check(int(fired[-1]) <= bound, f"{name}: {fired[-1]} alarms fired in {armed_us / 1000:.1f} ms armed, "
            f"more than one per {ALARM_MIN_US} us ({bound})")
    # And at least a tenth of that rate, one interrupt taken: an alarm that
    # stopped arming, or a past one-shot never delivered, fires none (a
    # loaded TCG host was seen firing 329-928 of the 1,000 allowed).
    floor = int(armed_us // ALARM_MIN_US) // 10
    t.check(ticks >= 1 and int(fired[-1]) >= floor,
            f"{name}: {fired[-1]} alarms fired and {ticks} interrupts taken in {armed_us / 1000:.1f} ms armed, "
            f"expected at least {floor} fired (a tenth of one per {ALARM_MIN_US} us) and one taken")
    return (f"floods: {fired[-1]} alarms fired and {ticks} interrupts taken in {armed_us / 1000:.1f} ms armed, "
            f"at most {bound} (one per {ALARM_MIN_US} us)")


# life-inval-run's count, read in guest 1's own end report: its first
# power-off after the marker (nothing may pass one), then that report's
# lines up to its VMI calls line, which names InvalPage at most once.
# (A lazy wildcard to any "VMI calls:" line took guest 2's, which has none.)
LIFE_INVAL_END = (r"(?:(?!vmi-hv: guest powered off)[\s\S])*vmi-hv: guest powered off: [^\n]*\n"
                  r"(?:vmi-hv: (?!VMI calls:)[^\n]*\n)*vmi-hv: VMI calls:(?![^\n]*InvalPage=(?!1\b)\d)[^\n]*\n")


def vc(name):
    """A regex for 'VMI call N (Name)', N from the generated header."""
    return r"VMI call %d \(%s\)" % (_vmi_calls()[name], name)


def slot_int(name):
    """The guest-physical address of the int $0x82 in call name's ROM slot
    (the ROM at 0xC0000, from build/vrom/vmi.rom)."""
    n = _vmi_calls()[name]
    with open(os.path.join(paths.BUILD, "vrom", "vmi.rom"), "rb") as f:
        rom = f.read()
    return 0xC0000 + n * 32 + rom[n * 32:n * 32 + 32].index(b"\xcd\x82")


# How the offender ends.  HOLD: it keeps running with what it took; the
# second guest allocates meanwhile, then the console stops the offender.
STOP, SHUTDOWN, REBOOT, HOLD = "stopped", "shutdown", "reboot", "held"
# BUSY: it keeps doing its hostile thing (no frames to account); the second
# guest answers a key meanwhile, then the console stops the offender.
BUSY = "busy"

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


def _hv_selectors():
    """The hypervisor's GDT selectors (HV_CS, HV_DS, HV_TSS_SEL,
    HV_DFTSS_SEL), from their one definition, hv/include/segments.h."""
    with open(os.path.join(paths.ROOT, "hv", "include", "segments.h")) as f:
        text = f.read()
    index = {m.group(1): int(m.group(2), 0) for m in re.finditer(r"#define HV_GDT_(\w+)_INDEX\s+(\w+)", text)}
    return {name: index[slot] << 3 for name, slot in
            (("HV_CS", "CS"), ("HV_DS", "DS"), ("HV_TSS_SEL", "TSS"), ("HV_DFTSS_SEL", "DFTSS"))}


HV_SEL = _hv_selectors()


def user(program, case=None):
    """A Linux user program as the offender: the guest boots with
    vmitest=program (guest/programs/<program>.c, run from the initrd) and,
    for the comparison programs, program=case to run that case alone
    (guest/programs/only_case.h).  The program's line is the diagnostic;
    the guest reboots when it is done."""
    return f"vmitest:{program}" + (f" {program}={case}" if case else "")


def sigret_hv(reg, sel):
    """sigretcmp's case: sigreturn with the hypervisor's selector sel (RPL 3) in reg."""
    return f"{reg}-hv-0x{sel | 3:x}"


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
    # The same 200 times, the #NP handler skipping each ud2: the line for
    # each failed delivery is logged GUEST_LOG_LIMIT times, the last saying
    # that more are only counted (checked by hv-guest-log-limits).
    ("idt-not-present-loop", h("idt-not-present-loop"), r"hostile: #NP taken for the ud2s 000000c8\n", SHUTDOWN),
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
    # ---- round 2: user programs ----
    # A Linux user program (uid 65534) gets what it gets natively (the
    # kernel's iret-error SIGILL for CS and SS; a data selector nulled by
    # the kernel's fix-up, which glibc's %gs then trips over); its guest
    # lives on, runs the program to its end and reboots.
    ("user-read-reserved-top", user("ring3cmp", "read-0xfc000000"), r"read-0xfc000000: signal SIGSEGV\n", REBOOT),
    ("user-write-reserved-top", user("ring3cmp", "write-0xfc000000"), r"write-0xfc000000: signal SIGSEGV\n", REBOOT),
    ("user-jump-switcher", user("ring3cmp", "jump-0xffc00000"), r"jump-0xffc00000: signal SIGSEGV\n", REBOOT),
    ("user-fork-loop-bss", user("forkloop"), r"FORKLOOP forks=1000 rc=0\n(?s:.*)VMITEST-DONE name=forkloop rc=0", REBOOT),
    ("user-sigreturn-cs-hv-cs", user("sigretcmp", sigret_hv("cs", HV_SEL["HV_CS"])),
     sigret_hv("cs", HV_SEL["HV_CS"]) + r": SIGILL code 8\n", REBOOT),
    ("user-sigreturn-ss-hv-ds", user("sigretcmp", sigret_hv("ss", HV_SEL["HV_DS"])),
     sigret_hv("ss", HV_SEL["HV_DS"]) + r": SIGILL code 8\n", REBOOT),
    ("user-sigreturn-ds-hv-tss", user("sigretcmp", sigret_hv("ds", HV_SEL["HV_TSS_SEL"])),
     sigret_hv("ds", HV_SEL["HV_TSS_SEL"]) + r": ok\n", REBOOT),
    ("user-sigreturn-gs-hv-dftss", user("sigretcmp", sigret_hv("gs", HV_SEL["HV_DFTSS_SEL"])),
     sigret_hv("gs", HV_SEL["HV_DFTSS_SEL"]) + r": killed SIGSEGV\n", REBOOT),
    ("user-ptrace-setregs-cs-hv-tss", user("ring3cmp", f"ptrace-setregs-cs-0x{HV_SEL['HV_TSS_SEL'] | 3:x}"),
     f"ptrace-setregs-cs-0x{HV_SEL['HV_TSS_SEL'] | 3:x}" + r": exit 104\n", REBOOT),    # the tracee: SIGILL
    ("user-popf-nt-kept", user("ring3cmp", "popf-nt-kept"), r"popf-nt-kept: ok\n", REBOOT),
    ("user-iret-with-nt", user("ring3cmp", "iret-with-nt"), r"iret-with-nt: signal SIGSEGV\n", REBOOT),
    ("user-sigreturn-eip-reserved-top", user("sigretcmp", "eip-reserved-top"), r"eip-reserved-top: SIGSEGV code 1\n", REBOOT),
    # The guest kernel (ring 1) naming the hypervisor's slots, or a TSS,
    # where a segment belongs: #GP(selector), as in an empty slot.
    ("farjmp-hv-cs", h("farjmp-hv-cs"), DELIVERED % (13, HV_SEL["HV_CS"]), SHUTDOWN),
    ("mov-ds-hv-ds", h("mov-ds-hv-ds"), DELIVERED % (13, HV_SEL["HV_DS"]), SHUTDOWN),
    ("idt-gate-hv-cs", h("idt-gate-hv-cs"), DELIVERED % (13, HV_SEL["HV_CS"]), SHUTDOWN),
    ("idt-gate-hv-tss", h("idt-gate-hv-tss"), DELIVERED % (13, HV_SEL["HV_TSS_SEL"]), SHUTDOWN),
    ("idt-gate-tss", h("idt-gate-tss"), DELIVERED % (13, 0x30), SHUTDOWN),
    # The direct int $0x80 gate's push onto a kernel stack not yet in the
    # shadow: a supervisor fault at CPL 3, filled as the kernel's access.
    ("int80-fresh-kstack", h("int80-fresh-kstack"), r"hostile: landed: cs 00000011\n", SHUTDOWN),
    # ...and not through a gate of an IDT the guest has since replaced by lidt.
    ("int80-gate-after-lidt", h("int80-gate-after-lidt"), DELIVERED % (11, 0x80 * 8 + 2) + r"eip [0-9a-f]{8} cs 00000023", SHUTDOWN),
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
    # CPUID hides SEP: the write of our CS never reaches the CPU, and the
    # MSR reads as absent (unsupported, as msr-vmi-absent).
    ("msr-sysenter-cs", h("msr-sysenter-cs"), r"hostile: SYSENTER_CS reads ffffffda\n", SHUTDOWN),
    ("msr-unknown", h("msr-unknown"), DELIVERED % (13, 0), SHUTDOWN),
    ("msr-apic-base", h("msr-apic-base"), DELIVERED % (13, 0), SHUTDOWN),
    ("dr7-switcher", h("dr7-switcher"), r"hostile: dr7 reads 000f0003\n(?s:.*)hostile: switcher word 0 reads", SHUTDOWN),
    ("dr-bad-number", h("dr-bad-number"), r"hostile: survived", SHUTDOWN),
    ("dr-mov", h("dr-mov"), STOPPED + r"unsupported instruction 0f 23 f8 \(mov to DR", STOP),
    ("unknown-insn", "tguest=unsupported", STOPPED + r"unsupported instruction 0f 35\r?\nvmi-hv: instruction at guest eip 0011:001[0-9a-f]{5} \(vCPU 0\): 0f 35", STOP),
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
    # ---- round 2: budgets ----
    # Frame budgets (docs/MEMORY.md, "Frame budgets"): a guest that announces
    # tables by the thousand is evicted within its own budget (down to the
    # loaded directory's tables, linked again at a fault); the second guest's allocations
    # (idle_allocate: an LDT, a new vTLB table) are still granted.  THE
    # exhaustion case, budget-pd-flood, holds its frames while the second
    # guest allocates (HOLD).
    ("budget-pd-flood", h("budget-pd-flood"),
     r"hostile: 4000 page directories announced; 02000000 reads 00001234\n", HOLD),
    ("budget-pt-flood", h("budget-pt-flood"), r"hostile: 4000 page tables announced; 02000000 reads 00001234\n", SHUTDOWN),
    ("budget-clone-flood", h("budget-clone-flood"),
     r"hostile: 2000 cloned directories announced; through the last one, h_page reads 00000042\n", SHUTDOWN),
    ("budget-two-directories", h("budget-two-directories"),
     r"hostile: second directory of 1008 tables announced; h_page reads 00000077\n", SHUTDOWN),
    ("budget-ldt-after-flood", h("budget-ldt-after-flood"),
     r"hostile: after 4000 page directories, the LDT's segment reads 0000abcd\n", SHUTDOWN),
    # ---- the shared page's queue ----
    ("queue-count", h("queue-count"), STOPPED + r"shared page: pxe_count %d is larger than the queue \(%d entries\)" % (QUEUE_LEN + 1, QUEUE_LEN), STOP),
    ("queue-count-negative", h("queue-count-negative"),
     STOPPED + r"shared page: pxe_count 4294967295 is larger than the queue \(%d entries\)" % QUEUE_LEN, STOP),
    ("queue-bad-address", h("queue-bad-address"),
     STOPPED + r"shared page: queued page-table entry 0 of 1 at 3f000000 does not translate", STOP),
    ("queue-switcher-address", h("queue-switcher-address"),
     STOPPED + r"shared page: queued page-table entry 0 of 1 at ffc00000 does not translate", STOP),
    ("queue-changed", h("queue-changed"), DELIVERED % (14, 0) + r"eip [0-9a-f]{8} cs 00000011 cr2 02000000", SHUTDOWN),
    # ---- round 3: queued lifecycle calls ----
    # AllocatePage and ReleasePage in the shared page's queue (F_PTLIFE,
    # docs/MEMORY.md "Queued page-table lifecycle calls").
    ("life-release-reused", h("life-release-reused"),
     r"hostile: released directory reused as data before the drain; 02000000 reads 00004242\n", SHUTDOWN),
    ("life-pt-and-pd", h("life-pt-and-pd"),
     r"hostile: announced as PT and PD in one batch; frame 0*([0-9a-f]+)\n(?s:.*)" + STOPPED +
     r"a page-table entry write breaks the rules: directory 0x[0-9a-f]+ PDE 8 names directory 0x\1 as a page table", STOP),
    ("life-512", h("life-512"), r"hostile: after 512 lifecycle calls, 02000000 reads 00005120\n", SHUTDOWN),
    ("life-cut-short", h("life-cut-short"),
     STOPPED + r"shared page: queued AllocatePage at entry 0 of 3 is cut short \(5 argument words\)", STOP),
    ("life-not-queued", h("life-not-queued"),
     STOPPED + r"shared page: queued entry 0 of 2 is VMI call %d, which is not queued" % _vmi_calls()["SetCR3"], STOP),
    # A run of InvalPages through the ROM after queued writes: every page
    # reads its new frame, and the run made at most one InvalPage hypercall
    # (F_INVAL; none if a host interrupt drained the queue first).
    ("life-inval-run", h("life-inval-run"),
     r"hostile: pages reading the new frame after 16 queued writes and 16 InvalPages 00000010\n"
     + LIFE_INVAL_END, SHUTDOWN),
    # A queue the exit's work limit cuts (a directory's build) before a
    # write that took RW: the continuous audit after the first part waits
    # for the rest instead of calling that write missed.
    ("drain-split-audit", h("drain-split-audit"),
     r"hostile: split drain under the audit; 02000000 reads 0000abcd\n", SHUTDOWN),
    # ---- VMI calls ----
    # A call with no code, in the hypervisor (SetPxELong made straight
    # through int $0x82) or
    # in the ROM, answers unsupported (docs/VROM.md, "Transport", item 6):
    # the guest probes it.
    ("vmi-unimplemented", "tguest=vmi", r"tguest: SetPxELong returned eax ffffffda edx ffffffff\n", SHUTDOWN),
    ("vmi-unsupported-slot", h("refuse"), r"hostile: SetPxELong: eax ffffffda edx ffffffff\n(?s:.*)hostile: survived", SHUTDOWN),
    # ---- round 3: power and ABI ----
    # An MSR the guest does not have: the VMI calls answer unsupported
    # (the guest's read_msr_safe/write_msr_safe take it for the #GP the
    # instruction raises: msr-unknown), the one it has answers.
    ("msr-vmi-absent", h("msr-vmi-absent"),
     r"hostile: RDMSR c0000080: eax ffffffda edx ffffffff\n(?s:.*)hostile: WRMSR c0000080: eax ffffffda "
     r"(?s:.*)hostile: RDMSR 0000008b: eax 00000000 edx 00000000\n(?s:.*)hostile: WRMSR 0000008b: eax 00000000 ", SHUTDOWN),
    # ---- string port I/O (INS/OUTS calls, docs/VROM.md "String port I/O") ----
    ("str-unmapped", h("str-unmapped"),
     DELIVERED % (14, 2) + r"eip %08x cs 00000011 cr2 02000000" % slot_int("INSB"), SHUTDOWN),
    ("str-switcher", h("str-switcher"),
     DELIVERED % (14, 0) + r"eip %08x cs 00000011 cr2 ffc00000" % slot_int("OUTSB"), SHUTDOWN),
    ("str-reserved-top", h("str-reserved-top"),
     STOPPED + vc("INSB") + r": buffer ffc00000 \(element at ffc00000, 4 of 4 left\), port 0x64: "
     r"write of linear ffc00000: paging off: linear 0xffc00000 is in the hypervisor's reserved top", STOP),
    ("str-reserved-mapped", h("str-reserved-mapped"),
     STOPPED + vc("OUTSB") + r": buffer ff000000 \(element at ff000000, 4 of 4 left\), port 0x3f8: "
     r"read of linear ff000000: guest maps linear 0xff000000 in the reserved top", STOP),
    ("str-outside", h("str-outside"),
     STOPPED + vc("OUTS") + r": buffer ([0-9a-f]{8}) \(element at \1, 4 of 4 left\), port 0x80: "
     r"read of linear \1: paging off: guest-physical 0x\1 is outside its", STOP),
    ("str-rom", h("str-rom"),
     STOPPED + vc("INSB") + r": buffer 000c0000 [^\n]*write to the VMI ROM area", STOP),
    ("str-port-high", h("str-port-high"),
     STOPPED + vc("OUTSB") + r": " + OUT_OF_RANGE % "5000" + r"[^\n]*\(buffer [0-9a-f]{8}, count 4\)", STOP),
    ("str-port-wide", h("str-port-wide"),
     STOPPED + vc("INSB") + r": port 0x10064 is not a 16-bit port \(buffer [0-9a-f]{8}, count 4\)", STOP),
    ("str-port-edge", h("str-port-edge"),
     STOPPED + vc("INS") + r": port in 0x3fe \(4 bytes\) is outside the legacy PC I/O range", STOP),
    # 2^32-1 bytes from 8 MiB: 2048 batches, then the #PF where the map ends.
    ("str-huge-count", h("str-huge-count"),
     DELIVERED % (14, 0) + r"eip %08x cs 00000011 cr2 01000000" % slot_int("OUTSB"), SHUTDOWN),
    # ---- round 2: floods and consoles ----
    # Rates a guest controls (docs/HV.md): an alarm period or expiry
    # nearer than 100 us is raised to it.
    ("alarm-flood", "tguest=f:alarm-flood",
     r"vmi-hv: guest guest1: SetAlarm \(flags 100\) period 1 cycles, expiry \d+: raised to the minimum, 100 us\n"
     r"(?s:.*)floods: 300 ms with a period-1 alarm and IRQ0 masked", SHUTDOWN),
    # A period of 1 cycle raised to the 100 us minimum: at most one alarm
    # per 100 us of the REAL time it was armed, not millions
    # (alarm_rate_holds: the alarms fired against the span the guest
    # reports).  A loaded TCG host once made a spin of "100 ms" last 233
    # ms (taking each interrupt cost about a period), with 1415
    # interrupts: within the rate, past the old bound of 1000 per 100 ms.
    ("alarm-taken", "tguest=f:alarm-taken", ALARM_RATE_CASES["alarm-taken"] + ARMED_SPAN, SHUTDOWN),
    ("alarm-past", "tguest=f:alarm-past", ALARM_RATE_CASES["alarm-past"] + ARMED_SPAN, SHUTDOWN),
    # Guest output cannot move the cursor off its own text (docs/CONSOLE.md,
    # "The consoles"): a bare CR writes the true label again (the runner
    # drops CRs from the output: "forged[guest1] [guest2]"), other
    # cursor moves and erases show as caret notation, BS stops at the
    # label (the first shows as ^H, the next two go back over it),
    # colours stay and are reset at the line's end, before its newline
    # (every row starts with its label: run_case checks).
    ("console-forge", "tguest=f:console-forge",
     r"\[guest1\] floods: forged\[guest1\] \[guest2\] idle: got z\n"
     r"(?s:.*)\[guest1\] floods: \^\[\[2K\^\[\[1G\[guest2\] idle: got z\n"
     r"(?s:.*)\[guest1\] \^\[\[1A\^\[\[2Kvmi-hv: guest stopped: forged\n"
     r"(?s:.*)\[guest1\] \^H\x08\x08\[guest2\] idle: got z\n"
     r"(?s:.*)\[guest1\] floods: query dropped, \x1b\[1;31mred\x1b\[0m kept, \x1b\[8mhidden\x1b\[0m\n"
     r"(?s:.*)\[guest1\] floods: \^\[c reset, \^\[\]0;title\x07, \^L form feed\n"
     r"(?s:.*)\[guest1\] floods: forged lines written", SHUTDOWN),
    # A row cut by another line (docs/CONSOLE.md, "The consoles"): its start
    # went out (the guest halted), the hypervisor logged a denied port read
    # (or the second guest wrote a line), then the row ended: the console
    # shows the row again whole, its colours too, after the cut piece.
    ("console-cut", "tguest=f:console-cut",
     r"\[guest1\] floods: a row \x1b\[1mcut\x1b\[0m by the hypervisor's line, \n"
     r"(?s:.*)port in 0x3e8 \(1 bytes, returning 0xff\) denied[^\n]*\n"
     r"(?s:.*)\[guest1\] floods: a row \x1b\[1mcut\x1b\[0m by the hypervisor's line, then ended whole\n", SHUTDOWN),
    # CR0.NE: an unmasked x87 exception is #MF in the guest (fsw: ES,
    # ZE and the busy bit), not the lost legacy IRQ13.
    ("x87-mf", "tguest=f:x87-mf", r"floods: #MF delivered: fsw 0000[0-9a-f]{2}8[4c]\n", SHUTDOWN),
    # One OUTSB of 4096 bytes to COM1: each byte waits for the real UART
    # (87 us at 115200 baud), so a batch ends after 16 of them
    # (EMUL_REP_SLOW_MAX): 256 batches, 255 continued, interrupts off for
    # at most 16 byte times at a stretch instead of 350 ms.
    ("outsb-uart", "tguest=f:outsb-uart",
     r"floods: OUTSB of 4096 bytes to COM1 returned 00000000\n(?s:.*)"
     r"string port I/O calls \(INS/OUTS\): 4096 elements, 255 batches continued", SHUTDOWN),
    # ---- Linux, vmi_selftest= (guest patch 0020) ----
    ("linux-bad-descriptor", "linux:bad-descriptor", STOPPED + r"WriteGDTEntry 28 \(selector 0xe0\): system descriptor type 0xc ", STOP),
    ("linux-outside-frame", "linux:outside-frame",
     STOPPED + r"page fault at [0-9a-f]{8} \(error \d+\) breaks the rules: guest PTE 0xe0000[0-9a-f]{3} ", STOP),
    ("linux-switcher-write", "linux:switcher-write",
     STOPPED + r"page fault at ffc00000 \(error 3\) breaks the rules: guest maps linear 0xffc00000 in the reserved top", STOP),
    ("linux-triple-fault", "linux:triple-fault",
     STOPPED + TRIPLE + r"vector 6, then 13 \(beyond the IDT limit\), then the double fault", STOP),
    # ---- round 3: shared-page PIC and alarm ----
    # The 8259 state the ROM keeps in the shared page is checked at every
    # exit (docs/VROM.md, "The 8259s and the alarm without an exit"): a
    # mask wider than 8 bits, in-service bits never set; a chip the
    # hypervisor did not publish as ready is not taken at all; an
    # alarm_lazy written past the ROM is a SetAlarm call, its token put back.
    ("pic-mask-wide", h("pic-mask-wide"), STOPPED + r"shared page: 8259 master mask 0x1ff is not 8 bits", STOP),
    ("pic-isr-forged", h("pic-isr-forged"),
     STOPPED + r"shared page: 8259 slave in-service bits 0x40 were never set \(in service: 0x0\); an EOI only clears them", STOP),
    ("pic-ready-forged", h("pic-ready-forged"), r"hostile: master mask after a forged ready bit 00000000\n", SHUTDOWN),
    ("alarm-lazy-garbage", h("alarm-lazy-garbage"), r"hostile: alarm_lazy high words after the exit 80000000\n", SHUTDOWN),
    # ---- round 4: calls that used to stop a guest ----
    # No VMI 13.0 call stops a guest merely for being called (docs/VROM.md,
    # "Calls that used to stop a guest"): RDPMC reads a virtual zero,
    # SYSEXIT is an unsupported slot a guest probes with call, SetIOPLMask
    # keeps a virtual IOPL (shown, never real, granting no port: ring 3's
    # out is still #GP), a mask with other bits is refused, and
    # WallclockUpdated says 1 until the guest has read the clock.
    ("vmi-rdpmc", h("vmi-rdpmc"),
     r"hostile: RDPMC 0: eax 00000000 edx 00000000\n(?s:.*)hostile: RDPMC 40000000: eax 00000000 edx 00000000\n"
     r"(?s:.*)hostile: RDPMC ffffffff: eax 00000000 edx 00000000\n(?s:.*)hostile: survived", SHUTDOWN),
    ("vmi-sysexit-probe", h("vmi-sysexit-probe"),
     r"hostile: SYSEXIT: eax ffffffda edx ffffffff\n(?s:.*)hostile: survived", SHUTDOWN),
    ("vmi-iopl", h("vmi-iopl"),
     r"hostile: IOPL at start: ROM 00000000 hypercall 00000000 real 00000000\n"
     r"(?s:.*)hostile: SetIOPLMask 3000: eax 00000000 "
     r"(?s:.*)hostile: IOPL after SetIOPLMask 3000: ROM 00003000 hypercall 00003000 real 00000000\n"
     r"(?s:.*)" + DELIVERED % (13, 0) + r"eip [0-9a-f]{8} cs 00000023", SHUTDOWN),
    ("vmi-iopl-garbage", h("vmi-iopl-garbage"),
     r"hostile: SetIOPLMask ffffffff: eax ffffffda (?s:.*)hostile: SetIOPLMask 3200: eax ffffffda "
     r"(?s:.*)hostile: IOPL after the refused masks: ROM 00000000 hypercall 00000000 real 00000000\n"
     r"(?s:.*)hostile: SetIOPLMask 1000: eax 00000000 "
     r"(?s:.*)hostile: IOPL after SetIOPLMask 1000: ROM 00001000 hypercall 00001000 real 00000000\n"
     r"(?s:.*)hostile: survived", SHUTDOWN),
    ("vmi-wallclock", h("vmi-wallclock"),
     r"hostile: WallclockUpdated before reading: eax 00000001 "
     r"(?s:.*)hostile: the wall clock is past 2020-01-01 00000001\n"
     r"(?s:.*)hostile: WallclockUpdated after reading: eax 00000000 "
     r"(?s:.*)hostile: a second reading is not earlier 00000001\n"
     r"(?s:.*)hostile: WallclockUpdated after reading again: eax 00000000 (?s:.*)hostile: survived", SHUTDOWN),
    # ---- round 4: SMP guest calls ----
    # SetInitialAPState with garbage (docs/SMP.md, "A guest of several
    # vCPUs"): tguest=smp with smp_vcpus=N runs as a guest of N vCPUs
    # (case_options); each refusal answers VMI_ERROR_INVALID with its
    # reason, leaves the vCPU waiting, and the guest then starts it.
    ("smp-ap-state-garbage", "tguest=smp smp_vcpus=2",
     r"refused: the APState is not readable guest memory\n(?s:.*)refused: no vCPU has that APIC ID\n"
     r"(?s:.*)refused: cs 0010: not a ring-1 code selector(?s:.*)refused: descriptor table: "
     r"(?s:.*)refused: eflags 00020002: reserved, VM or NT bits\n(?s:.*)tguest: smp: AP up, APIC ID 00000001\n"
     r"(?s:.*)refused: that vCPU has started already\n(?s:.*)tguest: smp: survived, APs 00000001\n", SHUTDOWN),
    # The vLAPIC's garbage from a guest of three vCPUs, after its IPI
    # ping-pong (20 rounds, a pong from each AP): an LVT timer write of
    # vector 3, an unknown register, an IPI to APIC ID 99, an INIT IPI, a vector-3 IPI,
    # each refused with VMI_ERROR_INVALID and logged.
    ("smp-apic-garbage", "tguest=smp smp_vcpus=3",
     r"tguest: smp: rounds 00000014\n(?s:.*)APICWrite register 320 value 00000003 refused"
     r"(?s:.*)APICWrite register 1234 value 00000001 refused(?s:.*)APICRead register 1004 value 00000000 refused"
     r"(?s:.*)APICWrite register 300 value 00000040 refused(?s:.*)APICWrite register 300 value 00000500 refused"
     r"(?s:.*)APICWrite register 300 value 00000003 refused(?s:.*)tguest: smp: survived, APs 00000002\n", SHUTDOWN),
    # A guest of one vCPU: every SetInitialAPState is refused (vCPU 0 has
    # started, there is no other), an IPI to APIC ID 1 too; the guest goes on.
    ("smp-ap-state-one-vcpu", "tguest=smp smp_vcpus=1",
     r"SetInitialAPState for APIC ID 0 refused: that vCPU has started already\n"
     r"(?s:.*)tguest: smp: survived, APs 00000000\n", SHUTDOWN),
    # ---- round 5: SMP guests ----
    # (A ring-0 CS, a bad pointer, an APIC ID out of range, EFLAGS.VM and
    # an IPI to APIC ID 99 are round 4's.)  Bad APStates (docs/SMP.md, "A
    # guest of several vCPUs"): an EIP beyond the limit of its CS (a GDT
    # of the guest's own with a 4 KiB code segment) and, with paging on, a
    # CR3 outside guest memory: each refused with its reason, the vCPU left
    # waiting; then it starts.
    ("smp-ap-state-eip-cr3", "tguest=smpbad smp_vcpus=2",
     r"SetInitialAPState for APIC ID 1 refused: [^\n]*limit[^\n]*\n(?s:.*)tguest: smp: garbage EIP beyond the CS limit ffffffea\n"
     r"(?s:.*)SetInitialAPState for APIC ID 1 refused: [^\n]*\n(?s:.*)tguest: smp: garbage CR3 outside guest memory ffffffea\n"
     r"(?s:.*)tguest: smp: survived, APs 00000001\n", SHUTDOWN),
    # A foreign CR3 after VMI activation, when the AP loads a shadow
    # directory of its own: a CR3 naming one of the guest's page tables and
    # one outside its memory are refused; the AP then starts on its
    # directory and both vCPUs read their own mappings.
    ("smp-ap-state-foreign-cr3", "tguest=smpmmu smpmmu_cr3=bad smp_vcpus=2",
     r"refused: cr3 is not a page directory of the guest\n(?s:.*)tguest: smpmmu: garbage CR3 a page table ffffffea\n"
     r"(?s:.*)refused: [^\n]*\n(?s:.*)tguest: smpmmu: garbage CR3 outside guest memory ffffffea\n"
     r"(?s:.*)tguest: smpmmu: vCPU 0 wrong reads 00000000\n(?s:.*)tguest: smpmmu: vCPU 1 wrong reads 00000000\n", SHUTDOWN),
    # An ICR write to APIC ID 2 of a guest of two vCPUs (refused), then an
    # IPI storm: vCPU 0 sends IPIs to vCPU 1 without pause, for ever; the
    # second guest answers a key meanwhile (its IPIs cost the offender's
    # own exits and runs), then the console stops the offender.  Its
    # throughput beside the storm is measured by hv-victim-ipi-storm
    # (test_hv_victim.py).
    ("smp-ipi-storm", "tguest=smpstorm smp_vcpus=2",
     r"vCPU 0: APICWrite register 300 value 000000ef refused(?s:.*)tguest: smp: garbage IPI to APIC ID 2 of 2 ffffffea\n"
     r"(?s:.*)tguest: smp: storm: IPIs sent, the AP took some 00000001\n", BUSY),
    # The storm with vcpus_at_once=on (the word vcpus_at_once on the
    # guest's line, case_options): on -smp 2 both vCPUs run at once, each
    # IPI kicks the other CPU, and the console's stop comes while both are
    # inside the guest (the other CPU leaves at its exit, the last one out
    # reaps it).
    ("smp-ipi-storm-at-once", "tguest=smpstorm smp_vcpus=2 vcpus_at_once",
     r"tguest: smp: storm: IPIs sent, the AP took some 00000001\n", BUSY),
    # ---- round 5: the PMU's instruction (lead) ----
    # The kernel's rdpmc instruction reads the virtual zero of the RDPMC
    # call for any counter, where it used to stop the guest.
    ("insn-rdpmc", h("insn-rdpmc"),
     r"hostile: rdpmc 00000000: eax 00000000 edx 00000000\n(?s:.*)hostile: rdpmc 00000001: eax 00000000 edx 00000000\n"
     r"(?s:.*)hostile: rdpmc 40000000: eax 00000000 edx 00000000\n(?s:.*)hostile: survived", SHUTDOWN),
    # ---- the work of one exit ----
    # VMI Init again after the activation: refused (VMI_ERROR_INVALID), no
    # second activation report (hv-vmi-init-again counts them).
    ("vmi-init-again", h("vmi-init-again"), r"hostile: Init again returned ffffffea\n(?s:.*)hostile: survived", SHUTDOWN),
]

END_LINE = {STOP: STOPPED, SHUTDOWN: r"vmi-hv: guest powered off: the guest called Shutdown", REBOOT: r"vmi-hv: guest reboot: ",
            HOLD: STOPPED + r"stopped from the console \(Ctrl-\] q\)",
            BUSY: STOPPED + r"stopped from the console \(Ctrl-\] q\)"}
BUDGET_LINE = r"vmi-hv: frame budget: (\d+) of (\d+) frames in use \([^)]*; peak (\d+)\), (\d+) takes refused"


def boot_pair(t, what, options="", smp=1):
    """The hypervisor with the offender as guest 1 and tguest=idle as guest 2
    (options: more of the hypervisor's command line), on an -smp machine
    (MTTCG beyond one CPU: the two guests then run at once)."""
    idle = tguest_modules(t, "tguest=idle")
    if what.startswith("vmitest:"):
        # A user program of the initrd (user()); QEMU's -initrd doubles commas.
        t.require(paths.BZIMAGE, paths.INITRD)
        first = hv_modules(f"{SERIAL_CMDLINE} vmitest={what[len('vmitest:'):]}")
        mem = "320"
    elif what.startswith("linux:"):
        t.require(paths.BZIMAGE, paths.INITRD)
        first = f"{paths.BZIMAGE} console=ttyS0,,115200 vmi_selftest={what[6:]},{paths.INITRD}"
        mem = "320"
    else:
        first = tguest_modules(t, what)
        mem = "128"
    # The test guests run under the continuous audit at every page-table
    # notification, so a shadow left stale even for a moment stops the
    # guest there (Linux boots too long for it).
    audit = "" if what.startswith(("linux:", "vmitest:")) else "audit=every=1"
    append = " ".join(o for o in (audit, options) if o)
    audit = ["-append", append] if append else []
    return t.qemu(*smp_args(smp), "-m", mem, "-kernel", paths.HV_ELF, *audit, "-initrd", f"{first},{idle}",
                  fatal=HV_BROKEN, accel=accel_for(smp))


def guest2_said(q, pattern, since=0):
    """Whether the second guest's console text after since matches pattern.  Its
    lines may come in pieces ("[guest2] idle: waiting fo", later
    "[guest2] r input") when the first guest prints meanwhile, as on -smp
    2 where both run at once: its pieces are joined before the search."""
    return re.search(pattern, "".join(re.findall(r"^\[guest2\] ([^\n]*)", q.output[since:], re.M)))


def wait_guest2(q, pattern, timeout, since=0):
    deadline = time.monotonic() + timeout
    while not guest2_said(q, pattern, since):
        if time.monotonic() > deadline:
            raise TestFailure(f"timeout after {timeout}s waiting for the second guest to say /{pattern}/")
        q.expect(r"\n", timeout=max(1, deadline - time.monotonic()))


def second_guest_ready(q):
    """The second guest waits for input (it may get there before or after
    the first one ends)."""
    wait_guest2(q, r"idle: waiting for input", 60)


def second_guest_takes(q, key):
    """A key typed to the second guest (it has the console): it answers,
    then makes the hypervisor take frames for it (an LDT, a vTLB table)."""
    since = len(q.output)
    q.send(key)
    wait_guest2(q, r"idle: got %s" % re.escape(key), 30, since)
    wait_guest2(q, r"idle: allocated: the LDT's segment reads 00001d1e, "
                r"new page table for [0-9a-f]{8} reads 00000000", 30, since)


def second_guest_answers(t, q, name, statistics=False):
    """After guest 1's end: the second guest still runs and answers a key;
    then (Ctrl-] s, the statistics, and) Ctrl-] q stops it, its frames come
    back, the hypervisor stays up, and the invariants hold."""
    second_guest_takes(q, "y")
    if statistics:
        hv_statistics(q, timeout=30)
    q.send("\x1dq")
    q.expect(r"vmi-hv: guest stopped: stopped from the console \(Ctrl-\] q\)", timeout=30)
    q.expect(r"vmi-hv: machine frames free: \d+ after guest guest2's end", timeout=30)
    stays_responsive(t, q)
    check_invariants(t, q.output, name)


def hold_then_stop(t, q, name, diagnostic):
    """The offender holds what it took (its diagnostic printed, then
    "holding"): the second guest, given the console, allocates and answers;
    the offender's statistics show its frames within its budget, with
    takes refused at the limit (it was evicted within it); then the
    console stops it."""
    q.expect(diagnostic + r"(?s:.*)hostile: holding\n", timeout=120)
    second_guest_ready(q)
    q.send("\x1d2")
    second_guest_takes(q, "a")
    q.send("\x1d1")
    stats = hv_statistics(q, timeout=30)
    shadow = r"vmi-hv: shadow pages in use: (\d+) \((\d+) page directories"
    pages, pds = (int(x) for x in stats.search(shadow).groups())
    t.check(pages + pds <= BUDGET_FRAMES,
            f"{name}: its shadows hold {pages + pds} frames ({pages} pages, {pds} link frames), beyond its budget of {BUDGET_FRAMES}")
    # The budget line comes just before the shadow line.
    m = re.search(BUDGET_LINE, stats.text)
    t.check(m, f"{name}: no frame budget line in its statistics")
    used, limit, peak, refused = (int(x) for x in m.groups())
    t.check(used <= limit and peak <= limit, f"{name}: frames in use {used} (peak {peak}) beyond the budget {limit}")
    t.check(refused > 0, f"{name}: no take refused at the budget's limit: the flood never reached it")
    q.send("\x1dq")


def busy_then_stop(q, diagnostic):
    """The offender keeps at it (its diagnostic printed, then "holding"):
    the second guest, given the console, answers a key and allocates
    meanwhile; then the console stops the offender."""
    q.expect(diagnostic + r"(?s:.*)hostile: holding\n", timeout=120)
    second_guest_ready(q)
    q.send("\x1d2")
    second_guest_takes(q, "a")
    q.send("\x1d1")
    q.send("\x1dq")


def rejoined(output):
    """The output with the second guest's lines taken out, and a line of
    the offender that they cut in two joined again (a line is cut only
    where another guest's line came between its pieces)."""
    out, cut = [], False
    for line in output.split("\n"):
        if line.startswith("[guest2] "):
            cut = cut or bool(out and out[-1].startswith("[guest1] "))
            continue
        if cut and line.startswith("[guest1] "):
            out[-1] += line[len("[guest1] "):]
        else:
            out.append(line)
        cut = False
    return "\n".join(out)


def run_case(t, name, what, diagnostic, end, options="", smp=1):
    """One case under the five conditions; returns its diagnostic line."""
    q = boot_pair(t, what, options, smp)
    if end == HOLD:
        hold_then_stop(t, q, name, diagnostic)
    if end == BUSY:
        busy_then_stop(q, diagnostic)
    q.expect(r"vmi-hv: machine frames free: \d+ after guest guest1's end", timeout=300 if what.startswith(("linux:", "vmitest:")) else 60)
    if end == REBOOT:
        # With the second guest running, a reboot starts the offender
        # again (docs/HV.md, "Power-off and reboot"); it keeps the
        # console, which stops it.
        q.expect(r"vmi-hv: guest guest1 starts again from its modules \(reboot 1\)", timeout=30)
        q.send("\x1dq")
        q.expect(r"vmi-hv: guest stopped: stopped from the console \(Ctrl-\] q\)", timeout=60)
        q.expect(r"vmi-hv: machine frames free: \d+ after guest guest1's end", timeout=30)
    second_guest_ready(q)
    # On -smp 2 the offender's lines may come in pieces between the second
    # guest's: the output with its pieces joined again, and its own text
    # joined, are searched too.
    m = re.search(diagnostic, q.output) or \
        re.search(diagnostic, rejoined(q.output)) or \
        re.search(diagnostic.replace(r"\[guest1\] ", ""),
                  "\n".join(re.findall(r"^\[guest1\] ([^\n]*)", q.output, re.M)).replace("\n", "")) \
        if smp > 1 else re.search(diagnostic, q.output)
    t.check(m, f"{name}: no /{diagnostic}/ in the output")
    # Every row starts with a guest's label or the hypervisor's text, never
    # with what a guest's line left over (its colours' reset): a reader
    # that picks a guest's rows by their label sees them all.
    stray = re.search(r"^\x1b[^\n]*", q.output, re.M)
    t.check(not stray, f"{name}: a row starts with an escape sequence, not its label: {stray.group(0)!r}" if stray else "")
    t.check(re.search(END_LINE[end], q.output), f"{name}: the guest did not end {end}")
    second_guest_answers(t, q, name, statistics=True)
    cut = report_not_whole(q.output)
    t.check(not cut, f"{name}: {cut}")
    line = m.group(0).strip().splitlines()[-1] if m else "?"
    t.output = q.output
    return re.sub(r"^(\[guest1\] )", "", line)


def report_not_whole(output):
    """A hypervisor report cut by what another CPU printed, or None.  On
    -smp 2 the offender's stop report and the second guest's own lines (its
    activation report, a row of its text) are printed at the same time; the
    report goes out whole (console_enter), so a stop's reason is
    followed by its instruction or EIP, then the registers, and no
    hypervisor line begins inside another row (the counters of two guests
    mixed in one "emulated by kind:" line, as the console once printed)."""
    lines = output.replace("\r", "").split("\n")
    for i, line in enumerate(lines):
        if not line.startswith("[guest") and line.find("vmi-hv: ", 1) > 0:
            return f"a hypervisor line begins inside another row: {line!r}"
        if line.startswith("vmi-hv: guest stopped: "):
            after = lines[i + 1:i + 3]
            if len(after) < 2 or not re.match(r"vmi-hv: (instruction )?at guest eip ", after[0]) or \
                    not after[1].startswith("vmi-hv: guest registers "):
                return f"the stop report {line!r} goes on with {after!r}"
    return None


def case_options(what):
    """The hypervisor options a case needs of its own: tguest=smp with
    smp_vcpus=N is a guest of N vCPUs; the word vcpus_at_once runs them at
    once (vcpus_at_once=on, the default), and without it they run one at a
    time (vcpus_at_once=off), so that both modes meet the cases."""
    m = re.search(r"\bsmp_vcpus=(\d+)", what)
    if not m:
        return ""
    at_once = "on" if re.search(r"\bvcpus_at_once\b", what) else "off"
    return f"guest1.vcpus={m.group(1)} vcpus_at_once={at_once}"


def hostile_suite(t, smp):
    only = [n for n in os.environ.get("VMIHV_HOSTILE", "").split(",") if n]
    t.check(len(CASES) >= 40, f"{len(CASES)} cases, expected at least 40")
    names = [c[0] for c in CASES]
    t.check(len(names) == len(set(names)), "duplicate case names")
    start = time.monotonic()
    ran = 0
    for name, what, diagnostic, end in CASES:
        if only and name not in only:
            continue
        # On several CPUs every lock take and guest entry is checked too
        # (docs/ARCHITECTURE.md, "Who owns what on several CPUs").
        options = " ".join(o for o in ("locks=check" if smp > 1 else "", case_options(what)) if o)
        line = run_case(t, name, what, diagnostic, end, options=options, smp=smp)
        if name in ALARM_RATE_CASES:
            line = alarm_rate_holds(t, name, t.output)
        ran += 1
        t.note(f"{name} ({end}): {line}")
    t.note(f"{ran} cases on -smp {smp}, each beside a second guest that kept answering, "
           f"in {time.monotonic() - start:.0f} s")


@test("hv-hostile-suite")
def hv_hostile_suite(t):
    """Every case of CASES beside a second guest, under the five
    conditions in this file's docstring; each case's diagnostic is noted.
    VMIHV_HOSTILE=name,name runs only those."""
    hostile_suite(t, 1)


@test("hv-hostile-suite-smp2", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def hv_hostile_suite_smp2(t):
    """The same cases on -smp 2: the offender and the second guest on two
    CPUs at once, the hypervisor handling their exits on either."""
    hostile_suite(t, 2)


# ---- string port I/O: the VMI INS/OUTS calls (docs/VROM.md, "String port I/O")

def said(t, out, what, value):
    """The test guest's `hostile: what value` line (say()) has this value."""
    m = re.search(r"hostile: " + re.escape(what) + r" ([0-9a-f]{8})\n", out)
    t.check(m and int(m.group(1), 16) == value,
            f"'{what}': {m.group(1) if m else 'no such line'}, expected {value:08x}")


@test("hv-string-io-calls")
def hv_string_io_calls(t):
    """INS, INSB, INSW, OUTS, OUTSB, OUTSW through the ROM's slots, paging on
    (the shadows active), beside a second guest: OUTSB's string appears on
    the serial console; INSB of the CMOS index port reads back the index
    the guest wrote, of the keyboard status port 0x01 (10,000 of them:
    three batches, two restarts); INSW/INS of an absent device all ones,
    each access logged as denied; no byte beyond the count is written;
    count 0 touches nothing (not even an unmapped buffer); DF set still
    copies forward; every call returns 0."""
    run_case(t, "str-io", h("str-io"), r"hostile: survived", SHUTDOWN)
    out = re.sub(r"\[guest[12]\] ", "", t.output)
    out = out[:out.index("after guest guest1's end")]      # guest 1's lines and report
    t.check(re.search(r"^string: hello through OUTSB\r?$", out, re.M), "OUTSB's string is not on the console")
    t.check(re.search(r"^string: forward with DF set\r?$", out, re.M), "OUTSB with DF set did not copy forward")
    for what in ("OUTSB returned", "INSB port 70 x5 returned", "INSB port 64 x10000 returned",
                 "INSW port 3e8 x3 returned", "INS port 3e8 x2 returned", "OUTSW port 80 x3 returned",
                 "OUTS port 80 x3 returned", "INSB count 0 at an unmapped buffer returned",
                 "OUTSB with DF set returned"):
        said(t, out, what, 0)
    said(t, out, "INSB port 70 bytes 0-3", 0x0b0b0b0b)
    said(t, out, "INSB port 70 bytes 4-7", 0x5a5a5a0b)
    said(t, out, "INSB port 64 x10000: bytes 01", 10000)
    said(t, out, "INSB port 64 x10000: byte after", 0x5a)
    said(t, out, "INSW port 3e8 bytes 0-3", 0xffffffff)
    said(t, out, "INSW port 3e8 bytes 4-7", 0x5a5affff)
    said(t, out, "INS port 3e8 bytes 4-7", 0xffffffff)
    said(t, out, "INS port 3e8 bytes 8-11", 0x5a5a5a5a)
    denied = len(re.findall(r"guest: port in 0x3e8 \([24] bytes, returning 0xf+\) denied", out))
    t.check(denied == 5, f"{denied} denied reads of port 0x3e8 logged, expected 5 (3 INSW, 2 INS)")
    m = list(re.finditer(r"string port I/O calls \(INS/OUTS\): (\d+) elements, (\d+) batches continued", out))
    m = m[-1] if m else None
    # Two for INSB x10000 (three batches), one for each 28-byte OUTSB to
    # COM1 (a batch ends after 16 bytes to the real UART, EMUL_REP_SLOW_MAX).
    t.check(m and int(m.group(2)) == 4, f"batches continued: {m.group(0) if m else 'no line'}, expected 4")
    t.note(m.group(0) if m else "no string I/O line")


@test("hv-string-io-fault-resume")
def hv_string_io_fault_resume(t):
    """INSB of 200 bytes from 96 bytes before an absent page: the #PF is
    delivered to the guest's own handler as the CPU's rep insb would raise
    it (cr2 the absent page, a supervisor write not present, error 2), at
    the int $0x82 of the INSB slot, with the 96 done bytes in eax (the
    buffer advanced) and ecx (104 left) and edi the call; the handler maps
    the page and irets, and the call finishes: 200 bytes, not one more."""
    run_case(t, "str-pf-resume", h("str-pf-resume"), r"hostile: survived", SHUTDOWN)
    out = re.sub(r"\[guest[12]\] ", "", t.output)
    slot = slot_int("INSB")
    said(t, out, "INSB across an absent page returned", 0)
    said(t, out, "page faults", 1)
    said(t, out, "fault cr2", 0x02001000)
    said(t, out, "fault error", 2)
    said(t, out, "fault eip in the INSB slot at", slot - (0xC0000 + _vmi_calls()["INSB"] * 32))
    said(t, out, "fault eip bytes", 0x82cd)
    said(t, out, "fault eax (buffer left)", 0x02001000)
    said(t, out, "fault ecx (count left)", 104)
    said(t, out, "fault edi (call)", _vmi_calls()["INSB"])
    said(t, out, "bytes 01 in the first page", 96)
    said(t, out, "bytes 01 in the second page", 104)
    said(t, out, "byte after", 0x5a)


@test("hv-string-io-endless")
def hv_string_io_endless(t):
    """OUTSB of 2^32-1 bytes (4000 MiB of linear space all mapping one
    page) to the quiet POST port: merely slow for that guest.  While it
    runs, the second guest answers a byte typed to it, the statistics show
    the call's batches continuing, and Ctrl-] q stops it with its
    progress in its registers (eax the buffer, ecx the count left) and
    eip at the OUTSB slot's int $0x82; the five conditions hold after."""
    q = boot_pair(t, h("str-endless"))
    q.expect(r"hostile: OUTSB of 2\^32-1 bytes from 02000000", timeout=60)
    second_guest_ready(q)
    q.send("\x1d2")
    second_guest_takes(q, "y")
    q.send("\x1d1")
    batches = []
    for _ in range(2):
        m = hv_statistics(q, timeout=30).search(
            r"string port I/O calls \(INS/OUTS\): (\d+) elements, (\d+) batches continued")
        batches.append(int(m.group(2)))
        time.sleep(2)
    t.check(batches[0] > 0 and batches[1] > batches[0], f"batches continued at two looks: {batches}")
    q.send("\x1dq")
    q.expect(r"vmi-hv: guest stopped: stopped from the console \(Ctrl-\] q\)", timeout=30)
    m = q.expect(r"eax=([0-9a-f]{8}) ebx=[0-9a-f]{8} ecx=([0-9a-f]{8})", timeout=30)
    eax, ecx = int(m.group(1), 16), int(m.group(2), 16)
    m = q.expect(r"eip=([0-9a-f]{8})", timeout=30)
    eip = int(m.group(1), 16)
    done = 0xffffffff - ecx
    t.note(f"stopped after {done} bytes in {batches[-1]}+ batches: eax={eax:08x} ecx={ecx:08x} eip={eip:08x}")
    t.check(done > 0 and eax == 0x02000000 + done, f"eax {eax:08x} is not the buffer advanced by {done}")
    t.check(eip in (slot_int("OUTSB"), slot_int("OUTSB") + 2), f"eip {eip:08x}, expected the OUTSB slot's int $0x82")
    q.expect(r"vmi-hv: machine frames free: \d+ after guest guest1's end", timeout=30)
    second_guest_answers(t, q, "str-endless")


# ---- vmi_refuse=: the ROM answers calls unsupported (docs/VROM.md) ----------

REFUSED = ("GetWallclockTime", "IODelay", "GetCR2", "GetCR0")
ANSWER = r"hostile: %s eax ffffffda edx ffffffff\n"


@test("hv-vmi-refuse")
def hv_vmi_refuse(t):
    """With vmi_refuse=GetWallclockTime,IODelay,GetCR2,GetCR0 (u64, void,
    fast and u32 calls) the test guest's calls through the ROM return
    eax = -38, edx = 0xffffffff and it runs on; the hypervisor logs one
    line per call the first time; a slot the ROM has no code for
    (SetPxELong) answers the same, and is counted apart.  Without the
    option the same calls are answered.  guest1.vmi_refuse= refuses for
    guest 1 only: guest 2, the same program, gets the wall clock."""
    opt = "vmi_refuse=" + ",".join(REFUSED)
    run_case(t, "refuse", h("refuse"), ANSWER % "SetPxELong:", SHUTDOWN, opt)
    out = t.output
    t.check(re.search(r"vmi-hv: guest guest1: %s answered unsupported \(the ROM has no code for it\)" % vc("SetPxELong"),
                      out), "SetPxELong's answer was not logged")
    t.check(re.search(r"VMI calls with no code answered unsupported: 1\n", out), "SetPxELong's answer was not counted")
    for name in REFUSED:
        t.check(re.search(r"VMI ROM: call %d \(%s\) refused in this guest's copy" % (_vmi_calls()[name], name), out),
                f"no load-time line for {name}")
        lines = re.findall(r"vmi-hv: guest guest1: %s answered unsupported \(vmi_refuse=\)" % vc(name), out)
        t.check(len(lines) == 1, f"{name}: {len(lines)} 'answered unsupported' lines, expected 1")
    for what in ("GetWallclockTime:", "GetWallclockTime again:", "IODelay:", "GetCR2:", "GetCR0:"):
        t.check(re.search(ANSWER % re.escape(what), out), f"{what} did not return -38/0xffffffff")
    t.check("hostile: still running; now SetPxELong" in out, "the guest did not run on after the refused calls")
    m = re.findall(r"VMI calls answered unsupported \(vmi_refuse=\): (\d+)", out)
    t.check("5" in m, f"answered-unsupported counts {m}, expected 5 for guest 1")
    # Without the option: answered.
    run_case(t, "refuse-off", h("refuse"), ANSWER % "SetPxELong:", SHUTDOWN)
    out = t.output
    t.check(not re.search(r"guest guest1: VMI call \d+ \(\w+\) answered unsupported \(vmi_refuse=\)", out),
            "a call answered unsupported (vmi_refuse=) without the option")
    t.check(re.search(r"hostile: GetWallclockTime: eax [0-9a-f]{8} edx (?!ffffffff)[0-9a-f]{8}\n", out),
            "GetWallclockTime without the option did not answer the time")
    t.check(re.search(r"hostile: IODelay: eax 00001234 edx 00005678\n", out), "IODelay without the option")
    t.check(re.search(r"hostile: GetCR0: eax 000000[0-9a-f]{2} edx 00005678\n", out), "GetCR0 without the option")
    # Per guest: both guests run the same program, guest 1 refuses.
    q = t.qemu("-m", "128", "-kernel", paths.HV_ELF, "-append", "guest1.vmi_refuse=GetWallclockTime",
               "-initrd", tguest_modules(t, h("refuse"), h("refuse")), fatal=HV_BROKEN)
    # Both run to their end (the last one's ends the run).
    q.expect(r"vmi-hv: stopped \(exit code \d+\): guest powered off", timeout=60)
    ends_cleanly(t, q, "both guests powered off", timeout=30)
    t.check(re.search(r"\[guest1\] hostile: GetWallclockTime: eax ffffffda edx ffffffff", q.output),
            "guest 1 was not refused GetWallclockTime")
    t.check(re.search(r"\[guest2\] hostile: GetWallclockTime: eax [0-9a-f]{8} edx (?!ffffffff)[0-9a-f]{8}", q.output),
            "guest 2 was refused GetWallclockTime too")
    t.check(re.search(r"\[guest1\] hostile: IODelay: eax 00001234", q.output), "guest 1: IODelay refused too")
    check_invariants(t, q.output, "per-guest refusal")


@test("hv-vmi-refuse-bad-option")
def hv_vmi_refuse_bad_option(t):
    """Bad vmi_refuse= values stop the hypervisor at boot with one
    `vmi-hv: error:` line naming the option and the word, exit status 5."""
    refuse = tguest_modules(t, h("refuse"))
    bad = [
        ("vmi_refuse=GetWallclockTime,Frobnicate",
         r"option 'vmi_refuse=GetWallclockTime,Frobnicate': 'Frobnicate' is not a VMI call"),
        ("vmi_refuse=IRET", r"option 'vmi_refuse=IRET': %s cannot be refused: it is entered with jmp" % vc("IRET")),
        ("vmi_refuse=Init", r"option 'vmi_refuse=Init': %s cannot be refused" % vc("Init")),
        ("guest1.vmi_refuse=SetPxELong", r"option 'guest1.vmi_refuse=SetPxELong': %s cannot be refused: its slot already answers unsupported" % vc("SetPxELong")),
        ("vmi_refuse=", r"malformed option 'vmi_refuse=': vmi_refuse takes VMI call names"),
        ("guest2.vmi_refuse=IODelay", r"options for guest 2 given, but the modules make 1 guest"),
    ]
    for opt, want in bad:
        q = t.qemu("-m", "128", "-kernel", paths.HV_ELF, "-append", opt, "-initrd", refuse)
        m = expect_bad_input(t, q, want + r"[^\n]*", opt)
        t.note(m.group(0).strip())


# ---- the work of one exit (docs/TIME.md, "Rates a guest controls") -----------

def init_again(t, smp):
    """tguest=h:vmi-init-again beside the second guest on -smp smp: its
    five Inits after the activation each answer VMI_ERROR_INVALID; no
    second activation report is printed (one per guest: the offender's
    and the second guest's), one refusal is logged (once per guest) and
    all five are counted in the offender's end report."""
    options = "locks=check" if smp > 1 else ""
    run_case(t, f"vmi-init-again-smp{smp}", h("vmi-init-again"), r"hostile: survived", SHUTDOWN, options, smp)
    out = re.sub(r"\[guest[12]\] ", "", t.output)
    answers = re.findall(r"hostile: Init again returned ([0-9a-f]{8})\n", out)
    t.check(answers == ["ffffffea"] * 5, f"-smp {smp}: the Inits after the first answered {answers}, expected ffffffea x5")
    reports = len(re.findall(r"vmi-hv: guest activated VMI after ", out))
    t.check(reports == 2, f"-smp {smp}: {reports} activation reports, expected 2 (one per guest)")
    logged = len(re.findall(r"guest guest1: vCPU 0: VMI Init refused: VMI is active already", out))
    t.check(logged == 1, f"-smp {smp}: {logged} refusals logged, expected 1 (the rest counted)")
    end = out.find("after guest guest1's end")
    counted = re.findall(r"VMI Init calls refused \(VMI active already\): (\d+)\n", out[:end])
    t.check(counted and counted[-1] == "5", f"-smp {smp}: refusals counted in guest 1's end report: "
            f"{counted[-1] if counted else 'no line'}, expected 5")
    t.note(f"-smp {smp}: Inits after the first answered {answers}; {reports} activation reports")


@test("hv-vmi-init-again", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def hv_vmi_init_again(t):
    """VMI Init made again after the activation is refused (eax =
    VMI_ERROR_INVALID, -22): it used to print the whole activation report
    again, with a full shadow audit, inside console_lock, as often as the
    guest liked.  On -smp 1 and -smp 2, beside the second guest."""
    init_again(t, 1)
    init_again(t, 2)


@test("hv-cr3-unshadowed-bounded")
def hv_cr3_unshadowed_bounded(t):
    """tguest=h:cr3-unshadowed: a CR3 load of a directory never announced
    whose PDEs name 1004 tables.  Building its whole shadow at the load
    took one exit about a million entries of work under the guest's lock;
    the build stops at the exit's limit (EXIT_WORK) and the PDEs left
    empty are filled at the faults through them: no exit of the guest does
    more than twice the limit, and it reads on through the directory."""
    run_case(t, "cr3-unshadowed", h("cr3-unshadowed"),
             r"hostile: unshadowed directory of 1008 tables loaded; h_page reads 00000055\n", SHUTDOWN)
    out = t.output
    work = re.findall(WORK, out[:out.find("after guest guest1's end")])
    most, limit = (int(x) for x in work[-1]) if work else (-1, 0)
    t.note(f"the most work one exit did: {most} entries (the limit {limit})")
    t.check(0 <= most <= 2 * limit, f"one exit did {most} entries of work, more than twice the limit {limit}")


def _guest_log_limit():
    """GUEST_LOG_LIMIT, from its one definition."""
    with open(os.path.join(paths.ROOT, "hv", "vcpu", "exit", "vcpu_io.h")) as f:
        return int(re.search(r"#define GUEST_LOG_LIMIT\s+(\d+)", f.read()).group(1))


@test("hv-guest-log-limits")
def hv_guest_log_limits(t):
    """A guest that makes one log line of the hypervisor's again and again
    (idt-not-present-loop: 200 failed deliveries of #UD, each raising #NP,
    which the guest handles and returns from) gets GUEST_LOG_LIMIT of them
    in a 10 s window, the last one saying more are only counted: a guest
    cannot flood the console, which every CPU's output waits for."""
    limit = _guest_log_limit()
    q = boot_pair(t, h("idt-not-present-loop"))
    q.expect(r"hostile: #NP taken for the ud2s 000000c8\n", timeout=120)
    q.expect(r"vmi-hv: machine frames free: \d+ after guest guest1's end", timeout=60)
    lines = re.findall(r"guest: delivering vector 6 failed \([^\n]*", q.output)
    t.note(f"{len(lines)} lines for 200 failed deliveries (limit {limit})")
    t.check(len(lines) == limit, f"{len(lines)} lines for 200 failed deliveries, expected {limit}")
    t.check(lines and lines[-1].endswith("raising 11; more in the next 10 s are only counted"),
            f"the last line does not say more are only counted: {lines[-1:]}")


# The victim's windows (tguest=ticker) on the attacker's TSC grid
# (tguest_hostile.c, c_drain_flood): before "attacking from window K" the
# attacker spins (the baseline, the victim's first three windows left
# out: QEMU translates its code then), from window K + 1 on it attacks.
TICKER = r"ticker: window ([0-9a-f]{8}) loops ([0-9a-f]{8})"
LONGEST = r"vmi-hv: the longest exit: (\d+) us from the exit to the next entry"
# The longest exit a guest may cause or suffer, in the host's time (QEMU's
# TSC follows it): an exit's work is bounded (EXIT_WORK in vcpu_mmu.c,
# some 5 ms under a loaded TCG) and no CPU waits for another guest's
# exit under sched_lock; but a loaded host preempts QEMU's threads (exits
# with no work at all were seen to last 150 ms), so the bound is loose.
# The unbounded drain took 7.5-12 s per exit here.
LONGEST_BOUND_US = 1000000
# The most work one exit did on the shadows (entries derived, zeroed or
# cleared), which the host's load does not change: EXIT_WORK, plus what
# the last step before the check may add (a table, an eviction's least).
WORK = r"vmi-hv: the most work one exit did on the shadows: (\d+) entries \(the limit (\d+)\)"


def ticker_windows(output):
    """{"busy": [loops], "attack": [loops]} from the victim's windows."""
    attacker = "".join(re.findall(r"^\[guest1\] ([^\n]*)", output, re.M))
    m = re.search(r"drain: attacking from window ([0-9a-f]{8})", attacker)
    start = int(m.group(1), 16) if m else 0
    joined = "".join(re.findall(r"^\[guest2\] ([^\n]*)", output, re.M))
    windows = [(int(a, 16), int(b, 16)) for a, b in re.findall(TICKER, joined)]
    loops = {"busy": [n for k, n in windows[3:] if k < start],
             "attack": [n for k, n in windows if k > start]}
    return loops


def end_report_figure(t, output, n, pattern):
    """A figure of guest n's end report (between the line that says guest n
    ended and its machine-frames line)."""
    m = re.search(rf"guest {n} \(guest{n}\) has ended(?s:.*?)after guest guest{n}'s end", output)
    found = re.findall(pattern, m.group(0)) if m else []
    t.check(found, f"no /{pattern}/ in guest {n}'s end report")
    return int(found[-1]) if found else -1


def idle_neighbour_loops(t):
    """The ticker's median loops per window beside an idle guest, each on a
    CPU of its own (-smp 2): the baseline the victim keeps 80% of."""
    q = t.qemu("-smp", "2", "-append", "guest1.cpus=0 guest2.cpus=1", "-m", "128", "-kernel", paths.HV_ELF,
               "-initrd", tguest_modules(t, "tguest=idle", "tguest=ticker ticker_windows=20"),
               fatal=HV_BROKEN, accel=accel_for(2))
    q.expect(r"\[guest2\] floods: ticker: done", timeout=300)
    stop_console_guest_and_quit(q, timeout=120)
    joined = "".join(re.findall(r"^\[guest2\] ([^\n]*)", q.output, re.M))
    loops = [int(b, 16) for _, b in re.findall(TICKER, joined)][3:]
    t.check(len(loops) >= 4, f"beside the idle guest: too few ticker windows {loops}")
    return statistics.median(loops) if loops else 0


def drain_victim(t, smp):
    """hv-drain-flood-victim on -smp smp (2: each guest pinned to a CPU of
    its own; 1: they share it, the scheduler's slices between them)."""
    idle = idle_neighbour_loops(t) if smp > 1 else 0
    machine = ("-smp", "2", "-append", "guest1.cpus=0 guest2.cpus=1") if smp > 1 else ()
    q = t.qemu(*machine, "-m", "128", "-kernel", paths.HV_ELF,
               "-initrd", tguest_modules(t, h("drain-flood"), "tguest=ticker ticker_windows=60"),
               fatal=HV_BROKEN, accel=accel_for(smp))
    q.expect(r"hostile: drain: attacking from window", timeout=120)
    # The longest exits from now on (Ctrl-] r, each guest), not the
    # activation's, whose report is console output.
    for key in ("\x1dr", "\x1d2", "\x1dr", "\x1d1"):
        q.send(key)
        if key == "\x1dr":
            q.expect(r"vmi-hv: peaks reset: ", timeout=120)
    q.expect(r"\[guest2\] floods: ticker: done", timeout=600)
    stop_console_guest_and_quit(q, timeout=300)
    check_invariants(t, q.output, "drain-flood")
    loops = ticker_windows(q.output)
    rounds = re.findall(r"hostile: drain: rounds ([0-9a-f]{8})", "".join(re.findall(r"^\[guest1\] ([^\n]*)", q.output, re.M)))
    attacker = end_report_figure(t, q.output, 1, LONGEST)
    work = re.findall(WORK, q.output[:q.output.find("after guest guest1's end")])
    most, limit = (int(x) for x in work[-1]) if work else (-1, 0)
    victim = end_report_figure(t, q.output, 2, LONGEST)
    med = {p: statistics.median(v) if v else 0 for p, v in loops.items()}
    ratio = med["attack"] / max(med["busy"], 1)
    t.note(f"-smp {smp}: victim loops per 100 ms (median): busy {med['busy']:.0f} ({len(loops['busy'])} windows), "
           f"attack {med['attack']:.0f} ({len(loops['attack'])} windows), ratio {ratio:.3f}{' (required >= 0.8)' if smp > 1 else ''}; "
           f"attacker rounds: {int(rounds[-1], 16) if rounds else '<4'}")
    if smp > 1:
        vs_idle = med["attack"] / max(idle, 1)
        t.note(f"-smp {smp}: beside an idle guest (its own boot) the victim made {idle:.0f} loops per window: "
               f"attack / idle = {vs_idle:.3f} (required >= 0.8)")
        t.check(vs_idle >= 0.8, f"-smp {smp}: the victim kept {vs_idle:.3f} of its throughput beside an idle guest "
                f"while the drain flood ran, required >= 0.8")
    t.note(f"-smp {smp}: longest exit: attacker {attacker} us, victim {victim} us (bound {LONGEST_BOUND_US} us)")
    t.check(len(loops["busy"]) >= 4 and len(loops["attack"]) >= 4,
            f"-smp {smp}: too few windows: busy {loops['busy']}, attack {loops['attack']}")
    # On one CPU the two share it by the scheduler's slices, and the
    # victim's windows beside the busy attacker were seen at twice those
    # beside the attack (0.50; not explained yet): only the exits' bounds
    # are asserted there.
    t.check(smp == 1 or ratio >= 0.8, f"-smp {smp}: the victim kept {ratio:.3f} of its throughput beside the drain flood, required >= 0.8 "
            f"(busy {loops['busy']}, attack {loops['attack']})")
    t.note(f"-smp {smp}: the most work one exit of the attacker did: {most} entries (the limit {limit})")
    t.check(0 <= most <= 2 * limit, f"-smp {smp}: one exit of the attacker did {most} entries of work, more than twice the limit {limit}")
    t.check(0 <= attacker < LONGEST_BOUND_US, f"-smp {smp}: the attacker's longest exit took {attacker} us, bound {LONGEST_BOUND_US} us")
    t.check(0 <= victim < LONGEST_BOUND_US, f"-smp {smp}: the victim's longest exit took {victim} us, bound {LONGEST_BOUND_US} us")


@test("hv-drain-flood-victim", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def hv_drain_flood_victim(t):
    """A guest floods its shared page's queue with AllocatePages of two big
    directories in turn (each build evicts the other's 1004 tables and
    derives them again) beside a victim with a 1 ms tick.  On -smp 2, each
    guest pinned to a CPU of its own, the victim keeps >= 80% of its median
    loops per 100 ms window while attacked against its windows beside the
    attacker spinning busy before (same run): its tick does not wait for
    the attacker's exit.  On -smp 2 and -smp 1, the attacker's exits do
    at most twice EXIT_WORK each, and neither guest's longest exit reaches
    LONGEST_BOUND_US."""
    drain_victim(t, 2)
    drain_victim(t, 1)
