"""A victim beside an attacker keeps its throughput (docs/TIME.md, "Rates a
guest controls"): tests/lib/victim.py measures the victim (tguest=victim)
in 100 ms windows while the attacker (tguest=rates:*) is idle, busy on a
CPU of its own, and attacking, in turn, in one run on -smp 2; the victim
must keep at least 80% of its throughput beside the quiet neighbour
(busy) and beside the idle one.

  hv-victim-ipi-pingpong  two vCPUs playing IPI ping-pong, each halting
                          after its IPI: every wake-up may preempt the
                          victim (wake-up preemption is bounded:
                          sched.c, sched_wake)
  hv-victim-ipi-storm     the hostile case smp-ipi-storm measured: vCPU 0
                          sends IPIs without pause to vCPU 1, which halts
                          after each
  hv-victim-lvtt-masked   every vCPU's LVT timer masked under periodic
                          alarms of period 1 cycle: none may cost a timer
                          interrupt (valarm.c, latched()); the attacker's
                          vCPUs and the victim share CPU 1 (guestN.cpus=1),
                          as a guest's many vCPUs end up sharing every CPU;
                          and beside it busy on that CPU the victim gets
                          about half (a vCPU that slept banks no credit)
"""

from vmitest import test
from victim import BUSY, IDLE, beside, keeps

WHY = "QEMU on -smp 2 with MTTCG: both host CPUs, and a throughput measured"


def both_modes(t, what, attacker):
    """The attacker of two vCPUs with vcpus_at_once=on (both may run at
    once: an IPI kicks the other CPU) and off (one at a time), as the
    hostile cases smp-ipi-storm-at-once and smp-ipi-storm run it: the
    victim keeps its throughput beside each."""
    for at_once in ("on", "off"):
        m = beside(t, f"{attacker} smp_vcpus=2", f"guest1.vcpus=2 vcpus_at_once={at_once}")
        keeps(t, f"{what}, vcpus_at_once={at_once}", m)


@test("hv-victim-ipi-pingpong", alone=WHY)
def hv_victim_ipi_pingpong(t):
    """Beside IPI ping-pong between two halting vCPUs the victim keeps at
    least 80% of its throughput beside the same guest quiet."""
    both_modes(t, "IPI ping-pong", "tguest=rates:ipi")


@test("hv-victim-ipi-storm", alone=WHY)
def hv_victim_ipi_storm(t):
    """The hostile cases smp-ipi-storm(-at-once) measured: beside an IPI
    storm to a halting vCPU the victim keeps at least 80% of its
    throughput beside the same guest quiet."""
    both_modes(t, "IPI storm", "tguest=rates:storm")


@test("hv-victim-lvtt-masked", alone=WHY)
def hv_victim_lvtt_masked(t):
    """Beside a guest whose vCPUs halt under period-1 alarms wired to their
    masked LVT timers, on the victim's CPU, the victim keeps at least 80%
    of its throughput beside the same guest idle."""
    m = beside(t, "tguest=rates:lvtt smp_vcpus=2", "guest1.vcpus=2 guest1.cpus=1", victim_cpus=1)
    keeps(t, "masked LVTT alarms", m, baseline=IDLE)
    # Its busy phase shares the victim's CPU: about half each.  A vCPU
    # that slept while the victim ran alone (no pick, no exit) banks no
    # credit for it (sched.c, follow_min_vruntime): it does not keep the
    # CPU for as long as it slept.
    r = m.ratio(BUSY, IDLE)
    t.check(r >= 0.35, f"beside the neighbour busy on its CPU the victim kept {r:.3f} of its throughput "
            f"beside it idle, expected about half (loops per window {m.summary()})")


