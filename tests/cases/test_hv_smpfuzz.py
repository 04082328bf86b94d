"""The SMP fuzzer of the guest-facing surface (docs/HV.md, "Tests").

The test guest's `tguest=smpfuzz:SEED smp_vcpus=N smpfuzz_calls=C`
(tests/guests/tguest_smpfuzz*.c) runs N vCPUs (2-4) of one guest on -smp 2
(MTTCG, the hypervisor's locks=check on, the continuous shadow audit on):
SetInitialAPState of good states and of states refused at every check,
again and again; APICRead/APICWrite of every register with every class of
value, IPIs of every vector, delivery mode, shorthand and destination;
SetAlarm/CancelAlarm in every wiring (IRQ0, LVTT, REAL and AVAILABLE,
periodic and one-shot, tiny to 2^64-1 periods); Halt; interrupts masked
and unmasked; all interleaved with the shadow fuzzer's MMU calls, each vCPU
on tables of its own that link the others'.  Each vCPU's choices come from
the seed and its index; their interleaving is the host's.  The guest checks
the answers it can predict (the vLAPIC's rules, refusals, read-backs,
GetInterruptMask, REAL monotonic, the MMU calls' old values, faults where
its tables say); it prints each vCPU's figures and "smpfuzz: calls N".

Asserted after each run: the marker with at least C calls, none of the
guest's checks failed, every vCPU started, no hypervisor fatal line
(vmitest.HV_FATAL_PATTERNS), no stop at all (the guest powers off), the
audits clean and the machine frames back.  hv-smpfuzz-rules runs end in a
rule break instead (smpfuzz_final=K), and the stop must be that one;
hv-smpfuzz-reboot ends each epoch with Reboot (the last with Shutdown)
called by a vCPU the seed picks while the others run; the test types the
epoch at each start (the guest's seed for it) and counts the restarts.

Until the refused start's alarm device keeps its APIC (a refused
SetInitialAPState, then an LVTT alarm on that vCPU, faults the hypervisor
today) the runs pass smpfuzz_skip=lvtt-after-load-refusal: SKIP below.

`make test` runs a short round; `make fuzz` a long one: FUZZ_SMP=0 leaves
it out, FUZZ_SMP_CALLS, FUZZ_SMP_RUNS, FUZZ_SMP_VCPUS (0: 2-4 by seed),
FUZZ_SMP_EPOCHS (reboot epochs), FUZZ_SEED (environment VMIHV_SMPFUZZ_CALLS,
VMIHV_SMPFUZZ_RUNS, VMIHV_SMPFUZZ_VCPUS, VMIHV_SMPFUZZ_EPOCHS,
VMIHV_FUZZ_SEED; VMIHV_SMPFUZZ_SKIP= overrides SKIP, "none" for no skip).
"""

import os
import re
import time

from vmitest import MTTCG, TestFailure, TestSkipped, accel_for, paths, smp_args, test
from testguest import tguest_modules
from hvguest import ends_cleanly, stays_responsive
from hvstats import hv_statistics
from guest_end import HV_BROKEN, STOP, check_invariants, ends_powered_off

# make test: three runs (2, 3 and 4 vCPUs) of 60,000 calls, about 6 s each
# under MTTCG on two idle host CPUs, boots included.
SMPFUZZ_CALLS = 60000
SMPFUZZ_RUNS = 3
SMPFUZZ_SEED = 1
AUDIT_EVERY = 16
SKIP = ""
# Reboot epochs in make test: 3 (make fuzz asks for 8, FUZZ_SMP_EPOCHS).
SMPFUZZ_EPOCHS = 3
VCPU_LINE = r"smpfuzz: vcpu (\d)( \(never started\))?:((?: \w+=[0-9a-f]+)+)\n"
MARKER = r"smpfuzz: calls ([0-9a-f]{8})\n"
VMI_CALLS = r"vmi-hv: VMI calls:([^\n]*)"
# smpfuzz_final=K (tguest_smpfuzz_run.c, finals[]): the stop each must earn.
FINALS = {
    1: ("alarm-stolen", r"SetAlarm: counter is not REAL or AVAILABLE \(flags 10002\)"),
    2: ("alarm-flags", r"SetAlarm: unknown flag bits \(flags 80010000\)"),
    3: ("alarm-irq0-on-ap", r"SetAlarm: wired to IRQ0 on a vCPU other than 0 [^\n]*\(flags 0\)"),
    4: ("alarm-period-0", r"SetAlarm: periodic with period 0 \(flags 10100\)"),
    5: ("cancel-flags", r"CancelAlarm: bad flags \(flags 100\)"),
    6: ("counter-unknown", r"GetCycleCounter: unknown counter 3"),
    7: ("call-out-of-range", r"unimplemented VMI call 4660 \(out of range\)"),
    8: ("hlt-if-off", None),     # vCPU 0's hlt with interrupts off: a power-off
}
FINALS_PER_TEST = 2


def settings():
    env = os.environ
    skip = env.get("VMIHV_SMPFUZZ_SKIP", SKIP)
    return {"seed": int(env.get("VMIHV_FUZZ_SEED") or SMPFUZZ_SEED),
            "runs": int(env.get("VMIHV_SMPFUZZ_RUNS") or SMPFUZZ_RUNS),
            "calls": int(env.get("VMIHV_SMPFUZZ_CALLS") or SMPFUZZ_CALLS),
            "vcpus": int(env.get("VMIHV_SMPFUZZ_VCPUS") or 0),
            "skip": "" if skip in ("", "none") else skip,
            "epochs": int(env.get("VMIHV_SMPFUZZ_EPOCHS", SMPFUZZ_EPOCHS) or 0)}


def vcpus_for(s, seed):
    return s["vcpus"] or 2 + seed % 3


def boot(t, s, seed, calls, vcpus, extra="", debug_exit=True):
    skip = f" smpfuzz_skip={s['skip']}" if s["skip"] else ""
    return t.qemu("-smp", "2", "-m", "128", "-kernel", paths.HV_ELF, "-append",
                  f"vcpus={vcpus} locks=check audit=every={AUDIT_EVERY}", "-initrd",
                  tguest_modules(t, f"tguest=smpfuzz:{seed} smpfuzz_calls={calls} smp_vcpus={vcpus}{skip}{extra}"),
                  fatal=HV_BROKEN, accel=MTTCG, debug_exit=debug_exit)


def marker(t, q, what, calls, vcpus):
    """Up to the marker: each vCPU's figures, checked; returns them."""
    m = q.expect(MARKER + "|" + STOP + r"\n", timeout=calls / 1000 + 120)
    t.check(m.group(1) is not None, f"{what}: stopped before the end: {m.group(0)}")
    text = q.output[:m.end()]
    lines = re.findall(VCPU_LINE, text)[-vcpus:]
    figs = [dict((k, int(v, 16)) for k, v in re.findall(r"(\w+)=([0-9a-f]+)", f)) for _, _, f in lines]
    failed = re.findall(r"smpfuzz: CHECK FAILED: ([^\n]*)", text)
    t.check(not failed, f"{what}: {len(failed)} of the guest's own checks failed: " + "; ".join(failed[:4]))
    t.check(len(figs) == vcpus, f"{what}: {len(figs)} vCPU figure lines, expected {vcpus}")
    t.check(not any(never for _, never, _ in lines), f"{what}: a vCPU never started: {lines}")
    total = int(m.group(1), 16)
    t.check(total >= calls, f"{what}: {total} calls, expected at least {calls}")
    for k in ("irqs", "alarms", "ipis", "refused", "checks"):
        t.check(sum(f.get(k, 0) for f in figs) > 0, f"{what}: no vCPU reached '{k}'")
    return total, figs


def hv_calls(text):
    m = re.findall(VMI_CALLS, text)
    return sum(int(n) for n in re.findall(r"=(\d+)", m[-1])) if m else 0


def smpfuzz_one(t, s, seed, calls):
    vcpus = vcpus_for(s, seed)
    what = f"seed {seed} ({vcpus} vCPUs)"
    q = boot(t, s, seed, calls, vcpus)
    q.expect(r"smpfuzz: paging on, shadows active", timeout=60)
    total, figs = marker(t, q, what, calls, vcpus)
    m = q.expect(STOP + r"\n|vmi-hv: guest powered off: ([^\n]*)\n", timeout=60)
    t.check(m.group(1) is None, f"{what}: stopped: {m.group(1)}")
    t.check(m.group(2) == "the guest called Shutdown", f"{what}: powered off: {m.group(2)}")
    q.expect(r"vmi-hv: machine frames free: \d+ after", timeout=30)
    inv = ends_powered_off(t, q, what, timeout=30)
    # The end report's counters are those of the vCPU that ended the
    # guest (vCPU 0 here), which made at least its own hypercalls.
    counted = hv_calls(q.output)
    t.check(counted >= figs[0]["hypercalls"],
            f"{what}: the hypervisor counted {counted} VMI calls of vCPU 0, it made {figs[0]['hypercalls']} hypercalls")
    t.note(f"{what}: {total} calls ({counted} of vCPU 0's counted by the hypervisor); per vCPU: " + "; ".join(
        f"{i}: {f['ops']} ops, {f['irqs']} irqs, {f['ipis']} IPIs, {f['alarms']} alarms, {f['halts']} halts, "
        f"{f['starts']} starts, {f['refused']} refused, {f['touches']} touches" for i, f in enumerate(figs)))
    t.note(f"{what}: {inv['audits']} end audits clean, frames free {inv['frames'][1]} after = {inv['frames'][0]} before")
    return total


@test("hv-smpfuzz", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def hv_smpfuzz(t):
    """SMPFUZZ_RUNS runs of SMPFUZZ_CALLS calls (2, 3, 4 vCPUs by seed):
    the marker, no failed guest check, no stop, no hypervisor fault."""
    s = settings()
    start, total = time.monotonic(), 0
    for i in range(s["runs"]):
        total += smpfuzz_one(t, s, s["seed"] + i, s["calls"])
    t.note(f"{total} calls in {s['runs']} runs (seeds {s['seed']}-{s['seed'] + s['runs'] - 1}), "
           f"{time.monotonic() - start:.0f} s; skipped: {s['skip'] or 'nothing'}")


@test("hv-smpfuzz-rules", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def hv_smpfuzz_rules(t):
    """Runs that end in a rule break, the hypervisor's stop that one (or,
    for vCPU 0's hlt with interrupts off, a power-off); make test takes
    FINALS_PER_TEST of them by seed, make fuzz (FUZZ_SMP_RUNS > 3) all."""
    s = settings()
    calls = min(s["calls"], 10000)
    ks = sorted(FINALS) if s["runs"] > SMPFUZZ_RUNS else \
        [1 + (s["seed"] + i) % len(FINALS) for i in range(FINALS_PER_TEST)]
    for k in ks:
        name, reason = FINALS[k]
        seed = s["seed"] + 100 + k
        vcpus = vcpus_for(s, seed)
        what = f"final {name} (seed {seed}, {vcpus} vCPUs)"
        q = boot(t, s, seed, calls, vcpus, f" smpfuzz_final={k}")
        marker(t, q, what, calls, vcpus)
        q.expect(r"smpfuzz: final: " + name, timeout=30)
        if reason is None:
            m = q.expect(r"vmi-hv: guest powered off: ([^\n]*)\n|" + STOP, timeout=60)
            t.check(m.group(1) and m.group(1).startswith("hlt with interrupts off at 0011:"),
                    f"{what}: {m.group(0)}")
            ends_cleanly(t, q, what)
        else:
            m = q.expect(STOP + r"\n", timeout=60)
            t.check(re.match(reason, m.group(1)), f"{what}: stopped for '{m.group(1)}', expected /{reason}/")
            # The stop names the vCPU that broke the rule: vCPU 1 for the
            # IRQ0 alarm (an AP's call), vCPU 0 for the others.
            by = q.expect(r"vmi-hv: (?:instruction )?at guest eip [0-9a-f]{4}:[0-9a-f]{8} \(vCPU (\d+)\)",
                          timeout=30).group(1)
            t.check(by == ("1" if k == 3 else "0"), f"{what}: the stop names vCPU {by}")
            stays_responsive(t, q)
        check_invariants(t, q.output, what)
        t.note(f"{what}: {m.group(0).strip()}")


@test("hv-smpfuzz-reboot", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def hv_smpfuzz_reboot(t):
    """Epochs of fuzzing, each ended by a vCPU the seed picks calling
    Reboot (the last, Shutdown) while the others run; the hypervisor
    restarts the guest (no isa-debug-exit here, as on a real machine),
    the test types each epoch's number; the last power-off ends QEMU."""
    s = settings()
    epochs = s["epochs"]
    if not epochs:
        raise TestSkipped("no reboot epochs asked for (VMIHV_SMPFUZZ_EPOCHS, make fuzz's FUZZ_SMP_EPOCHS): "
                          "a vCPU lost after a reboot on several CPUs makes them fail now and then")
    calls = min(s["calls"], 20000)
    seed = s["seed"] + 200
    vcpus = vcpus_for(s, seed)
    q = boot(t, s, seed, calls, vcpus, f" smpfuzz_epochs={epochs}", debug_exit=False)
    ends = []
    for e in range(epochs):
        what = f"seed {seed} epoch {e} ({vcpus} vCPUs)"
        q.expect(r"smpfuzz: epoch\?", timeout=120)
        q.send(f"{e}\r")
        try:
            q.expect(r"smpfuzz: seed [0-9a-f]+ epoch %08x" % e, timeout=30)
        except TestFailure as err:
            t.check(False, f"{what}: the guest never got its epoch, typed on the console: {err}")
        # The end may come before the calls are made: only a marker is asked.
        m = q.expect(r"smpfuzz: calls ([0-9a-f]{8})\n|" + STOP + r"\n", timeout=calls / 1000 + 120)
        t.check(m.group(1) is not None, f"{what}: stopped: {m.group(0)}")
        how = q.expect(r"smpfuzz: epoch ends: (Reboot|Shutdown) from vcpu (\d)", timeout=30)
        t.check(how.group(1) == ("Shutdown" if e == epochs - 1 else "Reboot"), f"{what}: {how.group(0)}")
        ends.append(f"{how.group(1)} from vCPU {how.group(2)} after {int(m.group(1), 16)} calls")
        if how.group(1) == "Reboot":
            q.expect(r"vmi-hv: guest reboot: the guest called Reboot", timeout=60)
            q.expect(r"vmi-hv: guest guest1 starts again from its modules \(reboot %d\)" % (e + 1), timeout=60)
    q.expect(r"vmi-hv: guest powered off: the guest called Shutdown", timeout=60)
    t.check(q.wait_exit(timeout=60) == 0, "QEMU did not end with the power-off")
    t.check(not re.search(STOP, q.output), "a stop: " + (re.findall(STOP, q.output) or [""])[0])
    failed = re.findall(r"smpfuzz: CHECK FAILED: ([^\n]*)", q.output)
    t.check(not failed, f"{len(failed)} of the guest's own checks failed: " + "; ".join(failed[:4]))
    check_invariants(t, q.output, f"seed {seed}")
    t.note(f"seed {seed}, {vcpus} vCPUs, {epochs} epochs: " + "; ".join(ends))


def alarm_wrap(t, smp):
    q = t.qemu(*smp_args(smp), "-m", "128", "-kernel", paths.HV_ELF,
               "-append", "locks=check", "-initrd", tguest_modules(t, "tguest=alarmwrap"),
               fatal=HV_BROKEN, accel=accel_for(smp))
    q.expect(r"vmi-hv: guest activated VMI", timeout=60)
    try:
        ticks = int(q.expect(r"alarmwrap: ticks ([0-9a-f]{8})\n", timeout=30).group(1), 16)
    except TestFailure:
        # Interrupted at every entry, the guest never gets to print: the
        # statistics say how often the alarm fired meanwhile.
        calls = hv_statistics(q, timeout=30).search(VMI_CALLS)
        t.check(False, f"the guest made no progress in 30 s after arming a periodic alarm of period 2^64-1 "
                       f"(its ticks taken at every entry); VMI calls:{calls.group(1)}")
    masked = int(q.expect(r"alarmwrap: ticks while masked ([0-9a-f]{8})\n", timeout=60).group(1), 16)
    fired = int(q.expect(r"vmi-hv: virtual interrupts: \d+ delivered, (\d+) alarms fired", timeout=60).group(1))
    ends_cleanly(t, q, f"alarm wrap on -smp {smp}", timeout=30)
    t.check(ticks == 1, f"a periodic alarm of period 2^64-1 gave {ticks} ticks in 100 ms, expected 1")
    t.check(masked == 0, f"{masked} ticks while LVTT was masked")
    # The masked one never fires: a masked LVT timer holds its alarm back
    # until it is unmasked (valarm.c, latched()), and it stays masked.
    t.check(fired == 1, f"the hypervisor fired the two alarms {fired} times, expected once (the unmasked one)")
    t.note(f"-smp {smp}: {ticks} tick, {masked} masked, {fired} alarms fired")


@test("hv-alarm-period-wrap")
def hv_alarm_period_wrap(t):
    """A periodic alarm whose next expiry would pass 2^64 cycles (period
    2^64-1) fires once, then never: not at every entry, as a wrapped sum
    makes it, with the LVT timer unmasked (ticks the guest counts) or
    masked (expiries the hypervisor counts)."""
    alarm_wrap(t, 1)


@test("hv-alarm-period-wrap-smp2", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def hv_alarm_period_wrap_smp2(t):
    """The same on -smp 2."""
    alarm_wrap(t, 2)
