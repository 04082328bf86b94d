"""The shape-aware fuzzer of the paravirtual MMU (docs/HV.md, "Tests").

The test guest's `tguest=sfuzz:SEED sfuzz_calls=N` (tests/guests/
tguest_sfuzz.c) turns paging on, activates VMI so that the shadows serve,
announces its own page tables and directories and loads CR3, then makes N
calls of the right shape (SetPxE, SwapPxE, TestAndSet/ClearPxEBit and
GetPxE by hypercall and through the ROM's fast path, entries queued by
hand on the shared page and changed after queueing, AllocatePage of
tables and directories with clones, ReleasePage linked or not, SetCR3,
InvalPage, FlushTLB, accesses through the fuzzed region, descriptors of
each type in its GDT, LDT and IDT), checking what it can see itself:
the calls' results, and that each access faults exactly when its own
tables say.  Then one final action picked by the seed (seed % 12) that
may stop it by design, or Shutdown.

After each run: no hypervisor fault; a stop only for a reason that blames
the guest; the guest's own checks all passed; the end report's shadow
audit clean; the machine frames back to their count before the guest ran;
and, after a stop, the hypervisor answers `s` and `q`.  The figures
(calls, seeds, shadow operations reached by kind, invariant checks) are
printed as notes.

`make test` runs SFUZZ_RUNS runs of SFUZZ_CALLS VMI calls (more than 10^5
by the hypervisor's own count, its end report's "VMI calls" line);
`make fuzz` runs more: FUZZ_CALLS=, FUZZ_SEED=, FUZZ_RUNS= (environment
VMIHV_FUZZ_CALLS, VMIHV_FUZZ_SEED, VMIHV_FUZZ_RUNS).
"""

import os
import re
import time

from vmitest import accel_for, paths, smp_args, test
from testguest import tguest_modules
from hvguest import GUEST_FAULT_STOPS, ends_cleanly, stays_responsive
from guest_end import HV_BROKEN, STOP, check_invariants

# make test: one run per final action (seeds 1-12), at least 10^5 VMI calls
# in all by the hypervisor's own count (about 30 s under TCG).  About a
# fifth of the guest's calls go through the ROM's fast path, which queues
# them on the shared page without a call the hypervisor counts: 13,000 a
# run make about 10,400 counted.
SFUZZ_CALLS = 13000
SFUZZ_RUNS = 12
MIN_HV_CALLS = 10 ** 5
SFUZZ_SEED = 1
AUDIT_EVERY = 8
# The final actions, by seed % 12 (tguest_sfuzz.c, finals[]).
FINALS = 12
SHADOW_OPS = r"vmi-hv: shadow paging: (\d+ announced[^\n]*)"
VMI_CALLS = r"vmi-hv: VMI calls:([^\n]*)"
CONTINUOUS = r"vmi-hv: continuous audit \(every=\d+\): (\d+) audits, (\d+) entries checked, (\d+) mismatches"
DRAINED = r"vmi-hv: page-table updates without an exit: (\d+) queued entries drained at (\d+) exits"


def settings():
    env = os.environ
    return (int(env.get("VMIHV_FUZZ_SEED") or SFUZZ_SEED), int(env.get("VMIHV_FUZZ_RUNS") or SFUZZ_RUNS),
            int(env.get("VMIHV_FUZZ_CALLS") or SFUZZ_CALLS))


# On -smp 2 the hypervisor runs on both CPUs with MTTCG (docs/SMP.md,
# "More than one CPU"): the same runs there.
def sfuzz_one(t, seed, calls, smp=1):
    """One run; returns its figures."""
    # The continuous audit checks the shadows the calls touched every
    # AUDIT_EVERY notifications and stops the guest at the first stale
    # entry: a lost update is caught where it happens, before a later
    # call (a release, an announce) derives the table again and hides it.
    q = t.qemu(*smp_args(smp), "-m", "128", "-kernel", paths.HV_ELF, "-append",
               f"audit=every={AUDIT_EVERY}" + (" locks=check" if smp > 1 else ""),
               "-initrd", tguest_modules(t, f"tguest=sfuzz:{seed} sfuzz_calls={calls}"), fatal=HV_BROKEN,
               accel=accel_for(smp))
    q.expect(r"sfuzz: paging on, shadows active, shared page ffd02000", timeout=60)
    done = q.expect(r"sfuzz: done: ([^\n]*)\n|" + STOP + r"\n", timeout=calls / 500 + 60)
    t.check(done.group(0).startswith("sfuzz: done"), f"seed {seed}: stopped before the final phase: {done.group(0)}")
    figures = dict((k, int(v, 16)) for k, v in re.findall(r"(\w+)=([0-9a-f]+)", done.group(1)))
    t.check(not re.search(r"vmi-hv: guest stopped: shadow audit", q.output),
            f"seed {seed}: " + (re.findall(r"vmi-hv: guest stopped: shadow audit[^\n]*", q.output) or [""])[0])
    t.check(figures["failed"] == 0, f"seed {seed}: {figures['failed']} of the guest's own checks failed: "
            + "; ".join(re.findall(r"sfuzz: CHECK FAILED: ([^\n]*)", q.output)[:4]))
    t.check(figures["checks"] > 0, f"seed {seed}: the guest checked nothing: {done.group(1)}")
    m = q.expect(STOP + r"\n|vmi-hv: guest powered off: [^\n]*\n", timeout=60)
    stopped = m.group(1)
    q.expect(r"vmi-hv: machine frames free: \d+ after", timeout=30)
    if stopped is not None:
        t.check(any(re.match(ok, stopped) for ok in GUEST_FAULT_STOPS),
                f"seed {seed}: stopped for a reason not known to blame the guest: {stopped}")
        stays_responsive(t, q)
        how = "stopped: " + stopped[:90]
    else:
        ends_cleanly(t, q, f"seed {seed}", timeout=30)
        how = "shut down"
    final = re.search(r"sfuzz: final: (\S+)", q.output)
    inv = check_invariants(t, q.output, f"seed {seed}")
    # The end report's figures: the first after the fuzzer's summary.
    after = q.output[q.output.index("sfuzz: done:"):]
    ops = re.search(SHADOW_OPS, after)
    vmi = re.search(VMI_CALLS, after)
    drained = re.search(DRAINED, after)
    cont = re.search(CONTINUOUS, after)
    t.check(cont and cont.group(3) == "0", f"seed {seed}: continuous audit: {cont.group(0) if cont else 'no line'}")
    t.check(vmi, f"seed {seed}: no VMI calls line in the end report")
    hv_calls = sum(int(n) for n in re.findall(r"=(\d+)", vmi.group(1)))
    # The hypervisor saw at least every hypercall the guest says it made.
    t.check(hv_calls >= figures["hypercalls"],
            f"seed {seed}: the hypervisor counted {hv_calls} VMI calls, the guest made {figures['hypercalls']} hypercalls")
    return {"hv_calls": hv_calls, "seed": seed, "figures": figures, "how": how, "final": final.group(1) if final else "shutdown",
            "shadow": ops.group(1) if ops else "", "vmi": vmi.group(1).strip() if vmi else "",
            "drained": int(drained.group(1)) if drained else 0, "inv": inv,
            "continuous": (int(cont.group(1)), int(cont.group(2)))}


def run_fuzz(t, seed0, runs, calls, smp=1):
    total = made = checks = invariants = 0
    start = time.monotonic()
    for i in range(runs):
        r = sfuzz_one(t, seed0 + i, calls, smp)
        f = r["figures"]
        total += r["hv_calls"]
        made += f["hypercalls"] + f["rom"]
        checks += f["checks"]
        invariants += 3 + r["inv"]["audits"] + r["continuous"][0]
        t.note(f"seed {r['seed']}: {f['ops']} operations = {f['hypercalls']} hypercalls + {f['rom']} ROM "
               f"fast-path calls + {f['queued']} hand-queued entries ({f['changed_after_queue']} changed after "
               f"queueing, {r['drained']} drained by the hypervisor); {f['touches']} accesses ({f['faults']} "
               f"faults); {f['checks']} guest checks; final {r['final']}: {r['how']}")
        t.note(f"seed {r['seed']}: shadow operations: {r['shadow']}")
        t.note(f"seed {r['seed']}: VMI calls:{r['vmi']}")
        t.note(f"seed {r['seed']}: invariants: {r['continuous'][0]} continuous audits during the run "
               f"({r['continuous'][1]} entries), {r['inv']['audits']} end audits ({r['inv']['entries']} entries), all clean, "
               f"frames free {r['inv']['frames'][1]} after = {r['inv']['frames'][0]} before, no hypervisor fault")
        for k in ("announced", "released", "PTE writes", "PDE writes", "CR3 loads", "invlpg"):
            m = re.search(r"(\d+) " + k, r["shadow"])
            t.check(m and int(m.group(1)) > 0, f"seed {r['seed']}: the fuzz never reached shadow '{k}'")
    t.note(f"{total} VMI calls by the hypervisor's count ({made} made by the guest, some through the ROM's fast path) "
           f"in {runs} runs (seeds {seed0}-{seed0 + runs - 1}), {checks} guest checks, "
           f"{invariants} invariant checks, {time.monotonic() - start:.0f} s")
    return total


@test("hv-sfuzz-shadow")
def hv_sfuzz_shadow(t):
    """At least 10^5 shape-aware calls, by the hypervisor's own count,
    with paging on and the shadows active (12 seeds, each ending in
    another final action): no hypervisor fault, the guest's own checks
    (some, and all passed), a clean audit and the machine frames back
    after every run.  A shorter run asked for by make fuzz (FUZZ_RUNS=1,
    say) is held to its runs only."""
    seed, runs, calls = settings()
    total = run_fuzz(t, seed, runs, calls)
    if runs * calls >= SFUZZ_RUNS * SFUZZ_CALLS:
        t.check(total >= MIN_HV_CALLS, f"the hypervisor counted {total} VMI calls, expected at least {MIN_HV_CALLS}")


@test("hv-sfuzz-shadow-smp2", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def hv_sfuzz_shadow_smp2(t):
    """The same runs (other seeds) on -smp 2: the hypervisor on two CPUs,
    the fuzzing guest's exits handled on either."""
    seed, runs, calls = settings()
    total = run_fuzz(t, seed + 1000, runs, calls, smp=2)
    if runs * calls >= SFUZZ_RUNS * SFUZZ_CALLS:
        t.check(total >= MIN_HV_CALLS, f"the hypervisor counted {total} VMI calls, expected at least {MIN_HV_CALLS}")
