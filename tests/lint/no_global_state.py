#!/usr/bin/env python3
"""Fail if mutable state at file scope (or `static` inside a function)
comes back in the hypervisor's C sources outside the allow-list.

State belongs to its owner: a guest's to struct guest, a vCPU's to struct
vcpu, a physical CPU's to struct pcpu (the per-CPU array).  What may stay
a file-level variable is listed in ALLOWED with the reason: the frame
allocator, the per-CPU array, and the hypervisor's own devices (console,
serial, VGA, keyboard, PIC, timer tick, TSC and RTC calibration).

    tests/lint/no_global_state.py [HV_DIR]     (default: hv/ of this checkout)

Prints one line per finding, `path:line: name: why`, and exits 1 if any.
The check is lexical: comments, strings and preprocessor lines are
dropped, then every declaration at brace depth 0 that is not a function,
a type, an `extern` or a `const` object counts, and so does every
`static` declaration inside a function that is not `const`.
"""

import os
import re
import sys

ALLOWED = {
    # The frame allocator.
    "mm/machine_mem.c": {"machine_frames", "frame_bitmap", "low", "frames_lock"},
    # The hypervisor's own address space.
    "mm/address_space.c": {"hv_page_dir", "low_pt"},
    # The firmware's tables, searched once at start-up, read-only after.
    "drivers/acpi.c": {"acpi"},
    # Starting the other CPUs: the started CPU's boot parameters (one CPU
    # at a time) and how many are online (written before they run guests).
    "drivers/smp_boot.c": {"nr_online_cpus"},
    "arch/trampoline.S": {"ap_boot"},
    # locks=check, set at start-up before the other CPUs run.
    "lib/spinlock.c": {"checking"},
    # Where the hypervisor's messages go and which show, and how the
    # machine powers off: each set once at start-up (main.c).
    "lib/log.c": {"output", "shown"},
    "lib/stop.c": {"power_off"},
    # The run loops' lock, and the run the other CPUs join (run_internal.h).
    "vcpu/run.c": {"published_run"},
    "vcpu/smp/run_smp.c": {"sched_lock"},
    # The lock rule lock_selftest= breaks on CPU 1, set once at boot
    # before the APs join, and the lock it holds into an entry.
    "vcpu/smp/lock_selftest.c": {"armed", "selftest_lock"},
    # The test-only windows debug_pick_delay= and debug_halt_delay= widen,
    # set once at boot.
    "vcpu/debug_delay.c": {"debug_pick_delay_us", "debug_halt_delay_us"},
    # The per-CPU arrays: each CPU's tables page in the switcher (GDT, IDT,
    # TSSes, the trap path's two words) and the rest (current vCPU, counters).
    "arch/cpu_tables.c": {"pcpus", "pcpu_tables"},
    # The host's interrupt plumbing.
    "arch/traps.c": {"irq_handlers", "irq_counts", "controller", "local_timer_handler", "local_spurious_handler",
                     "local_ipi_handler"},
    # The host's devices and time base.
    "drivers/console.c": {"guest_output_last", "guest_line_owner", "hv_line_open", "hv_line_opened"},
    "drivers/serial.c": {"present", "rx_buf", "rx_head", "rx_tail", "rx_total"},
    "drivers/pic.c": {"mask"},
    "drivers/vga.c": {"hv_screen", "shown", "hv_attr"},
    "drivers/kbd.c": {"keys", "typed", "typed_head", "typed_tail"},
    "timer/hv_timer.c": {"armed_deadline", "interrupts", "arms", "use_lapic", "lapic_hz"},
    "drivers/lapic.c": {"regs"},
    "arch/fpu.c": {"have_fxsr", "fxsave_leaks"},
    "arch/tsc.c": {"hz", "per_ms", "start"},
    "timer/rtc.c": {"boot_secs", "boot_tsc"},
    # Scratch buffers of the loader, dead once a load returns.
    "loader/guest_loader.c": {"buf", "rom_copy", "zero_page"},
}

SKIP_DIRS = set()


def strip(text):
    """Comments, string and character literals and preprocessor lines
    blanked out, newlines kept (for line numbers)."""
    out, i, n = [], 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#":
            # A preprocessor line, with its continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                i += 1
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * max(0, j - i - 1) + c)
            i = j + 1
            continue
        if c == "\n":
            at_line_start = True
        elif not c.isspace():
            at_line_start = False
        out.append(c)
        i += 1
    return "".join(out)


TYPE_ONLY = re.compile(r"^\s*(typedef\b|(struct|union|enum)\s+\w*\s*(\{\})?\s*$)", re.S)


def declared_names(decl):
    """The object names a declaration declares (without initializers)."""
    decl = re.sub(r"=[^,;]*(\{[^}]*\}[^,;]*)?", "", decl)     # initializers
    decl = re.sub(r"\{[^{}]*\}", "", decl)                    # struct bodies
    decl = no_attributes(decl)
    decl = re.sub(r"\[[^\]]*\]", "", decl)                    # array sizes
    names = []
    for part in decl.split(","):
        # The last word that is not a macro in capitals (SWITCHER_DATA).
        words = [w for w in re.findall(r"[A-Za-z_]\w*", part) if not re.fullmatch(r"[A-Z][A-Z0-9_]+", w)]
        if words:
            names.append(words[-1])
    return names


def no_attributes(s):
    """__attribute__((...)) removed, nested parentheses and all."""
    while True:
        k = s.find("__attribute__")
        if k < 0:
            return s
        j, depth = s.find("(", k), 0
        while 0 <= j < len(s):
            depth += {"(": 1, ")": -1}.get(s[j], 0)
            j += 1
            if depth == 0:
                break
        s = s[:k] + " " + s[j:]


def is_function(head):
    return no_attributes(head).rstrip().endswith(")")


def flatten(stmt):
    """Braced bodies emptied: struct members and initializers out of the way."""
    while True:
        flat = re.sub(r"\{[^{}]*\}", "{}", stmt)
        if flat == stmt:
            return flat
        stmt = flat


def is_const_object(decl):
    """const applies to the object itself: `const T x`, `T *const x`."""
    head = re.split(r"=", flatten(decl), 1)[0]
    head = no_attributes(head)
    if "*" in head:
        return bool(re.search(r"\*\s*const\b[^*]*$", head))
    return bool(re.search(r"\bconst\b", head))


def matching(text, i):
    """Index just past the brace that closes the one at text[i]."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def line_of(text, i):
    return text.count("\n", 0, i) + 1


def findings(path, rel):
    text = strip(open(path, encoding="utf-8", errors="replace").read())
    allowed = ALLOWED.get(rel, set())
    found = []

    def report(stmt, at, why):
        for name in declared_names(stmt):
            if name not in allowed:
                found.append(f"{rel}:{line_of(text, at)}: {name}: {why}")

    i, start, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == "{":
            end = matching(text, i)
            if is_function(text[start:i]):
                # A function body: only its static declarations count.
                body = text[i:end]
                for m in re.finditer(r"(?<![\w])static\b([^;]*);", body):
                    stmt = m.group(0)
                    if not is_const_object(stmt):
                        report(stmt, i + m.start(), "mutable static inside a function")
                start = end
            i = end
            continue
        if c == ";":
            stmt = flatten(text[start:i].strip())
            at = start + (len(text[start:i]) - len(text[start:i].lstrip()))
            start = i + 1
            if stmt and not (TYPE_ONLY.match(no_attributes(stmt))
                             or re.match(r"^(extern|typedef|_Static_assert)\b", stmt)
                             or is_function(stmt)
                             or is_const_object(stmt)):
                report(stmt, at, "mutable file-scope state")
        i += 1
    return found


def check(hv_dir):
    out = []
    for root, dirs, files in os.walk(hv_dir):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for f in sorted(files):
            if f.endswith(".c"):
                path = os.path.join(root, f)
                out += findings(path, os.path.relpath(path, hv_dir).replace(os.sep, "/"))
    return out


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    hv_dir = argv[1] if len(argv) > 1 else os.path.join(here, "..", "..", "hv")
    out = check(hv_dir)
    for line in out:
        print(line)
    print(f"{len(out)} mutable file-scope or static variable(s) outside the allow-list"
          if out else "no mutable file-scope state outside the allow-list")
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
