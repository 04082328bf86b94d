"""gdb helpers for vmi-hv: the hypervisor and its guest in one QEMU.

Loaded by scripts/gdb/vmi-hv.gdb.  Two address spaces share the CPU: the
hypervisor's own (its page directory hv_page_dir; linear == machine physical
below 3 GiB) and the guest's shadow.  QEMU's breakpoints match the linear
program counter in whichever is live, and the hypervisor's image (1 MiB up)
and the guest kernel (0xC0000000 up) do not overlap, so a breakpoint on either
side's symbol stops on that side.  Reading the hypervisor's variables while
the guest's address space is live would read guest memory instead, so every
helper reads hypervisor state through machine physical memory (QEMU's
"monitor xp"), which works in both.

Commands:
    vmihv-where               which address space is live
    vmihv-break-call NAME     break in the hypervisor on VMI call NAME (Init, SetCR3, ...)
    vmihv-break-stop          break where the hypervisor stops a guest
    vmihv-break-guest WHERE   break in the guest kernel (a vmlinux symbol or *ADDR)
    vmihv-regs                the current vCPU's guest registers and control registers
    vmihv-stats               the current vCPU's VMI calls by name, exits, counters
    vmihv-walk ADDR           walk a guest linear address through the guest's
                              page tables and through the shadow the CPU uses
"""

import os
import re
import struct

import gdb

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ABI_HEADER = os.path.join(TOP, "build", "include", "vmi_abi.h")
PAGE = 4096


def vmi_calls():
    """VMI call numbers by name, from the generated ABI header (the one
    definition: vrom/abi/vmi-13.0.def)."""
    calls = {}
    with open(ABI_HEADER) as f:
        for name, num in re.findall(r"#define VMI_CALL_(\w+)\s+(\d+)\s", f.read()):
            calls[name] = int(num)
    return calls


def phys_read(addr, length):
    """Machine physical memory, whichever address space is live."""
    words = (length + 3) // 4
    out = gdb.execute(f"monitor xp /{words}wx {addr:#x}", to_string=True)
    vals = []
    for line in out.splitlines():      # "ADDR: 0x........ 0x........"
        if ":" in line:
            vals += re.findall(r"0x([0-9a-fA-F]+)", line.split(":", 1)[1])
    data = b"".join(struct.pack("<I", int(v, 16)) for v in vals)
    if len(data) < length:
        raise gdb.GdbError(f"cannot read machine memory at {addr:#x}: {out.strip()[:200]}")
    return data[:length]


def phys_u32(addr):
    return struct.unpack("<I", phys_read(addr, 4))[0]


def hv_symbol(name):
    sym = gdb.lookup_global_symbol(name) or gdb.lookup_static_symbol(name)
    if sym is None:
        raise gdb.GdbError(f"no hypervisor symbol {name} (is build/hv/vmi-hv.elf loaded?)")
    return sym


class HvObject:
    """A hypervisor variable, or a part of one, read through machine memory
    (hypervisor linear == machine physical) only when its value is asked
    for: obj["stats"]["exits"].value() reads 8 bytes, not the whole vCPU."""

    def __init__(self, lazy):
        self.lazy = lazy                 # a gdb.Value never fetched: we use its address

    def __getitem__(self, key):
        return HvObject(self.lazy[key])

    def value(self):
        t = self.lazy.type
        return gdb.Value(phys_read(int(self.lazy.address), t.sizeof), t)

    def __int__(self):
        return int(self.value())


def hv_object(name):
    return HvObject(hv_symbol(name).value())


def hv_pointee(ptr, type_name):
    """What a hypervisor pointer points at, read lazily like hv_object."""
    addr = int(ptr)
    if not addr:
        raise gdb.GdbError(f"no {type_name} yet (null pointer)")
    return HvObject(gdb.parse_and_eval(f"*({type_name} *){addr:#x}"))


def current_vcpu():
    """The vCPU physical CPU 0 runs or last ran: pcpus[0].current.  The
    per-CPU array is hypervisor memory (linear == machine), not mapped in
    a guest's view of the switcher, so it is read through machine memory
    like the vCPU itself, whichever address space is live."""
    return hv_pointee(hv_object("pcpus")[0]["current"].value(), "struct vcpu")


def vcpu_guest(v):
    return hv_pointee(v["guest"].value(), "struct guest")


def live_space():
    cr3 = int(gdb.parse_and_eval("$cr3")) & ~0xfff
    hv = int(hv_object("hv_page_dir"))  # a pointer; linear == machine
    return ("hypervisor", cr3) if cr3 == hv else ("guest", cr3)


class Where(gdb.Command):
    """Which address space is live: the hypervisor's or a guest's shadow."""

    def __init__(self):
        super().__init__("vmihv-where", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        space, cr3 = live_space()
        pc = int(gdb.parse_and_eval("$pc"))
        cpl = int(gdb.parse_and_eval("$cs")) & 3
        print(f"{space} address space (cr3 {cr3:#010x}), pc {pc:#010x}, CPL {cpl}")


class BreakCall(gdb.Command):
    """vmihv-break-call NAME: stop in the hypervisor when the guest makes VMI call NAME."""

    def __init__(self):
        super().__init__("vmihv-break-call", gdb.COMMAND_BREAKPOINTS)

    def invoke(self, arg, from_tty):
        calls = vmi_calls()
        name = arg.strip()
        if name not in calls:
            raise gdb.GdbError(f"no VMI call {name!r}; calls: {' '.join(sorted(calls))}")
        gdb.execute(f"break vcpu_hypercall if v->frame->edi == {calls[name]}")
        print(f"vmi-hv: breakpoint on VMI call {name} (number {calls[name]}) in vcpu_hypercall")


class BreakStop(gdb.Command):
    """vmihv-break-stop: stop where the hypervisor stops a guest (vcpu_stop*)."""

    def __init__(self):
        super().__init__("vmihv-break-stop", gdb.COMMAND_BREAKPOINTS)

    def invoke(self, arg, from_tty):
        gdb.execute("break vcpu_stop")
        gdb.execute("break vcpu_stop_insn")


class BreakGuest(gdb.Command):
    """vmihv-break-guest SYMBOL|*ADDR: stop in the guest kernel (vmlinux symbols).

    Guest kernel addresses are 0xC0000000 and up, where the hypervisor maps
    nothing of its own, so the breakpoint can only hit in the guest."""

    def __init__(self):
        super().__init__("vmihv-break-guest", gdb.COMMAND_BREAKPOINTS)

    def invoke(self, arg, from_tty):
        where = arg.strip()
        if not where:
            raise gdb.GdbError("usage: vmihv-break-guest SYMBOL|*ADDR")
        if where.startswith("*"):
            addr = int(gdb.parse_and_eval(where[1:]))
        else:
            sym = gdb.lookup_global_symbol(where) or gdb.lookup_static_symbol(where)
            if sym is None:
                try:
                    addr = int(gdb.parse_and_eval(f"&{where}"))
                except gdb.error:
                    raise gdb.GdbError(f"no guest symbol {where} (is build/guest/vmlinux loaded?)")
            else:
                addr = int(sym.value().address)
        if addr < 0xC0000000:
            raise gdb.GdbError(f"{where} is at {addr:#x}, not a guest kernel address")
        gdb.execute(f"break *{addr:#x}")


class Regs(gdb.Command):
    """vmihv-regs: the current vCPU's guest registers (its trap frame in the
    switcher) and its virtual control registers."""

    def __init__(self):
        super().__init__("vmihv-regs", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        v = current_vcpu()
        frame_addr = int(v["frame"])
        ftype = gdb.lookup_type("struct trap_frame")
        # The frame is at the top of the vCPU's own stack page: hypervisor
        # memory (linear == machine), mapped in the switcher only while the
        # vCPU runs; read it through machine memory.
        f = gdb.Value(phys_read(frame_addr, ftype.sizeof), ftype)
        names = [fld.name for fld in ftype.fields()]
        line = []
        for n in names:
            line.append(f"{n}={int(f[n]) & 0xffffffff:08x}")
        for i in range(0, len(line), 6):
            print("  " + " ".join(line[i:i + 6]))
        print(f"  cr0={int(v['cr0']):08x} cr2={int(v['cr2']):08x} cr3={int(v['cr3']):08x} "
              f"cr4={int(v['cr4']):08x} vif={int(v['vif'])} paravirtual={int(v['paravirtual'])} "
              f"halted={int(v['halted'])}")


class Stats(gdb.Command):
    """vmihv-stats: the current vCPU's VMI calls by name and exit counters."""

    def __init__(self):
        super().__init__("vmihv-stats", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        st = current_vcpu()["stats"]
        print(f"  exits {int(st['exits'])}, hypercalls {int(st['hypercalls'])}, "
              f"emulated {int(st['emulated'])} ({int(st['emulated_after_activation'])} after "
              f"activation), guest page faults {int(st['guest_page_faults'])}, "
              f"injected {int(st['injected'])}")
        by = st["hypercalls_by_call"].value()
        names = {n: k for k, n in vmi_calls().items()}
        made = [f"{names.get(i, i)}={int(by[i])}" for i in range(by.type.range()[1] + 1)
                if int(by[i])]
        print("  VMI calls: " + (", ".join(made) if made else "none yet"))


class Walk(gdb.Command):
    """vmihv-walk ADDR: a guest linear address through the guest's page
    tables (guest-physical, via the p2m) and through the shadow the CPU uses."""

    def __init__(self):
        super().__init__("vmihv-walk", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        lin = int(gdb.parse_and_eval(arg)) & 0xffffffff
        v = current_vcpu()
        g = vcpu_guest(v)
        mem = g["mem"]
        p2m, npages = int(mem["p2m"]), int(mem["npages"])
        pdi, pti = lin >> 22, (lin >> 12) & 0x3ff

        def machine(gpa):
            gfn = gpa >> 12
            if gfn >= npages:
                raise gdb.GdbError(f"guest-physical {gpa:#x} is outside guest memory")
            return (phys_u32(p2m + 4 * gfn) << 12) | (gpa & 0xfff)

        gcr3 = int(v["cr3"]) & ~0xfff
        print(f"  {lin:#010x}: PDE index {pdi}, PTE index {pti}")
        self.walk(lin, "guest: ", gcr3, "gpa", lambda a: phys_u32(machine(a)), "  (not present)")
        scr3 = self.shadow_cr3(v, g)
        if not scr3:
            print("  shadow: none loaded yet")
            return
        self.walk(lin, "shadow:", scr3, "machine", phys_u32, "  (not present: filled on the first access)")

    @staticmethod
    def walk(lin, label, cr3, space, read, absent_pde):
        """One two-level non-PAE walk of lin from the directory at cr3, whose
        addresses are in `space` and whose entries read(address) returns."""
        pde = read(cr3 + 4 * (lin >> 22))
        print(f"  {label} cr3 {cr3:#010x} ({space})  PDE {pde:08x}", end="")
        if not pde & 1:
            print(absent_pde)
        elif pde & 0x80:
            print(f"  4 MiB page -> {space} {(pde & 0xffc00000) | (lin & 0x3fffff):#010x}")
        else:
            pte = read((pde & ~0xfff) + 4 * ((lin >> 12) & 0x3ff))
            print(f"  PTE {pte:08x}" + (f" -> {space} {(pte & ~0xfff) | (lin & 0xfff):#010x}"
                                         if pte & 1 else "  (not present)"))

    @staticmethod
    def shadow_cr3(v, g):
        if int(v["shadows_active"]):
            # The vCPU's slot (shadow_cr3 in hv/mm/shadow_notify.c): its own
            # top-level page if it has one, else its loaded directory's.
            s, k = g["shadow"], int(v["index"])
            if k >= int(s["nr_vcpus"]) or not int(s["loaded"][k]):
                return 0
            if int(s["top_mfn"][k]):
                return int(s["top_mfn"][k]) << 12
            return int(s["pages"][int(s["loaded"][k]) - 1]["mfn"]) << 12
        space, cr3 = live_space()
        return cr3 if space == "guest" else 0


for cmd in (Where, BreakCall, BreakStop, BreakGuest, Regs, Stats, Walk):
    cmd()
