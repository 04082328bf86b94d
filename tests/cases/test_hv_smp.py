"""More than one physical CPU (docs/HV.md, "More than one CPU"): the CPUs
come from the ACPI MADT (or the MP table), each started one with
INIT-SIPI-SIPI gets its own tables and says so in the boot log; cpus=N
limits them; a one-CPU machine runs as before.  The machine runs with
MTTCG (one host thread per CPU), as `make run SMP=N` does."""

import re

from vmitest import paths, test
from hvguest import PROMPT, boot_hv

MTTCG = "tcg,thread=multi"


def started(output):
    return [int(n) for n in re.findall(r"vmi-hv: CPU (\d+) started: APIC ID \d+", output)]


@test("hv-smp-bringup")
def smp_bringup(t):
    """-smp 2: both CPUs found in the MADT, CPU 1 started; the guest still
    reaches its shell and answers."""
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    q = t.qemu("-smp", "2", "-m", "256", "-kernel", paths.HV_ELF, "-initrd",
               f"{paths.BZIMAGE} console=ttyS0,,115200,{paths.INITRD}", accel=MTTCG)
    q.expect(r"CPU found \(ACPI MADT\): APIC ID 1\n", timeout=60)
    q.expect(r"vmi-hv: CPU 1 started: APIC ID 1, its own GDT, IDT, TSSes and stacks", timeout=60)
    q.expect(PROMPT, timeout=300)
    q.send("echo smp-$((6 * 7))\n")
    q.expect(r"smp-42", timeout=60)
    t.check(started(q.output) == [1], f"CPUs started: {started(q.output)}")


@test("hv-smp-cpus-limit")
def smp_cpus_limit(t):
    """-smp 4 with cpus=2: CPU 1 started, APIC IDs 2 and 3 not, with the
    reason; -smp 1 starts none and finds the one CPU."""
    t.require(paths.HV_ELF)
    q = t.qemu("-smp", "4", "-m", "128", "-kernel", paths.HV_ELF, "-append",
               "cpus=2 after_load=stop", accel=MTTCG)
    q.expect(r"APIC ID 3 not started: cpus= asks for 2 CPUs", timeout=60)
    q.wait_exit(timeout=60)
    t.check(started(q.output) == [1], f"CPUs started: {started(q.output)}")
    t.check("APIC ID 2 not started: cpus= asks for 2 CPUs" in q.output, "APIC ID 2 not refused")
    q = t.qemu("-m", "128", "-kernel", paths.HV_ELF, "-append", "after_load=stop")
    q.expect(r"CPU found \(ACPI MADT\): APIC ID 0\n", timeout=60)
    q.wait_exit(timeout=60)
    t.check(started(q.output) == [], f"CPUs started on -smp 1: {started(q.output)}")
