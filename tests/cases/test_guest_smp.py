"""The guest kernel on several CPUs (docs/GUEST.md, "SMP").

The same bzImage is an SMP kernel (NR_CPUS 8) that boots on one CPU or
more, natively and under vmi-hv.  Natively it finds its CPUs in SeaBIOS's
MP table and starts them with INIT/SIPI, as any SMP kernel does.

  - guest-smp-native-2: natively on QEMU -smp 2 (two sockets), the shell's `nproc`
    prints 2 and /proc/cpuinfo lists two processors.
"""

import re

from hvguest import GUEST_FATAL, MARKER, PROMPT, SERIAL_CMDLINE, hv_modules
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


def boot_hv_vcpus(t, vcpus, smp=1, hv_args=""):
    """The bzImage under the hypervisor as one guest of `vcpus` vCPUs, on
    QEMU -smp `smp` (MTTCG when more than one), to its init marker."""
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    extra = {"accel": MTTCG} if smp > 1 else {}
    q = t.qemu("-smp", str(smp), "-m", "256", "-kernel", paths.HV_ELF, "-append", f"vcpus={vcpus} {hv_args}",
               "-initrd", hv_modules(), fatal=GUEST_FATAL, **extra)
    q.expect(r"vmi-hv: guest guest1: vCPU %d started by vCPU 0" % (vcpus - 1), timeout=300)
    m = q.expect(MARKER, timeout=300)
    t.check(m.group(3) == "vmi", f"the guest reports mode {m.group(3)}")
    return q


def expect_cpus(t, q, n, label):
    """At the shell: nproc prints n and /proc/cpuinfo lists n processors."""
    nproc, listed = count_cpus(t, q, label)
    t.check(nproc == n, f"nproc printed {nproc}, not {n}")
    t.check(listed == n, f"/proc/cpuinfo lists {listed} processors, not {n}")


def user_ticks(t, q, tag):
    """At the shell: each CPU's user time (USER_HZ ticks) from /proc/stat."""
    q.send(f"grep '^cpu[0-9]' /proc/stat | sed 's/^/{tag}-/'; echo {tag}-$((6*7))\n")
    m = q.expect(r"\n((?:%s-cpu\d+ [^\n]*\n)+)%s-42\r?\n" % (tag, tag), timeout=60)
    return {int(c): int(u) for c, u in re.findall(r"%s-cpu(\d+) (\d+)" % tag, m.group(1))}


def busy_both_cpus(t, q, label):
    """Two busy loops for 5 s: the user time of CPU 0 and CPU 1 must both
    advance, by at least half a second each (each vCPU's share of the
    host: about 2.5 s of the 5 on -smp 1)."""
    before = user_ticks(t, q, "B")
    q.send("(while :; do :; done) & (while :; do :; done) & sleep 5; kill %1 %2\n")
    q.expect(PROMPT, timeout=60)
    after = user_ticks(t, q, "A")
    grew = {c: after[c] - before.get(c, 0) for c in after}
    t.note(f"{label}: user ticks in 5 s of two busy loops, per CPU: {grew}")
    for cpu in (0, 1):
        t.check(grew.get(cpu, 0) >= 50, f"CPU {cpu}'s user time grew by {grew.get(cpu, 0)} ticks, not 50 or more")


@test("hv-smp-linux-2")
def hv_smp_linux_2(t):
    q = boot_hv_vcpus(t, 2)
    expect_cpus(t, q, 2, "vcpus=2 on -smp 1")
    busy_both_cpus(t, q, "vcpus=2 on -smp 1")


@test("hv-smp-linux-2-smp2", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def hv_smp_linux_2_smp2(t):
    """One vCPU at a time (vcpus_at_once=off) on two CPUs."""
    q = boot_hv_vcpus(t, 2, smp=2, hv_args="vcpus_at_once=off")
    expect_cpus(t, q, 2, "vcpus=2 one at a time on -smp 2")
    busy_both_cpus(t, q, "vcpus=2 one at a time on -smp 2")


@test("hv-smp-linux-2-at-once", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def hv_smp_linux_2_at_once(t):
    """Both vCPUs inside the guest at the same moment, on two CPUs: the
    boot CPU's periodic tick must go on while it runs without exits (the
    AP's calibration waits for jiffies to move)."""
    q = boot_hv_vcpus(t, 2, smp=2, hv_args="vcpus_at_once=on")
    expect_cpus(t, q, 2, "vcpus=2 at once on -smp 2")
    busy_both_cpus(t, q, "vcpus=2 at once on -smp 2")


@test("hv-smp-linux-4")
def hv_smp_linux_4(t):
    q = boot_hv_vcpus(t, 4)
    expect_cpus(t, q, 4, "vcpus=4 on -smp 1")
