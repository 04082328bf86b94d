"""A victim beside an attacker keeps its throughput (docs/HV.md, "Rates a
guest controls"): tests/lib/victim.py measures the victim (tguest=victim)
in 100 ms windows while the attacker (tguest=rates:*) is idle, busy on a
CPU of its own, and attacking, in turn, in one run on -smp 2; the victim
must keep at least 80% of its throughput beside the quiet neighbour.

  hv-victim-lvtt-masked   every vCPU's LVT timer masked under periodic
                          alarms of period 1 cycle: none may cost a timer
                          interrupt (valarm.c, latched()); the attacker's
                          vCPUs and the victim share CPU 1 (guestN.cpus=1),
                          as a guest's many vCPUs end up sharing every CPU
"""

from vmitest import test
from victim import IDLE, beside, keeps

WHY = "QEMU on -smp 2 with MTTCG: both host CPUs, and a throughput measured"


@test("hv-victim-lvtt-masked", alone=WHY)
def hv_victim_lvtt_masked(t):
    """Beside a guest whose vCPUs halt under period-1 alarms wired to their
    masked LVT timers, on the victim's CPU, the victim keeps at least 80%
    of its throughput beside the same guest idle."""
    m = beside(t, "tguest=rates:lvtt smp_vcpus=2", "guest1.vcpus=2 guest1.cpus=1", victim_cpus=1)
    keeps(t, "masked LVTT alarms", m, baseline=IDLE)
