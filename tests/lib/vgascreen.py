"""The VGA text screen of a QEMU started with monitor=True, as tests read
it (Qemu.vga_screen: rows of (text, attributes))."""

import time


def show(rows):
    """Rows (text, or (text, attributes)) as an indented block for a log or
    a failure message."""
    return "\n".join(f"  |{(row[0] if isinstance(row, tuple) else row).rstrip()}" for row in rows)


def save_screen(t, q, what, attrs=False):
    """Read the VGA screen; keep it as test-logs/NAME.screen-WHAT.txt.
    Returns its rows' text (trailing blanks dropped), or with attrs the
    rows as (text, attributes)."""
    screen = q.vga_screen()
    with open(t.log_path[:-4] + f".screen-{what}.txt", "w") as f:
        f.write(show(screen) + "\n")
    return screen if attrs else [text.rstrip() for text, _ in screen]


def vga_has(q, word, timeout=30):
    """Whether the VGA screen shows word, waiting a little for it."""
    end = time.monotonic() + timeout
    while True:
        if any(word in row for row in q.vga_text()):
            return True
        if time.monotonic() > end:
            return False
        time.sleep(0.5)
