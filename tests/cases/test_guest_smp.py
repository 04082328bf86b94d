"""The guest kernel on several CPUs (docs/GUEST.md, "SMP").

The same bzImage is an SMP kernel (NR_CPUS 8) that boots on one CPU or
more, natively and under vmi-hv.  Natively it finds its CPUs in SeaBIOS's
MP table and starts them with INIT/SIPI, as any SMP kernel does.

  - guest-smp-native-2: natively on QEMU -smp 2 (two sockets), the shell's `nproc`
    prints 2 and /proc/cpuinfo lists two processors.
"""

from hvguest import GUEST_FATAL, MARKER, PROMPT, SERIAL_CMDLINE
from vmitest import paths, test

MTTCG = "tcg,thread=multi"
# Two sockets of one core: SeaBIOS lists only the first logical CPU of
# each package in its MP table (a kernel without ACPI, as ours, would
# see one CPU of "-smp 2" when QEMU makes it two cores of one socket).
NATIVE_SMP2 = "2,sockets=2,cores=1,threads=1"


def count_cpus(t, q, label):
    """At the shell: (nproc, processors in /proc/cpuinfo).  The output line
    CPUS=n,m differs from the typed command's echo (CPUS=$(nproc),...),
    so only the command's run can match it."""
    q.expect(PROMPT, timeout=300)
    q.send("echo CPUS=$(nproc),$(grep -c ^processor /proc/cpuinfo)\n")
    m = q.expect(r"\nCPUS=(\d+),(\d+)\r?\n", timeout=60)
    nproc, listed = int(m.group(1)), int(m.group(2))
    t.note(f"{label}: nproc {nproc}, /proc/cpuinfo lists {listed} processors")
    return nproc, listed


@test("guest-smp-native-2", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def guest_smp_native_2(t):
    t.require(paths.BZIMAGE, paths.INITRD)
    q = t.qemu("-smp", NATIVE_SMP2, "-m", "128", "-kernel", paths.BZIMAGE, "-initrd", paths.INITRD,
               "-append", SERIAL_CMDLINE, fatal=GUEST_FATAL, accel=MTTCG)
    m = q.expect(MARKER, timeout=300)
    t.check(m.group(3) == "native", f"the guest reports mode {m.group(3)}")
    nproc, listed = count_cpus(t, q, "native -smp 2")
    t.check(nproc == 2, f"nproc printed {nproc}, not 2")
    t.check(listed == 2, f"/proc/cpuinfo lists {listed} processors, not 2")
