"""The QEMU window works like a console (README.md, "Where to type").

The hypervisor drives the PS/2 keyboard (hv/drivers/kbd.c, IRQ 1): what is typed
in the window is console input like COM1's, so it reaches the guest's shell
through the virtual UART and Ctrl-] s/q work from it.  The keys are typed
with QEMU's monitor (`sendkey`), the screen read back as test_hv_vga.py does.
A machine without an i8042 (QEMU `-machine pc,i8042=off`) has no keyboard:
the hypervisor says so once and the serial console works alone.  The guest
never reaches the real controller: its port 0x60 reads 0xff and 0x64 reads
0x01 (hv/vcpu/exit/vcpu_io.c says why), so the guest's i8042 driver finds no
controller, quietly.
"""

import re

from vmitest import TestFailure, paths, test
from hvguest import GUEST_FATAL, MARKER, PROMPT, SERIAL_CMDLINE, hv_modules, quiet_console
from hvstats import hv_statistics, read_statistics
from vgascreen import save_screen, show

KBD_READY = r"vmi-hv: PS/2 keyboard on IRQ 1 \(US layout\)"
NO_KBD = r"vmi-hv: no PS/2 keyboard \([^\n]*\): console input on the serial port only"

# sendkey names (QEMU's qcode names) for the characters the tests type.
KEY_NAMES = {" ": "spc", "\n": "ret", "-": "minus", "=": "equal", ".": "dot",
             "/": "slash", ",": "comma", ";": "semicolon", "'": "apostrophe",
             "$": "shift-4", "(": "shift-9", ")": "shift-0", "*": "shift-8",
             "+": "shift-equal", "_": "shift-minus", "|": "shift-backslash",
             '"': "shift-apostrophe"}


def key_name(ch):
    if ch in KEY_NAMES:
        return KEY_NAMES[ch]
    if ch.isdigit() or ch.islower():
        return ch
    if ch.isupper():
        return "shift-" + ch.lower()
    raise ValueError(f"no sendkey name for {ch!r}")


def type_keys(q, text):
    """Type text on the emulated PS/2 keyboard, one sendkey per character."""
    for ch in text:
        sendkey(q, key_name(ch))


def sendkey(q, keys):
    out = q.monitor_command(f"sendkey {keys}").strip()
    if out:
        raise TestFailure(f"sendkey {keys}: the monitor said {out!r}")


@test("hv-keyboard-iso")
def keyboard_iso(t):
    """The ISO's default entry (GRUB, vmi-hv, Linux) with no serial input at
    all until the end: a command typed with sendkey at the shell (Shift for
    $ ( ) *, a Backspace) runs, and its output is on the VGA screen and in
    the serial log; the up arrow (ESC [ A) and Enter run it again from the
    shell's history; Ctrl-] then s typed on the keyboard prints the
    statistics and the 's' does not reach the shell; then a command typed
    on the serial console in the same session works too."""
    t.require(paths.ISO)
    q = t.qemu("-m", "256", "-cdrom", paths.ISO, fatal=GUEST_FATAL, monitor=True)
    q.expect(KBD_READY, timeout=120)
    m = q.expect(MARKER, timeout=300)
    t.check(m.group(3) == "vmi", f"guest reports mode {m.group(3)}")
    q.expect(PROMPT, timeout=60)
    quiet_console(q)
    # A fresh prompt, in case the kernel's message came after the first.
    sendkey(q, "ret")
    q.expect(PROMPT, timeout=60)

    # "x" then Backspace: the shell must get DEL (or BS) and erase it.
    type_keys(q, "echo kbd-$((6*7))-okx")
    sendkey(q, "backspace")
    type_keys(q, "\n")
    q.expect(r"\nkbd-42-ok\n", timeout=60)
    q.expect(PROMPT, timeout=60)
    screen = save_screen(t, q, "typed")
    t.check(any(s.endswith("# echo kbd-$((6*7))-ok") for s in screen),
            "the command typed on the keyboard is not on the VGA screen:\n" + show(screen))
    t.check("kbd-42-ok" in screen,
            "its output kbd-42-ok is not a row of the VGA screen:\n" + show(screen))

    # The up arrow brings the command back from the shell's history.
    sendkey(q, "up")
    type_keys(q, "\n")
    q.expect(r"\nkbd-42-ok\n", timeout=60)
    q.expect(PROMPT, timeout=60)
    screen = save_screen(t, q, "history")
    t.check(screen.count("kbd-42-ok") >= 2,
            "after the up arrow and Enter, kbd-42-ok is not on the screen twice:\n" + show(screen))

    # The hypervisor's escape from the keyboard.
    sendkey(q, "ctrl-bracket_right")
    sendkey(q, "s")
    read_statistics(q)
    screen = save_screen(t, q, "statistics")
    t.check(any(s.startswith("vmi-hv: virtual interrupts: ") for s in screen),
            "the statistics are not on the VGA screen:\n" + show(screen))
    # The 's' went to the hypervisor, not to the shell: this line runs as
    # typed, not as "secho".
    type_keys(q, "echo after-$((1+1))\n")
    q.expect(r"\nafter-2\n", timeout=60)
    t.check("secho" not in q.output, "the 's' of Ctrl-] s reached the shell")
    q.expect(PROMPT, timeout=60)

    # The serial console in the same session.
    q.send("echo serial-$((6*7))-ok\n")
    q.expect(r"\nserial-42-ok\n", timeout=60)
    q.expect(PROMPT, timeout=60)


@test("hv-boot-no-denied-ports")
def boot_no_denied_ports(t):
    """A default boot (the ISO's default entry) logs no denied port access:
    port 0x80 (Linux's I/O delay) and 0x87 (its probe for an ISA DMA
    controller) are quiet ports now, and the guest's i8042 driver, reading
    0xff from 0x60/0x64, says it found no controller instead of failing
    with "Can't read CTR".  The VGA screen is read while the guest is
    stopped (the monitor's `stop`) just after its i8042 probe, when the rows
    where the denied lines used to be are still on it; the serial log has
    the whole boot; the statistics count 0 denied port accesses."""
    t.require(paths.ISO)
    q = t.qemu("-m", "256", "-cdrom", paths.ISO, fatal=GUEST_FATAL, monitor=True)
    q.expect(r"i8042: No controller found\n", timeout=300)
    q.monitor_command("stop")
    screen = save_screen(t, q, "i8042")
    q.monitor_command("cont")
    t.check(any("Serial: 8250/16550 driver" in s for s in screen),
            "the screen no longer shows the serial driver's line, where port 0x80 was denied:\n"
            + show(screen))
    t.check(any(s.endswith("i8042: No controller found") for s in screen),
            "the guest's i8042 line is not on the VGA screen:\n" + show(screen))
    denied = [s for s in screen if "denied" in s]
    t.check(not denied, "denied port accesses on the VGA screen:\n" + show(denied))

    q.expect(MARKER, timeout=240)
    q.expect(PROMPT, timeout=60)
    denied_ports = hv_statistics(q).counters["denied_ports"]
    t.check(denied_ports == 0, f"{denied_ports} denied port accesses at the shell, expected 0")
    # Every line that says "denied", except the counters' "0 denied".
    denied = [s for s in re.findall(r"[^\n]*denied[^\n]*", q.output)
              if not re.search(r"\b0 denied port accesses$", s)]
    t.check(not denied, "denied port accesses in the serial log:\n" + "\n".join(denied))
    t.check("Can't read CTR" not in q.output, "the guest's i8042 driver still fails its probe")


@test("hv-keyboard-absent")
def keyboard_absent(t):
    """QEMU without an i8042 (-machine pc,i8042=off): the hypervisor says
    once that there is no keyboard and goes on; the guest reaches its
    shell and a command typed on the serial console runs."""
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    module = hv_modules(SERIAL_CMDLINE)
    q = t.qemu("-machine", "pc,i8042=off", "-m", "256", "-kernel", paths.HV_ELF,
               "-initrd", module, fatal=GUEST_FATAL)
    q.expect(NO_KBD, timeout=120)
    m = q.expect(MARKER, timeout=300)
    t.check(m.group(3) == "vmi", f"guest reports mode {m.group(3)}")
    q.expect(PROMPT, timeout=60)
    q.send("echo serial-$((6*7))-only\n")
    q.expect(r"\nserial-42-only\n", timeout=60)
    q.expect(PROMPT, timeout=60)
    said = re.findall(NO_KBD, q.output)
    t.check(len(said) == 1, f"'no PS/2 keyboard' said {len(said)} times, expected once")
    t.check(not re.search(KBD_READY, q.output), "a keyboard was found on a machine without i8042")
