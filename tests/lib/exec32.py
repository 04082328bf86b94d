"""How this host runs 32-bit (i386) host helpers such as romexec32.

The unit tests are 64-bit (cmocka is 64-bit only here), but the VMI ROM is
32-bit code, so the transport test drives a 32-bit helper process.  Some
x86-64 hosts cannot execute i386 binaries at all: their kernel has IA32
emulation off at run time, and execve fails with "Exec format error".  There
the helpers run under QEMU's user-mode emulator, qemu-i386 (Debian's
qemu-user), which translates i386 code and turns its int $0x80 system calls
into the host's own.

The decision is taken once per run, by executing a tiny static i386 program
(tests/unit/exec32_probe.S), never by guessing from uname.  VMIHV_EXEC32
overrides it:
    auto    (default) native when the probe runs, else qemu-i386
    native  always natively (fails where the host cannot)
    qemu    always under qemu-i386

The unit tests learn the decision from the environment (see environ()):
    VMIHV_EXEC32_WRAPPER  empty: run natively; else the emulator to prefix
    VMIHV_QEMU_I386       qemu-i386's path (for the test that always uses it)
"""

import os
import shutil
import subprocess

from vmitest import paths

# VMIHV_EXEC32_PROBE: another probe (a test hands in a broken one).
PROBE = os.environ.get("VMIHV_EXEC32_PROBE") or os.path.join(paths.BUILD, "tests", "exec32-probe")
PROBE_OUTPUT = "exec32-probe: i386 ok"
MODES = ("auto", "native", "qemu")


class Exec32:
    """The outcome: how = "native" | "qemu-i386" | None (cannot run them),
    and why, a sentence for the log."""

    def __init__(self, how, why, qemu):
        self.how, self.why, self.qemu = how, why, qemu

    def environ(self):
        """Environment variables that tell a unit test what was decided."""
        return {"VMIHV_EXEC32_WRAPPER": self.qemu if self.how == "qemu-i386" else "",
                "VMIHV_QEMU_I386": self.qemu or ""}


def probe_native(probe=PROBE):
    """Run the i386 probe once; return None when it ran, else why not."""
    if not os.path.isfile(probe):
        return (f"untested: the probe {os.path.relpath(probe, paths.ROOT)} is missing "
                "(make unit builds it)")
    try:
        proc = subprocess.run([probe], capture_output=True, text=True, timeout=30)
    except OSError as e:
        return f"execve of an i386 program failed: {e.strerror}"
    except subprocess.TimeoutExpired:
        return "the i386 probe did not finish in 30 s"
    if proc.returncode != 0 or proc.stdout.strip() != PROBE_OUTPUT:
        return (f"the i386 probe exited with status {proc.returncode} "
                f"and printed {proc.stdout.strip()[:60]!r}")
    return None


def decide(mode=None, probe=PROBE):
    """Choose how 32-bit helpers run on this host (see the module's doc)."""
    mode = (mode if mode is not None else os.environ.get("VMIHV_EXEC32", "auto")) or "auto"
    qemu = shutil.which("qemu-i386")
    if mode not in MODES:
        return Exec32(None, f"VMIHV_EXEC32={mode} is not one of {', '.join(MODES)}", qemu)
    if mode == "native":
        return Exec32("native", "natively (forced by VMIHV_EXEC32=native)", qemu)
    if mode == "qemu":
        if not qemu:
            return Exec32(None, "VMIHV_EXEC32=qemu, but there is no qemu-i386 "
                                "(install qemu-user: make deps)", qemu)
        return Exec32("qemu-i386", f"under {qemu} (forced by VMIHV_EXEC32=qemu)", qemu)
    why_not = probe_native(probe)
    if why_not is None:
        return Exec32("native", "natively (this host executes i386 binaries)", qemu)
    if qemu:
        return Exec32("qemu-i386", f"under {qemu}: this host cannot execute i386 "
                                   f"binaries ({why_not})", qemu)
    return Exec32(None, f"this host cannot execute i386 binaries ({why_not}) and there "
                        "is no qemu-i386 to run them (install qemu-user: make deps)", qemu)
