"""The guest's LDT (docs/HV.md, "Descriptor tables"): converted like its GDT, never read by the CPU.

`hv-tguest-ldt`: the tiny test guest loads an LDT (lldt, emulated before
VMI activation) holding a DPL 3 call gate into its ring-0 code and a DPL 0
data segment.  The data segment loads; the far call through the gate is
#GP(0x4) to the guest's own handler, since gates are never copied for the
CPU (on hardware it would have reached ring 0); then, after VMI Init,
WriteLDTEntry of another gate into the loaded LDT stops the guest with
its diagnostic, and the hypervisor answers.  The LDT of a real program
(modify_ldt, code and data through LDT selectors) is ring3cmp's, in
test_hv_ring3.py.
"""


from vmitest import paths, test
from testguest import tguest_modules
from hvguest import REGS, stays_responsive



@test("hv-tguest-ldt")
def tguest_ldt(t):
    q = t.qemu("-m", "128", "-kernel", paths.HV_ELF, "-initrd", tguest_modules(t, "tguest=ldt"))
    q.expect(r"tguest: hello from the test guest, command line: tguest=ldt", timeout=60)
    q.expect(r"tguest: LDT data segment 000c loaded\n", timeout=30)
    m = q.expect(r"tguest: lcall through the LDT call gate: #GP count (\w+) error (\w+) eax (\w+)\n", timeout=30)
    t.check(int(m.group(1), 16) == 1, f"#GP count {m.group(1)}, expected 1")
    t.check(int(m.group(2), 16) == 4, f"#GP error {m.group(2)}, expected 4 (LDT entry 0)")
    t.check(int(m.group(3), 16) == 0, f"eax {m.group(3)}: the gate's ring-0 code ran")
    q.expect(r"vmi-hv: guest stopped: WriteLDTEntry 1 \(selector 0xc\): system descriptor type 0xc "
             r"\(a gate\) in the loaded LDT", timeout=30)
    q.expect(REGS)
    stays_responsive(t, q)
