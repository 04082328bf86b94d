"""make debug and the gdb script (issue 19): gdb in batch mode attaches to
the QEMU that `make debug` starts, with the command `make debug` prints,
stops in the hypervisor on the guest's VMI Init call and in the guest after
activation, with symbolic backtraces on both sides."""

import os
import re
import shlex
import signal
import socket
import subprocess
import time

from vmitest import paths, test


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


@test("debug-gdb-hypervisor-and-guest")
def debug_gdb_hypervisor_and_guest(t):
    t.require(paths.ISO, paths.HV_ELF, os.path.join(paths.BUILD, "guest", "vmlinux"))
    port = free_port()
    make_log = t.log_path[:-4] + ".make.log"
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "MAKEFLAGS", "MFLAGS")}
    with open(make_log, "w") as out:
        make = subprocess.Popen(["make", "-s", "--no-print-directory", "debug", f"GDB_PORT={port}"],
                                cwd=paths.ROOT, stdin=subprocess.PIPE, stdout=out,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        m = wait_for(r"\n\s+(gdb -x \S+ -ex 'target remote :%d')\n" % port, make_log, make, 300)
        t.check(m, "make debug printed no gdb command to attach with (see "
                   f"{os.path.relpath(make_log, paths.ROOT)})")
        attach = shlex.split(m.group(1))
        script = [
            "vmihv-break-call Init", "continue",
            "vmihv-where", "bt", "vmihv-stats",
            "delete",
            "vmihv-break-guest rest_init", "continue",
            "vmihv-where", "bt", "vmihv-regs", "vmihv-stats",
            "vmihv-walk (unsigned)&init_task",
            "kill",
        ]
        cmd = attach[:1] + ["-nx", "-batch"] + attach[1:]
        for line in script:
            cmd += ["-ex", line]
        gdb = subprocess.run(cmd, cwd=paths.ROOT, capture_output=True, text=True, timeout=150)
        out = gdb.stdout + gdb.stderr
        with open(t.log_path, "a") as f:
            f.write("# " + " ".join(shlex.quote(c) for c in cmd) + "\n" + out)
        first, _, _ = out.partition("Breakpoint 2")
        second = out[out.find("Breakpoint 2"):] if "Breakpoint 2" in out else ""
        # In the hypervisor, on Init: its own address space and symbols.
        t.check(re.search(r"Breakpoint 1, vcpu_hypercall \(v=0x[0-9a-f]+[^)]*\) at \S*hv/(?:vcpu/)?hypercall\.c:\d+", out),
                f"no stop in vcpu_hypercall on Init: {out[-600:]}")
        t.check(re.search(r"hypervisor address space \(cr3 0x[0-9a-f]+\), pc 0x[0-9a-f]+, CPL 0", out),
                "vmihv-where did not say the hypervisor's space is live at the Init stop")
        t.check(re.search(r"#1\s+0x[0-9a-f]+ in \w+ \(", out), "no hypervisor backtrace beyond frame 0")
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
    finally:
        try:
            os.killpg(make.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        make.wait()
