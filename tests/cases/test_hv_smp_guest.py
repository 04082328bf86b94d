"""A guest of several vCPUs, first step (docs/HV.md, "A guest of several
vCPUs"): vcpus= / guestN.vcpus= give a guest N vCPUs; vCPU 0 starts at the
kernel's entry as before, the others wait, not runnable, until the guest
starts them; a count the hypervisor cannot take is refused at load."""

import os

from vmitest import paths, test
from hvguest import BAD_INPUT, GUEST_SHUTDOWN

TGUEST = os.path.join(paths.BUILD, "hv", "test-guests", "tguest.bzImage")
MTTCG = "tcg,thread=multi"


def tguest_pair(t, what, n=1):
    tiny = t.tmpfile("tiny-initrd", b"not an initramfs, the test guest ignores it\n")
    return ",".join([f"{TGUEST} tguest={what},{tiny}"] * n)


@test("hv-smp-guest-waiting-vcpus")
def smp_guest_waiting_vcpus(t):
    """vcpus=4 on -smp 2: the test guest (tguest=exits, which never starts
    another vCPU) runs on vCPU 0 alone and powers off; vCPUs 1-3 are built
    and wait for their start, never entered (the end report names each)."""
    t.require(paths.HV_ELF, TGUEST)
    q = t.qemu("-smp", "2", "-m", "256", "-kernel", paths.HV_ELF, "-append",
               "guest_mem=16M vcpus=4 locks=check", "-initrd", tguest_pair(t, "exits"), accel=MTTCG)
    for k in (1, 2, 3):
        q.expect(r"vmi-hv: vcpu %d: waits for the guest to start it \(SetInitialAPState\)" % k,
                 timeout=60)
    q.expect(r"vmi-hv: guest ran \d+ ms: \d+ exits", timeout=240)
    t.check(q.wait_exit(timeout=60) == GUEST_SHUTDOWN, "the guest did not power off cleanly")


@test("hv-smp-guest-vcpus-refused")
def smp_guest_vcpus_refused(t):
    """vcpus=9 is refused by the parser; three guests of eight vCPUs are
    more than the scheduler takes: refused at load, naming the count."""
    t.require(paths.HV_ELF, TGUEST)
    q = t.qemu("-m", "256", "-kernel", paths.HV_ELF, "-append", "vcpus=9",
               "-initrd", tguest_pair(t, "exits"))
    q.expect(r"vmi-hv: error: malformed option 'vcpus=9': vcpus is how many vCPUs a guest has, 1-8",
             timeout=60)
    t.check(q.wait_exit(timeout=30) == BAD_INPUT, "vcpus=9 was not refused")
    q = t.qemu("-m", "256", "-kernel", paths.HV_ELF, "-append", "guest_mem=16M vcpus=8",
               "-initrd", tguest_pair(t, "exits", 3))
    q.expect(r"vmi-hv: error: the guests have 24 vCPUs together; the scheduler takes at most 16",
             timeout=60)
    t.check(q.wait_exit(timeout=30) == BAD_INPUT, "24 vCPUs were not refused")
