"""make debug and the gdb script (README.md, "Debugging with gdb"): gdb in batch mode attaches to
the QEMU that `make debug` starts, with the command `make debug` prints,
stops in the hypervisor on the guest's VMI Init call and in the guest after
activation, with symbolic backtraces on both sides."""

import os
import re
import shlex
import socket
import subprocess
import time

from vmitest import paths, start_make, stop_group, test
from verdicts import HV_FRAME, hv_part_of_gdb

VMLINUX = os.path.join(paths.BUILD, "guest", "vmlinux")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pattern, log_path, proc, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log_path, errors="replace") as f:
            m = re.search(pattern, f.read())
        if m:
            return m
        if proc.poll() is not None:
            return None
        time.sleep(0.3)
    return None


def gdb_on_make_target(t, target, commands):
    """`make TARGET` with a free GDB_PORT, then the gdb command it prints,
    in batch mode, running `commands`; returns gdb's output (also logged).
    QEMU and make are killed afterwards whatever happened."""
    port = free_port()
    log = t.log_path[:-4] + ".make.log"
    with open(log, "w") as out:
        make = start_make([target, f"GDB_PORT={port}"], out)
    try:
        m = wait_for(r"\n\s+(gdb -x \S+ -ex 'target remote :%d')\n" % port, log, make, 300)
        t.check(m, f"make {target} printed no gdb command to attach with (see "
                   f"{os.path.relpath(log, paths.ROOT)})")
        attach = shlex.split(m.group(1))
        cmd = attach[:1] + ["-nx", "-batch"] + attach[1:]
        for line in commands:
            cmd += ["-ex", line]
        gdb = subprocess.run(cmd, cwd=paths.ROOT, capture_output=True, text=True, timeout=150)
        out = gdb.stdout + gdb.stderr
        with open(t.log_path, "a") as f:
            f.write("# " + " ".join(shlex.quote(c) for c in cmd) + "\n" + out)
        return out
    finally:
        stop_group(make)


@test("debug-gdb-hypervisor-and-guest", alone="runs make debug in the checkout")
def debug_gdb_hypervisor_and_guest(t):
    t.require(paths.ISO, paths.HV_ELF, VMLINUX)
    out = gdb_on_make_target(t, "debug", [
        "vmihv-break-call Init", "continue",
        "vmihv-where", "bt", "vmihv-stats",
        "delete",
        "vmihv-break-guest rest_init", "continue",
        "vmihv-where", "bt", "vmihv-regs", "vmihv-stats",
        "vmihv-walk (unsigned)&init_task",
        "kill",
    ])
    first, _, _ = out.partition("Breakpoint 2")
    second = out[out.find("Breakpoint 2"):] if "Breakpoint 2" in out else ""
    # In the hypervisor, on Init: its own address space and symbols.
    t.check(re.search(r"Breakpoint 1, vcpu_hypercall \(v=0x[0-9a-f]+[^)]*\) at \S*hv/vcpu/exit/hypercall\.c:\d+", out),
            f"no stop in vcpu_hypercall on Init: {out[-600:]}")
    t.check(re.search(r"hypervisor address space \(cr3 0x[0-9a-f]+\), pc 0x[0-9a-f]+, CPL 0", out),
            "vmihv-where did not say the hypervisor's space is live at the Init stop")
    # Frame 1 and on of the backtrace gdb printed at the Init stop, in the
    # hypervisor's own sources (the guest's backtrace comes later).
    t.check(re.search(HV_FRAME, hv_part_of_gdb(out)),
            f"no hypervisor backtrace beyond frame 0 at the Init stop: {hv_part_of_gdb(out)[-600:]}")
    t.check(re.search(r"hypercalls 0, [^\n]*\n\s+VMI calls: none yet", first),
            "vmihv-stats at the Init stop: the Init call should be the first")
    # In the guest, after activation: rest_init, called from start_kernel.
    t.check(second, f"no stop at the guest breakpoint: {out[-600:]}")
    t.check(re.search(r"Breakpoint 2, \S*rest_init \(\) at \S*init/main\.c", second),
            f"the guest stop is not in rest_init with its source: {second[:300]}")
    t.check(re.search(r"guest address space \(cr3 0x[0-9a-f]+\), pc 0xc[0-9a-f]+, CPL 1", second),
            "vmihv-where did not say the guest's space is live, in ring 1, at rest_init")
    t.check(re.search(r"#\d+\s+0x[0-9a-f]+ in start_kernel \(\)", second),
            f"the guest backtrace does not reach start_kernel: {second[:600]}")
    t.check(re.search(r"paravirtual=1", second), "vmihv-regs: the vCPU is not paravirtual")
    t.check(re.search(r"VMI calls: Init=1, ", second), "vmihv-stats does not count the one Init call")
    walk = re.search(r"guest:  cr3 0x[0-9a-f]+ \(gpa\)  PDE [0-9a-f]{8}[^\n]*\n"
                     r"\s+shadow: cr3 0x[0-9a-f]+ \(machine\)  PDE ([0-9a-f]{8})", second)
    t.check(walk, f"vmihv-walk printed no guest and shadow walk: {second[-600:]}")
    t.check(int(walk.group(1), 16) & 1, "the shadow PDE of init_task, a kernel address in use, "
                                        "is not present")
    calls = re.findall(r"VMI calls: ([^\n]*)", second)
    t.note(f"gdb stopped on Init in vcpu_hypercall and in the guest's rest_init; "
           f"by then: {calls[-1][:120] if calls else '?'}...")


@test("debug-gdb-native", alone="runs make debug-native in the checkout")
def debug_gdb_native(t):
    """make debug-native: the same bzImage without the hypervisor; gdb stops
    in start_kernel with a symbolic backtrace."""
    t.require(paths.BZIMAGE, paths.INITRD, VMLINUX)
    out = gdb_on_make_target(t, "debug-native", ["vmihv-break-guest start_kernel", "continue", "bt", "kill"])
    t.check(re.search(r"Breakpoint 1, start_kernel \(\) at \S*init/main\.c", out),
            f"no stop in start_kernel: {out[-500:]}")
    t.check(re.search(r"#1\s+0x[0-9a-f]+ in \w+", out), "no backtrace beyond start_kernel")
