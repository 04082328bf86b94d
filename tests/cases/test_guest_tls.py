"""A kernel thread leaves the TLS entries in the GDT alone under VMI
(guest patch 27, docs/GUEST.md "What is hooked"): load_TLS() at a
context switch writes each GDT entry that differs through WriteGDTEntry,
an exit, and a kernel thread (the idle task too) has empty entries, so a
kernel that loads them for it clears and rewrites the user task's entry
on every round trip through it.

`hv-linux-tls-idle`: at the guest's shell under the hypervisor,
/tests/tlsidle (guest/programs/tlsidle.c) sleeps 200 times for 2 ms,
each time leaving the CPU to the idle task, and checks its thread-local
variable after each sleep.  The hypervisor's WriteGDTEntry count (Ctrl-]
s, before and after) grows by fewer than one per five sleeps (the fork,
exec and exit of the program write a few), and the variable held."""

from vmitest import test
from hvguest import GUEST_BROKEN as FATAL, PROMPT, boot_hv, quiet_console
from hvstats import hv_statistics

SLEEPS = 200


def gdt_writes(q):
    """The hypervisor's WriteGDTEntry count so far (Ctrl-] s)."""
    calls = hv_statistics(q).vmi_calls
    q.send("\n")
    q.expect(PROMPT, timeout=60)
    return calls.get("WriteGDTEntry", 0)


@test("hv-linux-tls-idle")
def linux_tls_idle(t):
    q = boot_hv(t, fatal=FATAL)
    q.expect(PROMPT, timeout=60)
    quiet_console(q)
    before = gdt_writes(q)
    q.send("/tests/tlsidle\n")
    m = q.expect(r"TLSIDLE sleeps=(\d+) rc=(\d+)", timeout=120)
    q.expect(PROMPT, timeout=60)
    after = gdt_writes(q)
    writes = after - before
    t.note(f"{m.group(1)} sleeps, thread-local variable {'held' if m.group(2) == '0' else 'LOST'}; "
           f"{writes} WriteGDTEntry calls in all")
    t.check(m.group(2) == "0" and int(m.group(1)) == SLEEPS,
            f"the thread-local variable changed across a sleep (sleeps={m.group(1)} rc={m.group(2)})")
    t.check(writes * 5 < SLEEPS,
            f"{writes} WriteGDTEntry calls for {SLEEPS} sleeps: the TLS entries are written for the idle task")
