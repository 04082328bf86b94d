"""Finding a guest kernel that writes a page table without telling the
hypervisor (docs/MEMORY.md, "Shadow paging after activation"; docs/MEMORY.md, "Strict mode").

The planted bug is guest patch 0020's `vmi_selftest=unannounced-pte`:
vmi_selftest_unannounced_pte() clears a vmalloc page's PTE with a plain
store, then makes an ordinary SetPxE to the next PTE of the same table.

  - hv-unannounced-pte-caught: with `strict_pt=on` the store itself
    faults and the guest is stopped with the EIP, the table, the entry
    and old -> new; with `audit=every=1` the audit after the SetPxE finds
    the stale entry at the linear address the guest printed.  Both boots
    get the kernel's System.map as a third module, and the hypervisor
    names both EIPs vmi_selftest_unannounced_pte+OFF, as the host's own
    lookup does.  Without either the guest goes on (the bug is invisible),
    which this test also checks.
  - hv-strict-ptstress: `strict_pt=on` with the audit on: the boot, the
    sanity program and ptstress run without a single direct write being
    reported, and the audit finds no mismatch (no false alarm from Linux's
    own page-table handling).  Strict mode covers page directories too
    (docs/MEMORY.md, "Shadow paging after activation"): no directory is written behind the hypervisor's
    back, announced twice, or announced as a clone before its copy.  The
    series before that fix failed here at boot, both ways:
    sync_initial_page_table() wrote initial_page_table with a memcpy, and
    pgd_alloc() announced a new directory before pgd_ctor() copied it.
"""

import re

from vmitest import FATAL_PATTERNS, paths, test
from hvguest import (GUEST_STOPPED_LINE, MARKER, PROMPT, SERIAL_CMDLINE, hv_modules, reboot_ends_run,
                     stays_responsive)
from sysmap import SYSTEM_MAP, SystemMap
from guest_end import AUDIT as AUDIT_LINE
from hvstats import hv_statistics

SELFTEST = "unannounced-pte"
WRITER = "vmi_selftest_unannounced_pte"
PLANTED = r"vmi_selftest: unannounced-pte: clearing the PTE of ([0-9a-f]{8}) directly"
# The reports (hv/vcpu/mmu/vcpu_mmu.c strict_write; hv/mm/shadow_notify.c shadow_describe).
STRICT = (r"strict_pt: direct write to page table 0x[0-9a-f]+ entry (\d+) \(linear ([0-9a-f]{8})\) "
          r"at EIP ([0-9a-f]{8}) \(([^)]+)\): ([0-9a-f]{8}) -> ([0-9a-f]{8})")
AUDIT = (r"shadow audit at [a-z -]+: PT 0x[0-9a-f]+ entry \d+ \(linear ([0-9a-f]{8})-[0-9a-f]{8}\): "
         r"guest 00000000, shadow [0-9a-f]{8}, expected 00000000; missed SwapPxE; "
         r"last notified: \w+(?: \(queued\))? at EIP ([0-9a-f]{8}) \(([^)]+)\)")


def boot(t, hv_args, guest_args="", fatal=FATAL_PATTERNS, sysmap=False):
    """The guest under vmi-hv; with sysmap, System.map as a third module
    (the hypervisor then names guest EIPs in its reports)."""
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    cmdline = f"{SERIAL_CMDLINE} {guest_args}".strip()
    module = hv_modules(cmdline)
    if sysmap:
        module += f",{SYSTEM_MAP}"
    args = ["-m", "256", "-kernel", paths.HV_ELF, "-initrd", module]
    return t.qemu(*args, "-append", hv_args, fatal=fatal) if hv_args else t.qemu(*args, fatal=fatal)


def in_writer(t, symbols, eip, named, what, writers=(WRITER,)):
    """The hypervisor named EIP as `named` from the System.map module: the
    planted writer (or one of `writers`), as the host's own lookup says too."""
    where = symbols.symbol(int(eip, 16))
    t.note(f"{what}: EIP {eip} is {where}; the hypervisor says {named}")
    t.check(where and where.startswith(tuple(w + "+" for w in writers)),
            f"{what}: EIP {eip} is {where}, not in {' or '.join(writers)}")
    t.check(named == where, f"{what}: the hypervisor names EIP {eip} {named}, System.map says {where}")


def planted_and_stopped(t, hv_args):
    """Boot with the planted unannounced write: (qemu, the PTE value the
    guest cleared, why the hypervisor stopped it)."""
    q = boot(t, hv_args, f"vmi_selftest={SELFTEST}", sysmap=True)
    planted = q.expect(PLANTED, timeout=300).group(1)
    why = q.expect(GUEST_STOPPED_LINE + r"\n", timeout=60).group(1)
    t.note(f"{hv_args}: {why}")
    return q, planted, why


@test("hv-unannounced-pte-caught")
def unannounced_pte_caught(t):
    t.require(SYSTEM_MAP)
    symbols = SystemMap()

    q, planted, why = planted_and_stopped(t, "strict_pt=on")
    s = re.match(STRICT, why)
    t.check(s, f"strict_pt=on: guest stopped: {why}; expected /{STRICT}/")
    t.check(s.group(6) == "00000000" and s.group(5) != "00000000",
            f"strict_pt=on: the entry written is {s.group(5)} -> {s.group(6)}, not a present PTE cleared")
    in_writer(t, symbols, s.group(3), s.group(4), "strict_pt=on")
    stays_responsive(t, q)

    q, planted, why = planted_and_stopped(t, "audit=every=1")
    a = re.match(AUDIT, why)
    t.check(a, f"audit=every=1: guest stopped: {why}; expected /{AUDIT}/")
    t.check(a.group(1) == planted, f"audit=every=1: the stale entry maps {a.group(1)}, the guest cleared {planted}")
    # The audit runs at each notification as the hypervisor sees it: the
    # ROM queues SetPxE without an exit, so a write vmalloc queued for the
    # same table before the planted store (set_pte, out of line) may be
    # drained, and audited, only after it when no exit came between; the
    # first audit to see the stale entry is then that one's.  Both are the
    # kernel's page-table writers; the entry and the naming are what count.
    in_writer(t, symbols, a.group(2), a.group(3), "audit=every=1", writers=(WRITER, "set_pte"))
    stays_responsive(t, q)

    # Neither checker: the hypervisor cannot see the bug, the guest goes on.
    q = boot(t, "", f"vmi_selftest={SELFTEST}")
    q.expect(PLANTED, timeout=300)
    q.expect(r"vmi_selftest: unannounced-pte: the hypervisor let the guest go on", timeout=60)
    q.kill()


@test("hv-strict-ptstress")
def strict_ptstress(t):
    q = boot(t, "strict_pt=on audit=every=1", fatal=[*FATAL_PATTERNS, GUEST_STOPPED_LINE])
    m = q.expect(MARKER, timeout=300)
    t.check(m.group(3) == "vmi", f"guest reports mode {m.group(3)}")
    q.expect(PROMPT, timeout=120)
    q.send("/tests/sanity > /dev/null; /tests/ptstress 4; echo program-rc=$?\n")
    m = q.expect(r"PTSTRESS rounds=(\d+) pages=(\d+) forks=(\d+) segv_ok=(\d+)\n", timeout=600)
    t.note(m.group(0).strip())
    q.expect(r"program-rc=0", timeout=60)
    q.expect(PROMPT, timeout=60)
    stats = hv_statistics(q)
    s = stats.search(r"vmi-hv: strict_pt: announced page tables read-only; (\d+) writable entries "
                     r"made read-only at AllocatePage\n")
    c = stats.search(r"vmi-hv: continuous audit \(every=1\): (\d+) audits, \d+ entries checked, (\d+) mismatches")
    a = stats.search(AUDIT_LINE + r"[^\n]*\n")
    t.note(s.group(0).strip())
    t.note(c.group(0).strip())
    t.check(int(c.group(1)) > 1000 and c.group(2) == "0", f"continuous audit: {c.group(0).strip()}")
    t.check(int(a.group(3)) > 0 and a.group(4) == "0", f"full audit: {a.group(0).strip()}")
    q.send("\n")
    q.expect(PROMPT, timeout=60)
    reboot_ends_run(t, q)
