"""The guest's idle halt is one VMI Halt (docs/GUEST.md, "What is hooked").

VMI Halt enables interrupts and halts in one step, as "sti; hlt" does
(docs/VROM.md, "Halt").  The guest's safe_halt must be that one call:
EnableInterrupts followed by Halt takes an interrupt that arrives between
the idle loop's last check and the halt before the Halt, which then
sleeps until the next interrupt (with NO_HZ possibly for good).

`guest-safe-halt-atomic` boots Linux under vmi-hv to the shell, lets it
idle, and reads the hypervisor's Halt counters: every Halt must come with
the virtual IF clear (safe_halt relying on Halt to enable it), none with
it set (the old EnableInterrupts + Halt pair), and the guest must still
answer a command.  The Halts that found an interrupt already pending, the
ones the old pair would have slept through, are noted.
"""

from vmitest import test
from hvguest import PROMPT, boot_hv, quiet_console
from hvstats import hv_statistics

HALTS = (r"vmi-hv: Halt calls: (\d+) with the virtual IF clear \(Halt enabled it\), (\d+) with it set; "
         r"(\d+) found an interrupt pending \(woken at once\)\n")


@test("guest-safe-halt-atomic")
def safe_halt_atomic(t):
    q = boot_hv(t)
    quiet_console(q)
    q.expect(PROMPT, timeout=60)
    # Idle with timers running: sleep wakes from a halted CPU.
    q.send("sleep 2; echo idle-done-$((6 * 7))\n")
    q.expect(r"idle-done-42", timeout=120)
    q.expect(PROMPT, timeout=60)
    m = hv_statistics(q).search(HALTS)
    clear, set_, pending = (int(x) for x in m.groups())
    t.check(clear > 0, f"no Halt with the virtual IF clear ({set_} with it set): safe_halt is not one Halt")
    t.check(set_ == 0, f"{set_} Halts with the virtual IF set: interrupts were enabled before the Halt")
    q.send("echo still-here-$((6 * 7))\n")
    q.expect(r"still-here-42", timeout=60)
    t.note(f"Halt calls: {clear} with the virtual IF clear, {set_} with it set; "
           f"{pending} found an interrupt pending (the old EnableInterrupts + Halt would have slept through them)")
