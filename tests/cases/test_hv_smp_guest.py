"""A guest of several vCPUs, first step (docs/SMP.md, "A guest of several
vCPUs"): vcpus= / guestN.vcpus= give a guest N vCPUs; vCPU 0 starts at the
kernel's entry as before, the others wait, not runnable, until the guest
starts them; a count the hypervisor cannot take is refused at load."""

import re

from vmitest import MTTCG, accel_for, paths, test
from testguest import tguest_modules
from hvguest import ends_cleanly, expect_bad_input, stays_responsive
from guest_end import HV_BROKEN, check_invariants, ends_powered_off
from hvstats import hv_statistics



def tguest_pair(t, what, n=1):
    return tguest_modules(t, *[f"tguest={what}"] * n)


@test("hv-smp-guest-waiting-vcpus", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_guest_waiting_vcpus(t):
    """vcpus=4 on -smp 2: the test guest (tguest=exits, which never starts
    another vCPU) runs on vCPU 0 alone and powers off; vCPUs 1-3 are built
    and wait for their start, never entered; Ctrl-] s says so for each."""
    q = t.qemu("-smp", "2", "-m", "256", "-kernel", paths.HV_ELF, "-append",
               "guest_mem=16M vcpus=4 locks=check", "-initrd", tguest_pair(t, "exits"), accel=MTTCG)
    for k in (1, 2, 3):
        q.expect(r"vmi-hv: vcpu %d: waits for the guest to start it \(SetInitialAPState\)" % k,
                 timeout=60)
    # Ctrl-] s while it runs: each vCPU's times, and for a guest of
    # several vCPUs whether each has started and its IPIs.
    q.expect(r"exits: window 00000000", timeout=60)
    s = hv_statistics(q)
    s.search(r"vmi-hv: vcpu apic: guest 1 \(guest1\) vcpu 0: started, 0 IPIs sent, 0 taken\n")
    for k in (1, 2, 3):
        s.search(r"vmi-hv: vcpu apic: guest 1 \(guest1\) vcpu %d: waiting for its start, 0 IPIs sent, 0 taken\n" % k)
    # Ctrl-] l: a line per vCPU under the guest's.
    q.send("\x1dl")
    q.expect(r"        vcpu 0: \w+, \d+ exits, (on|last on) CPU \d, \d+ alarms\n", timeout=30)
    for k in (1, 2, 3):
        q.expect(r"        vcpu %d: waiting for its start, 0 exits, last on CPU -1, 0 alarms\n" % k, timeout=30)
    q.expect(r"vmi-hv: guest ran \d+ ms: \d+ exits", timeout=240)
    ends_cleanly(t, q, "vCPU 0 alone of four")


@test("hv-smp-guest-vcpus-refused")
def smp_guest_vcpus_refused(t):
    """vcpus=9 is refused by the parser; three guests of eight vCPUs are
    more than the scheduler takes: refused at load, naming the count."""
    q = t.qemu("-m", "256", "-kernel", paths.HV_ELF, "-append", "vcpus=9",
               "-initrd", tguest_pair(t, "exits"))
    expect_bad_input(t, q, r"malformed option 'vcpus=9': vcpus is how many vCPUs a guest has, 1-8", "vcpus=9",
                     timeout=60)
    q = t.qemu("-m", "256", "-kernel", paths.HV_ELF, "-append", "guest_mem=16M vcpus=8",
               "-initrd", tguest_pair(t, "exits", 3))
    expect_bad_input(t, q, r"the guests have 24 vCPUs together; the scheduler takes at most 16", "24 vCPUs",
                     timeout=60)


INVALID = "ffffffea"   # VMI_ERROR_INVALID (vrom/abi/vmi-13.0.def)
# What tguest=smp tries before its last AP starts (and then starting vCPU
# 1 again), and the reason the hypervisor must give for each.
GARBAGE = [("bad pointer", r"the APState is not readable guest memory"),
           ("APIC ID out of range", r"no vCPU has that APIC ID"),
           ("ring-0 CS", r"cs 0010: not a ring-1 code selector"),
           ("bad GDT base", r"descriptor table: "),
           ("VM flag", r"eflags 00020002: reserved, VM or NT bits"),
           ("start twice", r"that vCPU has started already")]
ROUNDS = 20
# The vLAPIC's refusals: (what tguest=smp prints, the hypervisor's warning).
APIC_GARBAGE = [("APICWrite LVT timer", r"vCPU 0: APICWrite register 320 value 00000003 refused"),
                ("APICWrite unknown register", r"vCPU 0: APICWrite register 1234 value 00000001 refused"),
                ("APICRead unknown register", r"vCPU 0: APICRead register 1004 value 00000000 refused"),
                ("IPI to APIC ID 99", r"vCPU 0: APICWrite register 300 value 00000040 refused"),
                ("INIT IPI", r"vCPU 0: APICWrite register 300 value 00000500 refused"),
                ("vector 3 IPI", r"vCPU 0: APICWrite register 300 value 00000003 refused")]


def smp_guest_boot(t, vcpus, smp):
    """tguest=smp with vcpus=N on -smp SMP: the garbage SetInitialAPState
    calls each answer VMI_ERROR_INVALID; vCPU 0 starts the others; each
    prints its APIC ID, takes a tick of a one-shot alarm wired to its LVT
    timer (the last one after the refused starts: no fault in the
    hypervisor) and counts itself in; IPI ping-pong through
    APICWrite(ICR) for ROUNDS rounds, EOI in each handler; the vLAPIC's
    garbage answered VMI_ERROR_INVALID; the guest powers off cleanly."""
    q = t.qemu("-smp", str(smp), "-m", "256", "-kernel", paths.HV_ELF, "-append",
               f"guest_mem=16M vcpus={vcpus} locks=check",
               "-initrd", tguest_modules(t, f"tguest=smp smp_vcpus={vcpus}"),
               accel=accel_for(smp))
    for what, why in GARBAGE[:-1]:
        q.expect(r"SetInitialAPState for APIC ID \d+ refused: %s" % why, timeout=60)
        q.expect(r"tguest: smp: garbage %s %s\n" % (what, INVALID), timeout=30)
    for k in range(1, vcpus):
        q.expect(r"vmi-hv: guest guest1: vCPU %d started by vCPU 0 at 0011:[0-9a-f]{8} \(SetInitialAPState\)" % k,
                 timeout=60)
    q.expect(r"tguest: smp: APs started %08x\n" % (vcpus - 1), timeout=120)
    what, why = GARBAGE[-1]
    q.expect(r"SetInitialAPState for APIC ID 1 refused: %s" % why, timeout=60)
    q.expect(r"tguest: smp: garbage %s %s\n" % (what, INVALID), timeout=30)
    # IPI ping-pong through the vLAPICs: ROUNDS pings to each AP, each
    # answered by a pong to vCPU 0, each handler ending with an EOI.
    q.expect(r"tguest: smp: rounds %08x\n" % ROUNDS, timeout=120)
    q.expect(r"tguest: smp: pong interrupts taken 00000001\n", timeout=30)
    for _ in range(1, vcpus):
        q.expect(r"tguest: smp: pings taken by an AP %08x\n" % ROUNDS, timeout=30)
    for what, why in APIC_GARBAGE:
        q.expect(r"%s(?s:.*?)tguest: smp: garbage %s %s\n" % (why, what, INVALID), timeout=30)
    q.expect(r"tguest: smp: survived, APs %08x\n" % (vcpus - 1), timeout=30)
    ends_cleanly(t, q, f"{vcpus} vCPUs started")
    # vCPU 0 starts the next AP while the last one says hello, and on
    # -smp 2 the hypervisor's "vCPU k started" line can land in the middle
    # of that hello: the console then shows the hello again whole after it,
    # and the cut piece may end in the 8 digits already: the same AP twice.
    ids = sorted(set(int(x, 16) for x in re.findall(r"tguest: smp: AP up, APIC ID ([0-9a-f]{8})", q.output)))
    t.check(ids == list(range(1, vcpus)), f"APs that said hello: {ids}")
    # Each vCPU's VMI shared page names its owner (vcpu_id, vmi-13.0.def).
    t.check(re.search(r"tguest: smp: vCPU 0's shared page names vCPU 00000000\n", q.output),
            "vCPU 0's shared page does not name vCPU 0")
    own = len(re.findall(r"tguest: smp: AP's shared page names its own vCPU 00000001", q.output))
    t.check(own == vcpus - 1, f"{own} of {vcpus - 1} APs found their own index in their shared page")
    # Each AP's one-shot LVTT alarm ticked, the last AP's too: it went
    # through the refused starts above, which must leave it whole.
    ticked = sorted(set(int(x, 16) for x in re.findall(r"tguest: smp: AP ticked, APIC ID ([0-9a-f]{8})", q.output)))
    t.check(ticked == list(range(1, vcpus)), f"APs whose LVTT alarm ticked: {ticked}")


@test("hv-smp-guest-start-2")
def smp_guest_start_2(t):
    smp_guest_boot(t, 2, 1)


@test("hv-smp-guest-start-4")
def smp_guest_start_4(t):
    smp_guest_boot(t, 4, 1)


@test("hv-smp-guest-start-4-smp2", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_guest_start_4_smp2(t):
    smp_guest_boot(t, 4, 2)


def smp_guest_ticks(t, vcpus, smp):
    """tguest=smptick with vcpus=N on -smp SMP: every vCPU writes LVTT =
    0xef and arms a periodic AVAILABLE alarm wired to it (as the seed's
    Linux does on each CPU); each counts its own ticks while it halts, so
    each vCPU's alarm interrupts that vCPU through its local APIC and wakes
    it.  Then vCPU 0 masks its LVTT: no tick while it runs with interrupts
    on; unmasked, they come again.  LVTT's vector 3 and the timer's count
    are refused."""
    q = t.qemu("-smp", str(smp), "-m", "256", "-kernel", paths.HV_ELF, "-append",
               f"guest_mem=16M vcpus={vcpus} locks=check",
               "-initrd", tguest_modules(t, f"tguest=smptick smp_vcpus={vcpus}"),
               accel=accel_for(smp))
    q.expect(r"tguest: smp: vCPUs with their ticks %08x\n" % vcpus, timeout=180)
    for _ in range(vcpus):
        q.expect(r"tguest: smp: ticks of a vCPU at least wanted 00000001\n", timeout=30)
    q.expect(r"tguest: smp: ticks while masked 00000000\n", timeout=60)
    q.expect(r"tguest: smp: ticks again unmasked 00000001\n", timeout=60)
    q.expect(r"vCPU 0: APICWrite register 320 value 00000003 refused(?s:.*?)"
             r"tguest: smp: garbage APICWrite LVT timer vector 3 %s\n" % INVALID, timeout=30)
    q.expect(r"vCPU 0: APICWrite register 380 value 000003e8 refused(?s:.*?)"
             r"tguest: smp: garbage APICWrite timer count %s\n" % INVALID, timeout=30)
    ends_cleanly(t, q, f"{vcpus} vCPUs' ticks")


@test("hv-smp-guest-lvtt-alarms")
def smp_guest_lvtt_alarms(t):
    smp_guest_ticks(t, 2, 1)


@test("hv-smp-guest-lvtt-alarms-smp2", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_guest_lvtt_alarms_smp2(t):
    smp_guest_ticks(t, 3, 2)


def smp_guest_mmu(t, smp, final="", options=""):
    """tguest=smpmmu with vcpus=2 on -smp SMP, slice=1 and audit=exit: after
    VMI activation vCPU 0 runs on directory A and starts vCPU 1 on B; both
    switch between A and B in opposite phase, reading the same linear
    address after each switch: each reads its own directory's page, never
    the other's, though the other vCPU ran between its load and its read
    (interleaved rounds).  Returns the QEMU run."""
    q = t.qemu("-smp", str(smp), "-m", "256", "-kernel", paths.HV_ELF, "-append",
               f"guest_mem=32M vcpus=2 slice=1 audit=exit locks=check {options}".strip(),
               "-initrd", tguest_modules(t, f"tguest=smpmmu {final}"),
               accel=accel_for(smp))
    q.expect(r"tguest: smpmmu: read through A on vCPU 0 5a5a0000\n", timeout=60)
    q.expect(r"tguest: smpmmu: SetInitialAPState on B 00000000\n", timeout=30)
    q.expect(r"tguest: smpmmu: vCPU 1 done 00000001\n", timeout=240)
    q.expect(r"tguest: smpmmu: vCPU 0 wrong reads 00000000\n", timeout=30)
    q.expect(r"tguest: smpmmu: vCPU 1 wrong reads 00000000\n", timeout=30)
    m = q.expect(r"tguest: smpmmu: interleaved rounds ([0-9a-f]{8})\n", timeout=30)
    n = int(m.group(1), 16)
    t.note(f"{n} rounds in which the other vCPU ran between a CR3 load and the read")
    t.check(n > 0, "the two vCPUs never ran between each other's load and read")
    return q


@test("hv-smp-guest-own-directories")
def smp_guest_own_directories(t):
    q = smp_guest_mmu(t, 1)
    ends_powered_off(t, q, "two vCPUs on their own directories")


@test("hv-smp-guest-release-loaded-elsewhere")
def smp_guest_release_loaded_elsewhere(t):
    """ReleasePage of the directory vCPU 1 has loaded, made by vCPU 0 (on
    another directory): the violation it is for the caller's own."""
    q = smp_guest_mmu(t, 1, "smpmmu_final=release")
    q.expect(r"tguest: smpmmu: releasing vCPU 1's directory", timeout=30)
    q.expect(r"ReleasePage breaks the rules: ReleasePage: page directory 0x[0-9a-f]+ is loaded in CR3",
             timeout=30)
    q.expect(r"vmi-hv: at guest eip [0-9a-f]{4}:[0-9a-f]{8} \(vCPU 0\)", timeout=30)
    t.check("still running after the release" not in q.output, "the release was taken")
    stays_responsive(t, q)
    check_invariants(t, q.output, "release of another vCPU's directory")


@test("hv-smp-guest-stop-beside-running-sibling", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_guest_stop_beside_running_sibling(t):
    """The same rule break by vCPU 0 while vCPU 1 spins in guest mode on the
    other CPU (vcpus_at_once=on, smpmmu_ap_spins: no exit of its own): the
    stop kicks it out, the guest is reaped once no CPU is inside it, its
    frames all come back and the hypervisor still answers."""
    q = smp_guest_mmu(t, 2, "smpmmu_final=release smpmmu_ap_spins", options="vcpus_at_once=on")
    q.expect(r"tguest: smpmmu: releasing vCPU 1's directory", timeout=30)
    q.expect(r"ReleasePage breaks the rules: ReleasePage: page directory 0x[0-9a-f]+ is loaded in CR3",
             timeout=30)
    t.check("still running after the release" not in q.output, "the release was taken")
    stays_responsive(t, q)
    check_invariants(t, q.output, "a stop while the sibling vCPU ran on the other CPU")


@test("hv-smp-guest-own-directories-smp2", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_guest_own_directories_smp2(t):
    """The two vCPUs one at a time (vcpus_at_once=off) on -smp 2: the
    scheduler never runs both, and either CPU may take either."""
    q = smp_guest_mmu(t, 2, options="vcpus_at_once=off")
    ends_powered_off(t, q, "two vCPUs on their own directories, -smp 2")


def at_once_remap(t, rom):
    """vcpus_at_once=on, -smp 2, audit=every=1: tguest=smpmmu smpmmu_remap.
    at_once_remap: vCPU 1 replaces, 3000 times, the page table through which vCPU 0 reads
    a linear address in a loop at that moment (a new table and page, the
    PDE pointed at it, the old table released and scribbled over); every
    read of vCPU 0 is a current generation's mark, never the scribble
    (a TLB entry left stale on vCPU 0's CPU); the shadows audit clean at
    every notification; the shootdowns that made vCPU 0 leave the guest
    are counted; no frame is lost."""
    q = t.qemu("-smp", "2", "-m", "256", "-kernel", paths.HV_ELF, "-append",
               "guest_mem=32M vcpus=2 vcpus_at_once=on audit=every=1 locks=check",
               "-initrd", tguest_modules(t, f"tguest=smpmmu smpmmu_remap{' smpmmu_rom' if rom else ''}"),
               accel=MTTCG)
    q.expect(r"tguest: smpmmu: SetInitialAPState on A 00000000\n", timeout=60)
    q.expect(r"tguest: smpmmu: generations 00000bb8\n", timeout=240)
    q.expect(r"tguest: smpmmu: reads at least a generation's 00000001\n", timeout=30)
    q.expect(r"tguest: smpmmu: poisoned reads 00000000\n", timeout=30)
    q.expect(r"tguest: smpmmu: stale reads 00000000\n", timeout=30)
    m = q.expect(r"vmi-hv: vCPUs at once: (\d+) shootdowns of the guest's other CPUs \((\d+) IPIs\)", timeout=60)
    shootdowns, ipis = int(m.group(1)), int(m.group(2))
    t.note(f"{shootdowns} shootdowns, {ipis} IPIs to the other CPU")
    t.check(ipis > 0, "no shootdown ever found vCPU 0 running on the other CPU: the vCPUs did not run at once")
    audits = re.findall(r"continuous audit \(every=1\): (\d+) audits", q.output)
    t.check(audits and int(audits[-1]) > 0, "the continuous audit never ran")
    ends_powered_off(t, q, "vCPUs at once, remapping under a reader")


@test("hv-smp-guest-at-once-remap", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_guest_at_once_remap(t):
    at_once_remap(t, False)


@test("hv-smp-guest-at-once-remap-rom", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_guest_at_once_remap_rom(t):
    """The same with vCPU 1's SetPxE and ReleasePage queued by the ROM in
    its shared page, then its FlushTLB (an exit while the queue holds
    entries: the drain, and the shootdown, before the scribble): the
    deferred queue's invariant from another vCPU's side."""
    at_once_remap(t, True)


@test("hv-smp-guest-own-directories-at-once", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_guest_own_directories_at_once(t):
    """The same two vCPUs on their own directories with vcpus_at_once=on on
    -smp 2: they run at once, each still reads its own mapping."""
    q = smp_guest_mmu(t, 2, options="vcpus_at_once=on")
    ends_powered_off(t, q, "two vCPUs at once on their own directories")


# smpmmu_trim: vCPU 1's vTLB holds a table for each of 1004 regions and
# one for its code; vCPU 0's holds one for its code and one per region it
# touches; the LDT copy then finds fewer than its 16 frames left.
TRIM_VCPU1_TABLES = 1 + 1004
TRIM_LEFT = 8


def vtlb_trim(t, smp):
    """tguest=smpmmu smpmmu_trim=N, vcpus=2 before VMI Init, -smp SMP: both
    vCPUs on their virtual TLBs, vCPU 1 reading 1004 regions in a loop;
    vCPU 0 fills the frame budget with vTLB tables (N from the budget left
    after load, read from a first boot of the same configuration) and
    loads an LDT, whose copy finds the budget spent: the caches are
    trimmed, vCPU 1's vTLB with them.  Its tables go back to the pool only
    after vCPU 1 has left the guest (a shootdown; on -smp 2 an IPI to the
    CPU it runs on), never while that CPU may still walk them; vCPU 1 reads
    on correctly through its rebuilt vTLB and no frame is lost."""
    args = ["-smp", str(smp), "-m", "256", "-kernel", paths.HV_ELF, "-append",
            "guest_mem=16M vcpus=2 vcpus_at_once=on locks=check"]
    accel = accel_for(smp)
    q = t.qemu(*args, "-initrd", tguest_modules(t, "tguest=smpmmu smpmmu_trim=1"), accel=accel)
    m = q.expect(r"machine frames free before the guests run: \d+ \((\d+) promised", timeout=60)
    q.kill()
    n = int(m.group(1)) - TRIM_VCPU1_TABLES - 1 - TRIM_LEFT
    t.note(f"{m.group(1)} frames of the budget left after load: vCPU 0 touches {n} regions")
    q = t.qemu(*args, "-initrd", tguest_modules(t, f"tguest=smpmmu smpmmu_trim={n}"), accel=accel)
    q.expect(r"tguest: smpmmu: SetInitialAPState on the fan directory 00000000\n", timeout=60)
    q.expect(r"tguest: smpmmu: LDT loaded, vCPU 1 rounds so far at least one 00000001\n", timeout=120)
    q.expect(r"tguest: smpmmu: vCPU 1 done 00000001\n", timeout=120)
    q.expect(r"tguest: smpmmu: vCPU 0 wrong reads 00000000\n", timeout=30)
    q.expect(r"tguest: smpmmu: vCPU 1 wrong reads 00000000\n", timeout=30)
    m = q.expect(r"vmi-hv: frame budget: \d+ of (\d+) frames in use \([^)]*; peak (\d+)\), (\d+) takes refused", timeout=60)
    limit, peak, refused = int(m.group(1)), int(m.group(2)), int(m.group(3))
    t.check(peak == limit and refused > 0,
            f"the budget was not spent at the LDT (peak {peak} of {limit}, {refused} takes refused): no trim")
    m = q.expect(r"vmi-hv: vCPUs at once: (\d+) shootdowns of the guest's other CPUs \((\d+) IPIs\)", timeout=60)
    shootdowns, ipis = int(m.group(1)), int(m.group(2))
    t.note(f"{shootdowns} shootdowns, {ipis} IPIs")
    t.check(shootdowns > 0, "vCPU 1's vTLB tables were freed with no shootdown of the guest's other CPUs")
    if smp > 1:
        t.check(ipis > 0, "vCPU 1's vTLB tables were freed while it ran on the other CPU, with no IPI to it")
    ends_powered_off(t, q, "a trim of a running sibling's vTLB")


@test("hv-smp-guest-vtlb-trim")
def smp_guest_vtlb_trim(t):
    vtlb_trim(t, 1)


@test("hv-smp-guest-vtlb-trim-smp2", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_guest_vtlb_trim_smp2(t):
    """The same on -smp 2: vCPU 1 runs on the other CPU at the trim."""
    vtlb_trim(t, 2)


@test("hv-smp4-two-guests-remap", alone="QEMU on -smp 4 with MTTCG: four host threads")
def smp4_two_guests_remap(t):
    """Four CPUs running two guests of two vCPUs each at once (-smp 4,
    vcpus_at_once=on, audit=every=1, locks=check), each tguest=smpmmu
    smpmmu_remap (at_once_remap above): every CPU runs guest code and
    takes its timer, the scheduler balances four queues, and each
    guest's shootdowns reach its other CPU while the other guest runs on
    the remaining two; every read a current mark, every audit clean, the
    frames all back at the end."""
    guest = tguest_modules(t, *["tguest=smpmmu smpmmu_remap"] * 2)
    q = t.qemu("-smp", "4", "-m", "256", "-kernel", paths.HV_ELF, "-append",
               "guest_mem=32M vcpus=2 vcpus_at_once=on audit=every=1 locks=check",
               "-initrd", guest, accel=MTTCG)
    ends_cleanly(t, q, "both guests", timeout=600)
    for name in ("guest1", "guest2"):
        for line in (r"generations 00000bb8", r"poisoned reads 00000000", r"stale reads 00000000"):
            t.check(re.search(r"\[%s\] tguest: smpmmu: %s\n" % (name, line), q.output),
                    f"{name} did not print 'smpmmu: {line}'")
    # The activation reports print the counters too (then 0): the end
    # reports are the last two.
    ipis = [int(n) for n in re.findall(r"vmi-hv: vCPUs at once: \d+ shootdowns of the guest's other CPUs "
                                       r"\((\d+) IPIs\)", q.output)][-2:]
    t.check(len(ipis) == 2 and min(ipis) > 0, f"IPIs of each guest's shootdowns: {ipis}")
    takes = [int(n) for n in re.findall(r"vmi-hv: locks=check: CPU \d+ checked (\d+) lock takes", q.output)]
    t.check(len(takes) == 4 and min(takes) > 0, f"lock takes checked per CPU: {takes}")
    t.note(f"shootdown IPIs per guest {ipis}; lock takes per CPU {takes}")
    check_invariants(t, q.output, "two two-vCPU guests on four CPUs")


@test("hv-smp-guest-start-8-smp2", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_guest_start_8_smp2(t):
    """The most vCPUs a guest may have (vcpus=8) booted, not only the
    ninth refused: tguest=smp with all eight on -smp 2."""
    smp_guest_boot(t, 8, 2)


@test("hv-smp-sixteen-vcpus", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_sixteen_vcpus(t):
    """Sixteen vCPUs in all, the scheduler's most: two tguest=smp guests of
    eight vCPUs each on -smp 2, every AP started, ticked and counted in,
    the IPI rounds done, both powered off cleanly."""
    guest = tguest_modules(t, *["tguest=smp smp_vcpus=8"] * 2)
    q = t.qemu("-smp", "2", "-m", "256", "-kernel", paths.HV_ELF, "-append",
               "guest_mem=16M vcpus=8 locks=check", "-initrd", guest, accel=MTTCG)
    ends_cleanly(t, q, "both guests", timeout=300)
    for name in ("guest1", "guest2"):
        for line in (r"APs started 00000007", r"rounds %08x" % ROUNDS, r"survived, APs 00000007"):
            t.check(re.search(r"\[%s\] tguest: smp: %s\n" % (name, line), q.output),
                    f"{name} did not print 'smp: {line}'")
    check_invariants(t, q.output, "two guests of eight vCPUs")


@test("hv-smp-guest-ap-dies-smp2", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_guest_ap_dies_smp2(t):
    """tguest=smp smp_ap_dies, vcpus=3 on -smp 2: after the rounds the last
    AP halts with interrupts off in its ping handler (a privileged hlt, as
    Linux's stop_this_cpu): the hypervisor parks it until a new start,
    two more pings to it are never taken, the other AP still answers;
    then SetInitialAPState starts it again (a CPU back online), it comes
    up and answers a ping (its vLAPIC reset: the ping it died in is no
    longer in service), and the guest goes on to power off with every
    frame back."""
    q = t.qemu("-smp", "2", "-m", "256", "-kernel", paths.HV_ELF, "-append", "guest_mem=16M vcpus=3 locks=check",
               "-initrd", tguest_modules(t, "tguest=smp smp_vcpus=3 smp_ap_dies"), accel=MTTCG)
    q.expect(r"tguest: smp: survived, APs 00000002\n", timeout=120)
    q.expect(r"vmi-hv: vcpu 2: hlt with interrupts off at [0-9a-f]{4}:[0-9a-f]{8}: parked until the guest starts it "
             r"again \(SetInitialAPState\)",
             timeout=60)
    q.expect(r"tguest: smp: pings the dead AP took 00000000\n", timeout=120)
    q.expect(r"tguest: smp: other APs still answering 00000001\n", timeout=60)
    m = q.expect(r"tguest: smp: parked AP started again, SetInitialAPState ([0-9a-f]{8})\n", timeout=60)
    t.check(m.group(1) == "00000000", f"SetInitialAPState of the parked AP answered {m.group(1)}, not 0")
    q.expect(r"tguest: smp: restarted AP answers a ping 00000001\n", timeout=120)
    ends_powered_off(t, q, "an AP halted with interrupts off, then started again")


@test("hv-smp-guest-pic-from-ap-smp2", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_guest_pic_from_ap_smp2(t):
    """tguest=smp smp_pic, vcpus=2 on -smp 2: vCPU 1 writes the master
    8259's mask (a trapped outb) while vCPU 0 runs without an exit, its
    shared page's copy of the mask published before; vCPU 0 then reads
    the mask back: vCPU 1's, not its own stale copy taken back at its
    exit."""
    q = t.qemu("-smp", "2", "-m", "256", "-kernel", paths.HV_ELF, "-append", "guest_mem=16M vcpus=2 locks=check",
               "-initrd", tguest_modules(t, "tguest=smp smp_vcpus=2 smp_pic"), accel=MTTCG)
    m = q.expect(r"tguest: smp: 8259 mask vCPU 1 wrote read back by vCPU 0 ([0-9a-f]{8})\n", timeout=120)
    t.check(m.group(1) == "00000001", "vCPU 0 read back its own stale 8259 mask, not the one vCPU 1 wrote")
    ends_powered_off(t, q, "vCPU 1 wrote the 8259 mask")


def sparse_directories(t, smp):
    """tguest=smpmmu smpmmu_sparse, vcpus=3 on -smp SMP: three vCPUs each on
    a directory of its own that links 740 page tables (as three processes
    touching one page in every 4 MiB of ~3 GiB), all three loaded at once
    and read through three times: more tables than the guest's frame
    budget holds, all of them linked from loaded directories.  The guest
    runs on (tables are unlinked, shot down and linked again on demand),
    every read is its own directory's page, the shadows audit clean and
    no frame is lost."""
    q = t.qemu("-smp", str(smp), "-m", "256", "-kernel", paths.HV_ELF, "-append",
               "guest_mem=16M vcpus=3 vcpus_at_once=on locks=check",
               "-initrd", tguest_modules(t, "tguest=smpmmu smpmmu_sparse"),
               accel=accel_for(smp), fatal=HV_BROKEN + [r"vmi-hv: guest stopped: [^\n]*"])
    q.expect(r"tguest: smpmmu: sparse directory 0 loaded, reads 5a5a0000\n", timeout=60)
    for _ in (1, 2):
        q.expect(r"tguest: smpmmu: SetInitialAPState on a sparse directory 00000000\n", timeout=60)
    for _ in range(3):
        q.expect(r"tguest: smpmmu: sparse reader done 00000001\n", timeout=240)
    for _ in range(3):
        q.expect(r"tguest: smpmmu: sparse reader wrong reads 00000000\n", timeout=30)
    m = q.expect(r"vmi-hv: frame budget: \d+ of (\d+) frames in use \([^)]*; peak (\d+)\), (\d+) takes refused", timeout=60)
    t.note(f"budget {m.group(1)} frames, peak {m.group(2)}, {m.group(3)} takes refused")
    t.check(int(m.group(3)) > 0, "the three directories' tables fitted the budget: nothing was tested")
    m = q.expect(r"(\d+) evictions \((\d+) unlinked loaded directories' tables\)", timeout=30)
    t.note(f"{m.group(1)} evictions, {m.group(2)} of them unlinking loaded directories' tables")
    t.check(int(m.group(2)) > 0, "no loaded directory's tables were ever unlinked")
    ends_powered_off(t, q, "three loaded directories beyond the frame budget")


@test("hv-smp-guest-sparse-directories")
def smp_guest_sparse_directories(t):
    sparse_directories(t, 1)


@test("hv-smp-guest-sparse-directories-smp2", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_guest_sparse_directories_smp2(t):
    """The same on -smp 2: the vCPUs fault and evict at once."""
    sparse_directories(t, 2)


def reboot_overlaps(t, options, boots=2):
    """tguest=smpreboot as guest 1 (two vCPUs) beside tguest=idle, on -smp 2
    with OPTIONS: the counts of moments both of guest 1's vCPUs ran at once
    (as its vCPU 0 saw them) in its first BOOTS boots, each ended by a
    reboot (docs/HV.md, "Power-off and reboot": a reboot keeps the
    guest's CPUs and its vcpus_at_once)."""
    q = t.qemu("-smp", "2", "-m", "128", "-kernel", paths.HV_ELF, "-append",
               f"guest_mem=16M guest1.vcpus=2 locks=check {options}",
               "-initrd", tguest_modules(t, "tguest=smpreboot smp_vcpus=2", "tguest=idle"),
               accel=MTTCG)
    counts = []
    for boot in range(boots):
        if boot:
            q.expect(r"vmi-hv: guest guest1 starts again from its modules \(reboot %d\)" % boot, timeout=120)
        m = q.expect(r"tguest: smp: reboot test, counts moved while vCPU 0 ran ([0-9a-f]{8})\n", timeout=120)
        counts.append(int(m.group(1), 16))
    t.note(f"{options}: moments both vCPUs ran at once, by boot: {counts}")
    t.check("guest stopped" not in q.output, "a guest was stopped")
    return counts


@test("hv-smp-guest-reboot-at-once", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_guest_reboot_at_once(t):
    """vcpus_at_once=on, no pinning: five boots in a row each start vCPU 1
    and finish their count (whether the two ran at once depends on the
    host's threads: noted only).  The CPU that took a vCPU out of the
    dying guest must take IPIs and timer interrupts after it: the IPI that
    made it leave used to stay in service, that CPU slept through every
    later kick, and the next boot's vCPU 1 never ran (vCPU 0 waited for
    it for ever)."""
    counts = reboot_overlaps(t, "vcpus_at_once=on", boots=5)
    t.check(len(counts) == 5, f"boots that finished: {len(counts)}")


@test("hv-smp-guest-reboot-keeps-pinning", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_guest_reboot_keeps_pinning(t):
    """guest1.cpus=1: both vCPUs of guest 1 on CPU 1 alone, so never at
    once, before and after the reboot (unpinned, they were: with
    vcpus_at_once=on they run at once on -smp 2)."""
    counts = reboot_overlaps(t, "vcpus_at_once=on guest1.cpus=1")
    t.check(counts == [0, 0], f"moments the pinned vCPUs ran at once, by boot: {counts}")


@test("hv-smp-guest-reboot-keeps-one-at-a-time", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_guest_reboot_keeps_one_at_a_time(t):
    """vcpus_at_once=off: guest 1's vCPUs never at once, before and after
    the reboot."""
    counts = reboot_overlaps(t, "vcpus_at_once=off")
    t.check(counts == [0, 0], f"moments the vCPUs ran at once, by boot: {counts}")


def gdt_after_reboot(t, smp):
    """tguest=gdtreboot beside tguest=idle: before its own lgdt the guest
    counts the loadable slots among 4-9 of the GDT it starts with (lsl),
    then loads a GDT with data segments in those slots and reboots.  The
    boot GDT after the reboot holds only the boot protocol's two segments,
    nothing of the guest's GDT before nor of another guest's (docs/HV.md,
    "Power-off and reboot")."""
    q = t.qemu("-smp", str(smp), "-m", "128", "-kernel", paths.HV_ELF, "-append", "guest_mem=16M",
               "-initrd", tguest_modules(t, "tguest=gdtreboot", "tguest=idle"),
               accel=accel_for(smp))
    counts = []
    for boot in range(3):
        if boot:
            q.expect(r"vmi-hv: guest guest1 starts again from its modules \(reboot %d\)" % boot, timeout=120)
        m = q.expect(r"tguest: gdtreboot: boot GDT slots 4-9 loadable ([0-9a-f]{8})\n", timeout=120)
        counts.append(int(m.group(1), 16))
    t.check(counts == [0, 0, 0], f"loadable slots 4-9 of the boot GDT, by boot: {counts}")


@test("hv-reboot-clean-gdt")
def reboot_clean_gdt(t):
    gdt_after_reboot(t, 1)


@test("hv-reboot-clean-gdt-smp2", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def reboot_clean_gdt_smp2(t):
    gdt_after_reboot(t, 2)



@test("hv-smp-guest-init-again", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_guest_init_again(t):
    """tguest=smpinit, vcpus=4 on -smp 2: the APs are started before the
    guest's VMI Init and each makes its own (accepted), then every vCPU
    makes Init three times more, each refused (-22).  The guest's
    activation report is printed once, not once per vCPU (each a full
    shadow audit and some 30 lines under console_lock), and its refusals
    are one log line, not lines per vCPU (docs/HV.md, "Port I/O", the
    limits on guest-made lines); the guest powers off cleanly."""
    q = t.qemu("-smp", "2", "-m", "128", "-kernel", paths.HV_ELF, "-append", "guest_mem=16M vcpus=4 locks=check",
               "-initrd", tguest_pair(t, "smpinit smp_vcpus=4"), accel=MTTCG, fatal=HV_BROKEN)
    q.expect(r"tguest: smpinit: Inits answered otherwise 00000000\n", timeout=60)
    ends_powered_off(t, q, "Inits again on every vCPU")
    reports = len(re.findall(r"vmi-hv: guest activated VMI after ", q.output))
    t.check(reports == 1, f"{reports} activation reports for 4 vCPUs' Inits, expected 1")
    logged = re.findall(r"guest guest1: vCPU \d: VMI Init refused: VMI is active already[^\n]*", q.output)
    t.check(len(logged) == 1, f"{len(logged)} refusal lines for 12 refusals on 4 vCPUs, expected 1: {logged}")
