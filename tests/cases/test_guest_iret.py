"""A faulting IRET is the guest's, as on hardware (docs/VROM.md, "A faulting IRET").

`guest-iret-fault-vs-native` boots the same bzImage and initrd natively,
under vmi-hv (the ROM's real iret at ring 1, F_IRET) and under vmi-hv with
`fastpaths=off` (the IRET hypercall), runs /tests/sigretcmp
(guest/programs/sigretcmp.c: sigreturn with a bad CS or SS of every kind,
the hypervisor's own selectors in every segment register, and a
misaligned movaps, each in its own child) and compares the outputs
line by line: every case must get the signal and si_code it gets natively,
and the guest must answer a command afterwards.  Under vmi-hv the
hypervisor's statistics must show the faults reported to the guest by the
path that boot used (docs/VROM.md, "A faulting IRET").
"""


import re

from vmitest import test
from hvguest import GUEST_BROKEN as FATAL, boot_hv, boot_native, program_lines, quiet_console
from hvstats import hv_statistics

IRET_FAULTS = r"vmi-hv: faulting IRETs reported to the guest: (\d+) from the ROM's iret, (\d+) from the IRET hypercall\n"


def sigret_lines(t, q, label):
    return program_lines(t, q, label, "/tests/sigretcmp", "SIGRETCMP\n")


def under_hv(t, hv_cmd):
    q = boot_hv(t, hv_cmd, fatal=FATAL)
    quiet_console(q)
    label = f"vmi-hv {hv_cmd}".strip()
    lines = sigret_lines(t, q, label)
    m = hv_statistics(q).search(IRET_FAULTS)
    q.kill()
    return lines, int(m.group(1)), int(m.group(2))


def compare(t, native, other, label):
    differ = [f"line {i + 1}: native '{a}', {label} '{b}'"
              for i, (a, b) in enumerate(zip(native, other)) if a != b]
    t.check(len(native) == len(other), f"native printed {len(native)} lines, {label} {len(other)}")
    t.check(not differ, f"{label}: {len(differ)} lines differ:\n  " + "\n  ".join(differ))


@test("guest-iret-fault-vs-native")
def iret_fault_vs_native(t):
    native = boot_native(t, fatal=FATAL)
    native_lines = sigret_lines(t, native, "native")
    native.kill()
    # The hypervisor's own slots in a data register (ds-hv-*, ...): the
    # kernel's fix-up nulls it and the child may go on; in CS or SS they
    # reach the iret-error path like any bad selector.
    classic = [ln for ln in native_lines[1:-1] if not re.match(r"(ds|es|fs|gs)-hv-", ln)]
    faults = [ln for ln in classic if not ln.endswith(": ok")]
    # Natively every bad CS or SS reaches the iret-error path: not one
    # case may pass, or the program no longer tests what it says.
    t.check(len(faults) == len(classic) - 2,
            f"natively only {len(faults)} of {len(classic) - 2} bad cases faulted: {native_lines}")
    t.note("natively: " + "; ".join(native_lines[1:-1]))

    rom_lines, rom_rom, rom_hc = under_hv(t, "")
    compare(t, native_lines, rom_lines, "vmi-hv")
    t.check(rom_rom > 0, "vmi-hv: no faulting IRET reported from the ROM's iret")
    hc_lines, hc_rom, hc_hc = under_hv(t, "fastpaths=off")
    compare(t, native_lines, hc_lines, "vmi-hv fastpaths=off")
    t.check(hc_hc > 0 and hc_rom == 0,
            f"vmi-hv fastpaths=off: {hc_hc} faulting IRET hypercalls, {hc_rom} ROM irets reported")
    t.note(f"{len(native_lines) - 2} cases identical natively and under vmi-hv (both paths); "
           f"faults reported: ROM iret {rom_rom} (+{rom_hc} hypercall), hypercall {hc_hc}")
