"""Shadow paging after VMI activation (docs/MEMORY.md, "Shadow paging after activation"), and what the shared
page's fast paths buy.

The shadows (hv/mm/shadow_notify.c) follow the guest's AllocatePage / ReleasePage
/ SetPxE notifications, are cached per page directory and are freed when
the guest releases its tables.  These tests read the hypervisor's own
statistics (the serial escape Ctrl-] s) around real guest work:

  - hv-shadow-baseline: at the shell, run the sanity program (16 fork+exec,
    a pipe, 1024 mmap'ed pages with COW), and check that the shadow pages
    in use come back to the count before it, that the peak (restarted
    with Ctrl-] r just before) shows the processes had shadows of their own, and that the audit (every shadow
    entry recomputed from the guest's tables) finds no mismatch.
  - hv-ptstress: the same around guest/programs/ptstress.c, which maps,
    write-protects, copies on write, discards, moves and unmaps memory
    across several page tables in every round; its data checks fail if a
    shadow went stale.  native-ptstress runs it without the hypervisor.
  - hv-audit-ptstress, hv-audit-modes, hv-audit-selftest: the continuous
    audit (audit=, docs/HV.md): ptstress audited after every page-table
    notification, the other granularities on a boot, and a planted
    hypervisor bug (audit_selftest=) found, reported and the guest stopped.
  - hv-fastpaths-benchmark: the same boot twice in one run, with the ROM's
    shared-page fast paths (virtual IF, CR2, queued page-table updates) off
    and on; prints both boot times and hypercall counts side by side, and
    checks the count drops at least 3x (a count, not a time: the times are
    printed, not asserted).
"""

import os
import re

from vmitest import FATAL_PATTERNS, paths, test
from sysmap import SYSTEM_MAP, SystemMap
from guest_end import AUDIT
from hvstats import hv_statistics
from hvguest import (GUEST_REBOOT, GUEST_STOPPED_LINE, MARKER, NATIVE_REBOOT, PROMPT, SERIAL_CMDLINE,
                     boot_hv, hv_modules, reboot_ends_run, stays_responsive)

CMDLINE = SERIAL_CMDLINE


def shadow_stats(t, q):
    """Ctrl-] s while the guest runs: (pages in use, directories, peak,
    audit mismatches, audit line, exits, quiet exits)."""
    s = hv_statistics(q)
    m = s.search(r"vmi-hv: shadow pages in use: (\d+) \((\d+) page directories; peak (\d+)\)\n")
    a = s.search(AUDIT + r"([^\n]*)\n")
    t.check(int(a.group(3)) > 0, f"the audit checked nothing: {a.group(0).strip()}")
    q.send("\n")
    q.expect(PROMPT, timeout=60)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3)), int(a.group(4)),
            a.group(0).strip(), s.counters["exits"], s.hv_time["quiet"])


def around_program(t, command, done):
    """At the shell under the hypervisor: statistics, `command` (which
    must print the regex `done`), statistics again; checks the shadow
    pages come back to the baseline and both audits are clean."""
    q = boot_hv(t)
    q.expect(PROMPT, timeout=60)
    # Let the shell's start-up settle (init's helpers exit), then measure.
    q.send("sleep 1; echo settled\n")
    q.expect(r"\nsettled", timeout=60)
    q.expect(PROMPT, timeout=60)
    before, dirs_before, _, bad_before, audit_before, exits_before, quiet_before = shadow_stats(t, q)
    t.check(bad_before == 0, f"audit before the run: {audit_before}")
    # Restart the peak at the pages in use now: the boot's own peak is far
    # above the shell's baseline, so without this "peak > before" would
    # hold whatever the program did.
    q.send("\x1dr")
    m = q.expect(r"vmi-hv: peaks reset: shadow pages in use (\d+),[^\n]*\n", timeout=30)
    t.check(int(m.group(1)) == before, f"peak restarted at {m.group(1)}, pages in use {before}")
    q.send("\n")
    q.expect(PROMPT, timeout=60)

    q.send(f"{command}; echo program-rc=$?\n")
    out = q.expect(done, timeout=600)
    q.expect(r"program-rc=0", timeout=60)
    q.expect(PROMPT, timeout=60)
    after, dirs_after, peak, bad_after, audit_after, exits_after, quiet_after = shadow_stats(t, q)

    t.note(f"shadow pages in use: {before} before `{command}` ({dirs_before} directories), "
           f"{after} after ({dirs_after} directories), peak {peak}")
    t.note(audit_after)
    t.check(peak > before, f"the peak since the program started ({peak}) never rose above the "
                           f"baseline ({before}): the processes had no shadows of their own?")
    t.check(after == before, f"shadow pages in use {after} after the processes exited, baseline {before}")
    t.check(dirs_after == dirs_before, f"{dirs_after} shadow directories after, {dirs_before} before")
    t.check(bad_after == 0, f"audit after the run: {audit_after}")
    # Most exits (page faults, MMU calls) leave the run loop nothing to
    # poll or decide, so it enters the guest again at once (docs/HV.md,
    # "The run loop", quiet exits); the timer's shots and console I/O are the others.
    exits, quiet = exits_after - exits_before, quiet_after - quiet_before
    t.note(f"`{command}`: {exits} exits, {quiet} quiet ({100 * quiet / max(exits, 1):.0f}%)")
    t.check(quiet >= exits // 2, f"only {quiet} of {exits} exits quiet: the run loop polls after most exits")
    reboot_ends_run(t, q)
    return out


@test("hv-shadow-baseline")
def shadow_baseline(t):
    around_program(t, "/tests/sanity", r"SANITY result=PASS")


PTSTRESS = r"PTSTRESS rounds=(\d+) pages=(\d+) forks=(\d+) segv_ok=(\d+)\n"


@test("hv-ptstress")
def ptstress(t):
    m = around_program(t, "/tests/ptstress 8", PTSTRESS)
    t.note(m.group(0).strip())
    t.check(m.group(4) == "8" and m.group(3) == "32", f"ptstress: {m.group(0).strip()}")


@test("native-ptstress")
def native_ptstress(t):
    """The stress program itself, without the hypervisor: PASS."""
    t.require(paths.BZIMAGE, paths.INITRD)
    q = t.qemu("-m", "256", "-kernel", paths.BZIMAGE, "-initrd", paths.INITRD,
               "-append", CMDLINE + " vmitest=ptstress")
    m = q.expect(PTSTRESS, timeout=300)
    t.note(m.group(0).strip())
    q.expect(r"PTSTRESS result=PASS", timeout=60)
    q.expect(r"VMITEST-DONE name=ptstress rc=0", timeout=60)
    status = q.wait_exit(timeout=60)
    t.check(status == NATIVE_REBOOT, f"exit status {status}, expected {NATIVE_REBOOT} (the guest's reboot)")


def timed_boot(t, hv_args):
    """Boot to the init marker with vmitest=sanity; returns (seconds from
    QEMU start to the marker, hypercalls, exits) from the final statistics."""
    q = boot_hv(t, hv_args, CMDLINE + " vmitest=sanity")
    seconds = q.elapsed()
    q.expect(r"VMITEST-DONE name=sanity rc=0", timeout=300)
    m = q.expect(r"vmi-hv: counters: (\d+) exits, \d+ emulated instructions, \d+ hidden[^\n]*?"
                 r"(\d+) hypercalls", timeout=60)
    status = q.wait_exit(timeout=60)
    t.check(status == GUEST_REBOOT, f"exit status {status}, expected {GUEST_REBOOT} (guest reboot)")
    return seconds, int(m.group(2)), int(m.group(1))


@test("hv-fastpaths-benchmark", bench=True)
def fastpaths_benchmark(t):
    off_s, off_calls, off_exits = timed_boot(t, "fastpaths=off")
    on_s, on_calls, on_exits = timed_boot(t, "")
    t.note(f"boot + sanity run, fast paths off: marker at {off_s:.1f}s, {off_calls} hypercalls, "
           f"{off_exits} exits")
    t.note(f"boot + sanity run, fast paths on:  marker at {on_s:.1f}s, {on_calls} hypercalls, "
           f"{on_exits} exits ({off_calls / max(on_calls, 1):.2f}x fewer hypercalls, "
           f"time ratio {off_s / on_s:.2f})")
    t.check(on_calls * 3 < off_calls,
            f"the fast paths saved too little: {on_calls} hypercalls with, {off_calls} without")


# The continuous audit's counters in the Ctrl-] s statistics.
AUDIT_COUNTERS = (r"vmi-hv: continuous audit \(([^)]+)\): (\d+) audits, (\d+) entries checked, "
                  r"(\d+) mismatches, (\d+) entries not filled yet\n")


@test("hv-audit-ptstress")
def audit_ptstress(t):
    """ptstress with the shadows audited after every page-table
    notification (audit=every=1, each audit checking the tables that
    changed): no mismatch from boot to the end of the run."""
    q = boot_hv(t, "audit=every=1")
    q.expect(PROMPT, timeout=120)
    q.send("/tests/ptstress 8; echo program-rc=$?\n")
    m = q.expect(PTSTRESS, timeout=600)
    t.note(m.group(0).strip())
    q.expect(r"program-rc=0", timeout=60)
    q.expect(PROMPT, timeout=60)
    s = hv_statistics(q)
    c = s.search(AUDIT_COUNTERS)
    a = s.search(AUDIT + r"[^\n]*\n")
    t.note(c.group(0).strip())
    t.check(c.group(1) == "every=1", f"audit mode {c.group(1)}")
    t.check(int(c.group(2)) > 1000 and int(c.group(3)) > 0, f"the audit hardly ran: {c.group(0).strip()}")
    t.check(c.group(4) == "0", f"continuous audit: {c.group(0).strip()}")
    t.check(int(a.group(3)) > 0 and a.group(4) == "0", f"full audit: {a.group(0).strip()}")
    q.send("\n")
    q.expect(PROMPT, timeout=60)
    reboot_ends_run(t, q)


# The audit's report of a stale entry (shadow_describe in hv/mm/shadow_notify.c).
AUDIT_REPORT = (r"shadow audit at [a-z -]+: (PT|PD) 0x[0-9a-f]+ entry \d+ "
                r"\(linear [0-9a-f]{8}-[0-9a-f]{8}\): guest [0-9a-f]{8}, shadow [0-9a-f]{8}, "
                r"expected [0-9a-f]{8}; missed (SetPxE|SwapPxE|TestAndClearPxEBit); "
                r"last notified: [^;\n]+ at EIP [0-9a-f]{8}")


@test("hv-audit-selftest")
def audit_selftest(t):
    """A planted hypervisor bug (audit_selftest=: one queued page-table
    write, that matters, is never derived) is found by the audit, described
    (table, entry, linear range, guest and shadow entries, the missed
    notification, the last one made and where) and the guest stopped.
    Without the audit the boot goes on with a stale shadow, and this fails."""
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    module = hv_modules(CMDLINE)
    q = t.qemu("-m", "256", "-kernel", paths.HV_ELF, "-initrd", module,
               "-append", "audit=every=1 audit_selftest=2000", fatal=FATAL_PATTERNS)
    d = q.expect(r"vmi-hv: audit_selftest: dropped queued page-table write (\d+) [^\n]*\n", timeout=300)
    t.note(d.group(0).strip())
    m = q.expect(GUEST_STOPPED_LINE + r"\n", timeout=60)
    t.note(m.group(1))
    r = re.match(AUDIT_REPORT, m.group(1))
    t.check(r, f"guest stopped: {m.group(1)}; expected /{AUDIT_REPORT}/")
    t.check(MARKER not in q.output, "the guest reached its shell with a stale shadow")
    # The dropped write was queued by the ROM, which records the kernel's
    # call site with it: the report names that kind and a kernel function
    # (not merely where the guest happened to be at the drain).
    last = re.search(r"last notified: (\w+) \(queued\) at EIP ([0-9a-f]{8})", m.group(1))
    t.check(last, f"the last notification is not a queued write with its kind: {m.group(1)}")
    if os.path.exists(SYSTEM_MAP):
        where = SystemMap().symbol(int(last.group(2), 16))
        t.note(f"last notified: {last.group(1)} (queued) in {where}")
        t.check(where and re.search(r"pte|pmd", where),
                f"EIP {last.group(2)} ({where}) is not in a kernel function that writes page-table entries")
    stays_responsive(t, q)


@test("hv-audit-modes")
def audit_modes(t):
    """Boot and the sanity program under each other audit granularity
    (at every exit; at every CR3 load; every 64 notifications, logging
    instead of stopping): audits run, no mismatch, the guest ends normally."""
    for args in ("audit=exit", "audit=cr3", "audit=every=64 audit_action=log"):
        q = boot_hv(t, args, CMDLINE + " vmitest=sanity")
        q.expect(r"VMITEST-DONE name=sanity rc=0", timeout=300)
        c = q.expect(AUDIT_COUNTERS, timeout=60)
        t.note(f"{args}: {c.group(0).strip()}")
        t.check(int(c.group(2)) > 0 and int(c.group(3)) > 0, f"{args}: the audit hardly ran: {c.group(0).strip()}")
        t.check(c.group(4) == "0", f"{args}: {c.group(0).strip()}")
        t.check("shadow audit at" not in q.output, f"{args}: an audit logged a mismatch")
        status = q.wait_exit(timeout=60)
        t.check(status == GUEST_REBOOT, f"{args}: exit status {status}, expected {GUEST_REBOOT} (guest reboot)")
