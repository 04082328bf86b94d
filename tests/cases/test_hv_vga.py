"""The guest's console on the VGA text screen (docs/CONSOLE.md, "The consoles").

The guest's console is its virtual COM1; the hypervisor sends what the
guest transmits to the real COM1 and also renders it on the VGA text
screen as a terminal would (hv/drivers/textterm.c): escape sequences interpreted or
consumed, never drawn.  The hypervisor's own messages share the screen in
their own colour (light cyan, 0x0b; the guest's output is light grey, 0x07).

The screen is read through QEMU's human monitor (pmemsave of 0xB8000),
see Qemu.vga_screen() in tests/lib/vmitest.py.
"""

from vmitest import paths, test
from hvguest import GUEST_FATAL, GUEST_REBOOT, MARKER, hv_modules, quiet_console
from hvstats import hv_statistics
from vgascreen import save_screen, show

ATTR_GUEST = 0x07
ATTR_HV = 0x0b
# The ISO's default entry's guest command line (iso/grub.cfg).
CMDLINE = "earlyprintk=serial,ttyS0,115200 console=tty0 console=ttyS0,115200"


def find_row(screen, pred):
    for text, attrs in screen:
        if pred(text.rstrip()):
            return text.rstrip(), attrs
    return None, None


@test("hv-vga-guest-console")
def vga_guest_console(t):
    """Boot the guest under vmi-hv (QEMU -kernel, the ISO's command line) to
    its shell; type commands on the serial console; then the VGA text screen
    shows, in the guest's colour, the init marker line, the typed command
    echoed by busybox's line editing and its output `vga-42-check`; a line
    built with escape sequences (CR, ESC [ K, ESC [ 1 m, ESC [ 0 m) renders
    as `vga-bold-ok` with only `bold` bright; no ESC byte is drawn anywhere.
    Ctrl-] s at the prompt then puts the hypervisor's statistics on the
    screen in the hypervisor's colour, starting a row of their own;
    `reboot -f` ends the run."""
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    module = hv_modules(CMDLINE)
    q = t.qemu("-m", "256", "-kernel", paths.HV_ELF, "-initrd", module,
               fatal=GUEST_FATAL, monitor=True)
    m = q.expect(MARKER, timeout=300)
    t.check(m.group(3) == "vmi", f"guest reports mode {m.group(3)}")
    t.note(f"QEMU start to init marker under vmi-hv with the guest console on VGA: {q.elapsed():.1f}s")
    q.expect(r"vmi-guest# ", timeout=60)
    quiet_console(q)
    q.send("\n")                      # a fresh prompt below the kernel's line
    q.expect(r"vmi-guest# ", timeout=60)
    q.send("echo vga-$((6*7))-check\n")
    q.expect(r"\nvga-42-check\n", timeout=60)
    q.expect(r"vmi-guest# ", timeout=60)
    q.send(r"printf 'junk\r\033[Kvga-\033[1mbold\033[0m-ok\n'" + "\n")
    q.expect(r"junk\x1b\[Kvga-\x1b\[1mbold\x1b\[0m-ok\n", timeout=60)
    q.expect(r"vmi-guest# ", timeout=60)

    screen = save_screen(t, q, "shell", attrs=True)
    t.note("VGA screen at the shell, last rows:\n" + show(screen[-4:]))

    text, attrs = find_row(screen, lambda s: s.startswith("VMIHV-INIT-MARKER uptime="))
    t.check(text is not None, "the init marker line is not on the VGA screen")
    t.check(text.endswith("mode=vmi"), f"marker row on VGA: {text!r}")
    t.check(set(attrs[:len(text)]) == {ATTR_GUEST},
            f"marker row attributes {sorted(set(attrs[:len(text)]))}, expected the guest's {ATTR_GUEST:#x}")

    text, _ = find_row(screen, lambda s: s.endswith("# echo vga-$((6*7))-check"))
    t.check(text is not None, "the typed command (echoed by the shell) is not on the VGA screen")
    text, _ = find_row(screen, lambda s: s == "vga-42-check")
    t.check(text is not None, "the command's output vga-42-check is not a row of the VGA screen")

    text, attrs = find_row(screen, lambda s: s.startswith("vga-b"))
    t.check(text == "vga-bold-ok", f"escape sequences rendered as {text!r}, expected 'vga-bold-ok'")
    bright = [i for i, a in enumerate(attrs[:len(text)]) if a != ATTR_GUEST]
    t.check(bright == [4, 5, 6, 7] and attrs[4] == ATTR_GUEST | 0x08,
            f"SGR 1/0: bright cells {bright} (attribute {attrs[4]:#x}), expected 'bold' at 4-7")
    bad = [r for r, (s, _) in enumerate(screen) if "\x1b" in s]
    t.check(not bad, f"ESC drawn on the VGA screen in rows {bad}")

    # The hypervisor's messages on the same screen, in their own colour.
    hv_statistics(q)
    q.send("\n")
    # On COM1 the statistics cut the prompt's row: the guest's next byte
    # shows it again (docs/CONSOLE.md, "The consoles"), then the new prompt.
    q.expect(r"vmi-guest# \r?\nvmi-guest# ", timeout=60)
    screen = save_screen(t, q, "statistics", attrs=True)
    # The statistics are longer than the screen: their last line is on it.
    text, attrs = find_row(screen, lambda s: s.startswith("vmi-hv: virtual interrupts: "))
    t.check(text is not None, "the hypervisor's statistics are not on the VGA screen:\n" + show(screen))
    t.check(set(attrs[:len(text)]) == {ATTR_HV},
            f"hypervisor row attributes {sorted(set(attrs[:len(text)]))}, expected {ATTR_HV:#x}")
    # Typed at the prompt, the statistics still start rows of their own:
    # no "vmi-hv:" glued to the end of a guest row.
    glued = [s for s, _ in screen if "vmi-hv: " in s and not s.startswith("vmi-hv: ")
             and not s.startswith(" ")]
    t.check(not glued, f"hypervisor text in the middle of a row: {glued}")
    t.check(screen[-1][0].rstrip() == "vmi-guest#" or
            any(s.rstrip() == "vmi-guest#" for s, _ in screen[-3:]),
            "the shell's prompt is not at the bottom of the screen:\n" + show(screen))

    q.send("reboot -f\n")
    q.expect(r"vmi-hv: stopped \(exit code 7\): guest reboot", timeout=60)
    status = q.wait_exit(timeout=30)
    t.check(status == GUEST_REBOOT, f"exit status {status}, expected {GUEST_REBOOT}")
