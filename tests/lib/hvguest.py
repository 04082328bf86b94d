"""What the QEMU tests share about the guest and the hypervisor's exits.

One definition each: the init marker and the shell prompt (guest/initramfs/
init), and the hypervisor's exit codes, read from hv/include/exit_codes.h
(QEMU's isa-debug-exit makes code N exit status (N << 1) | 1).
"""

import os
import re
import time

from vmitest import FATAL_PATTERNS, TestFailure, paths

# guest/initramfs/init
MARKER = r"VMIHV-INIT-MARKER uptime=([0-9.]+) kernel=(\S+) mode=(\w+)\n"
# The end of a user program's line on the serial console: its newline, or a
# kernel console message ("[    2.347984] clocksource: tsc: ...") that the
# kernel printed into the middle of the line's output, right after it (seen
# with the second configuration, make test-configs).
LINE_END = r"(?:\n|(?=\[ *\d+\.\d+\]))"
PROMPT = r"vmi-guest# "
SERIAL_CMDLINE = "console=ttyS0,115200"

# A register line of the hypervisor's guest dump.
REGS = r"eax=[0-9a-f]{8} ebx=[0-9a-f]{8} ecx=[0-9a-f]{8} edx=[0-9a-f]{8}"

# The guest dying (or being stopped) ends a test that expected it to run;
# the hypervisor's own deaths are vmitest.FATAL_PATTERNS (one definition).
GUEST_STOPPED_LINE = r"vmi-hv: guest stopped: ([^\n]*)"
GUEST_FATAL = [*FATAL_PATTERNS, GUEST_STOPPED_LINE]
# The guest kernel's own reports of a fault in itself (any panic, not only
# the "not syncing" one of FATAL_PATTERNS).
KERNEL_BROKEN = [r"BUG: [^\n]*", r"Oops: [^\n]*", r"Kernel panic[^\n]*"]
# A test whose guest must run on unharmed: any of the above.
GUEST_BROKEN = [*GUEST_FATAL, *KERNEL_BROKEN]

# Stop reasons (the text after "vmi-hv: guest stopped: ") that blame the
# hypervisor, not the guest: hv/vcpu/vcpu.c stops the guest with these when the
# hypervisor itself went wrong.  A test that provokes a guest stop must
# fail on these.
HV_FAULT_STOPS = [
    r"double fault while the guest ran \(a hypervisor bug\)",
    r"emulator returned -?\d+",
    r"unexpected trap vector \d+",
    r"cannot resume the guest: [^\n]*",
]

# What a VMI call asked that the guest had no right to (the text after
# "VMI call N (Name): ", hv/vcpu/exit/hypercall.c's must(): a refused CR write,
# descriptor-table load or IRET target).  Not every reason there is the
# guest's: "load_seg: unknown segment register" or an instruction the
# emulator cannot decode would be the hypervisor's, and stay off this list.
GUEST_FAULT_CALL_REASONS = [
    r"mov to cr0 [0-9a-f]{8}: leaving protected mode",
    r"mov to cr4 [0-9a-f]{8}: PAE \(vmi-hv guests are non-PAE\)",
    r"lgdt: the guest's GDT has \d+ entries, the hypervisor holds \d+",
    r"lldt 0x[0-9a-f]+: GDT slot \d+ is the hypervisor's",
    r"eip [0-9a-f]{8} is beyond the limit [0-9a-f]{8} of cs [0-9a-f]{4} \(#GP\)",
]

# Stop reasons that blame the guest, as garbage VMI calls earn them (hv/
# hypercall.c, and what a garbage IRET, IDT or CR write leads to): the
# fuzz test's allow-list.  A reason in neither list fails that test until
# someone decides whose fault it is.
GUEST_FAULT_STOPS = [
    r"VMI call \d+ \(\w+\) raised exception \d+ \(error [0-9a-f]+\), which the call cannot return",
    r"VMI call \d+ \(\w+\): (?:%s)" % "|".join(GUEST_FAULT_CALL_REASONS),
    # The string port I/O calls' own checks of their arguments.
    r"VMI call \d+ \(\w+\): port 0x[0-9a-f]+ is not a 16-bit port",
    r"VMI call \d+ \(\w+\): port (in|out) 0x[0-9a-f]+ \(\d bytes\) is outside the legacy PC I/O range",
    r"VMI call \d+ \(\w+\): buffer [0-9a-f]{8} \(element at [0-9a-f]{8}, \d+ of \d+ left\), "
    r"port 0x[0-9a-f]+: (read|write)\b",
    r"VMI call: cannot (read|write) [a-z -]+ at [0-9a-f]{8} ",
    r"VMI hypercall from ring \d",
    r"port (in|out) 0x[0-9a-f]+ \(\d bytes\) is outside the legacy PC I/O range",
    r"GetCycleCounter: unknown counter \d+",
    r"SetAlarm: [^\n]*\(flags [0-9a-f]+\)",
    r"CancelAlarm: bad flags \(flags [0-9a-f]+\)",
    r"unimplemented VMI call \d+ \([\w ]+\)",
    r"unsupported-call report for VMI call \d+ \(out of range\)",
    r"triple fault: ",
    r"page fault at [0-9a-f]{8} \(error [0-9a-f]+\) breaks the rules: ",
    r"unsupported instruction\b",
    r"cannot read the instruction of software interrupt \d+",
    # The paravirtual MMU's rule breaks (hv/vcpu/mmu/vcpu_mmu.c): the shadow
    # fuzzer's final actions (tests/cases/test_hv_sfuzz.py).
    r"(AllocatePage|ReleasePage|a CR3 write|a page-table entry write|VMI activation) breaks the rules: ",
    r"AllocatePage\([0-9a-f]+, flags [0-9a-f]+\): a non-PAE guest",
    r"shared page: (pxe_count \d+ is larger than the queue|queued page-table entry \d+ of \d+ at [0-9a-f]{8} does not translate)",
    r"page-table entry at [0-9a-f]{8} no longer translates",
    r"Write(GDT|LDT)Entry \d+ \(selector 0x[0-9a-f]+\): system descriptor type 0x[0-9a-f]+ \(a gate",
]


def _defines(header, prefix):
    """The #define PREFIX... constants of one of the hypervisor's headers."""
    codes = {}
    with open(os.path.join(paths.ROOT, "hv", "include", header)) as f:
        for name, value in re.findall(r"#define (%s\w+)\s+(0x[0-9a-fA-F]+|\d+)" % prefix, f.read()):
            codes[name] = int(value, 0)
    return codes


EXIT_CODES = _defines("exit_codes.h", "HV_EXIT_")
# The vectors of the hypervisor's own interrupts (hv/include/segments.h):
# exits on them are the machine's, not the guest's doing.
_VECTORS = _defines("segments.h", "HV_")
HV_INTERRUPT_VECTORS = (set(range(_VECTORS["HV_IRQ_BASE"], _VECTORS["HV_IRQ_BASE"] + 8))
                        | set(range(_VECTORS["HV_IRQ_SLAVE_BASE"], _VECTORS["HV_IRQ_SLAVE_BASE"] + 8))
                        | {_VECTORS["HV_LOCAL_TIMER_VECTOR"], _VECTORS["HV_LOCAL_IPI_VECTOR"],
                           _VECTORS["HV_LOCAL_SPURIOUS_VECTOR"]})


def qemu_status(name):
    """QEMU's exit status for the hypervisor's exit code HV_EXIT_<name>."""
    return (EXIT_CODES["HV_EXIT_" + name] << 1) | 1


DONE = qemu_status("DONE")
BAD_INPUT = qemu_status("BAD_INPUT")
EXCEPTION = qemu_status("CPU_EXCEPTION")
DOUBLE_FAULT = qemu_status("DOUBLE_FAULT")
PANIC = qemu_status("PANIC")
GUEST_STOPPED = qemu_status("GUEST_STOPPED")
GUEST_REBOOT = qemu_status("GUEST_REBOOT")
GUEST_SHUTDOWN = qemu_status("GUEST_SHUTDOWN")
# A native guest's reboot under QEMU -no-reboot: QEMU exits with status 0.
NATIVE_REBOOT = 0


def reboot_ends_run(t, q):
    """The guest's `reboot -f`: the hypervisor reports the reboot and QEMU
    exits with the guest-reboot status."""
    q.send("reboot -f\n")
    q.expect(r"vmi-hv: guest reboot", timeout=60)
    status = q.wait_exit(timeout=60)
    t.check(status == GUEST_REBOOT, f"exit status {status}, expected {GUEST_REBOOT} (guest reboot)")


def ends_cleanly(t, q, what="the run", status=None, timeout=60):
    """The run ends by itself with QEMU's status (by default the guests'
    power-off, GUEST_SHUTDOWN) and no guest was stopped on the way.
    Returns the status."""
    expected = GUEST_SHUTDOWN if status is None else status
    got = q.wait_exit(timeout=timeout)
    t.check(got == expected, f"{what}: exit status {got}, expected {expected}")
    t.check("guest stopped" not in q.output, f"{what}: a guest was stopped")
    return got


def stays_responsive(t, q):
    """After a guest stop: statistics on 's' (twice, the uptime moves),
    then 'q' exits with the guest-stopped status."""
    q.expect(r"the hypervisor is still running: on the console \(serial or keyboard\), 's' prints statistics, 'q' exits",
             timeout=30)
    ticks = []
    for _ in range(2):
        q.send("s")
        m = q.expect(r"statistics \(guest stopped, hypervisor up (\d+) ms, \d+ timer interrupts\):", timeout=20)
        ticks.append(int(m.group(1)))
        q.expect(r"vmi-hv: counters: \d+ exits, \d+ emulated instructions")
    t.check(ticks[1] > ticks[0], f"hypervisor uptime did not advance: {ticks}")
    q.send("q")
    q.expect(r"vmi-hv: stopped \(exit code %d\): guest stopped" % EXIT_CODES["HV_EXIT_GUEST_STOPPED"],
             timeout=20)
    status = q.wait_exit(timeout=30)
    t.check(status == GUEST_STOPPED, f"exit status {status}, expected {GUEST_STOPPED}")


def stop_console_guest_and_quit(q, timeout=60):
    """Stop the guest that has the console (Ctrl-] q); then the hypervisor,
    up after a stop, exits on 'q'.  Returns QEMU's exit status."""
    q.send("\x1dq")
    q.expect(r"vmi-hv: guest stopped: stopped from the console \(Ctrl-\] q\)", timeout=timeout)
    q.expect(r"the hypervisor is still running", timeout=timeout)
    q.send("q")
    return q.wait_exit(timeout=60)


def quiet_console(q, timeout=60):
    """Wait for the kernel's last message of a native boot, the TSC
    clocksource that a delayed work registers about a second after start:
    it may come after the prompt, and must not land in the middle of a
    typed line (a test reading that line back from the screen would fail).
    A kernel that marked the TSC unstable first never registers it: under
    VMI always (guest patch 27, "Marking TSC unstable due to VMI: ..."),
    so the console is quiet from that line on."""
    deadline = time.monotonic() + timeout
    while "clocksource: tsc: mask:" not in q.output and "Marking TSC unstable due to" not in q.output:
        if time.monotonic() > deadline:
            raise TestFailure("the kernel never registered the TSC clocksource nor marked the TSC unstable")
        time.sleep(0.2)


def hv_modules(guest_args=SERIAL_CMDLINE, initrd=None, kernel=None):
    """QEMU's -initrd for the hypervisor: the kernel (the bzImage unless
    given) with the guest's command line (QEMU splits modules at commas: a
    comma in it is doubled), then the initrd (paths.INITRD unless given;
    False: none)."""
    mods = f"{kernel or paths.BZIMAGE} {guest_args}".strip().replace(",", ",,")
    return mods if initrd is False else f"{mods},{initrd or paths.INITRD}"


def boot_multiboot(t, modules=None, append=None, mem="256"):
    """The hypervisor from QEMU's multiboot loader; modules is the -initrd
    string (comma-separated "path args" items, hv_modules)."""
    t.require(paths.HV_ELF)
    args = ["-m", mem, "-kernel", paths.HV_ELF]
    if modules is not None:
        args += ["-initrd", modules]
    if append is not None:
        args += ["-append", append]
    return t.qemu(*args)


def expect_bad_input(t, q, pattern, what="the boot", timeout=30):
    """A refusal at boot: one "vmi-hv: error:" line, the one matching
    pattern, then the hypervisor's stop with the bad-input status.
    Returns the error line's match."""
    m = q.expect(r"vmi-hv: error: " + pattern, timeout=timeout)
    q.expect(r"vmi-hv: stopped \(exit code %d\)" % EXIT_CODES["HV_EXIT_BAD_INPUT"], timeout=10)
    status = q.wait_exit(timeout=30)
    t.check(status == BAD_INPUT, f"{what}: exit status {status}, expected {BAD_INPUT}")
    errors = q.output.count("vmi-hv: error:")
    t.check(errors == 1, f"{what}: {errors} error lines, expected exactly one")
    return m


def boot_native(t, fatal=GUEST_FATAL, memory="128", debug_exit=True):
    """The bzImage natively (QEMU -kernel) to its init marker; debug_exit=False
    boots it on a plain QEMU (no isa-debug-exit)."""
    t.require(paths.BZIMAGE, paths.INITRD)
    q = t.qemu("-m", memory, "-kernel", paths.BZIMAGE, "-initrd", paths.INITRD,
               "-append", SERIAL_CMDLINE, fatal=fatal, debug_exit=debug_exit)
    m = q.expect(MARKER, timeout=300)
    t.check(m.group(3) == "native", f"native guest reports mode {m.group(3)}")
    return q


# From `poweroff` at the shell to QEMU's exit natively: init ends the
# processes (a second's grace), then the kernel's ACPI S5 power-off; a few
# seconds under TCG.
NATIVE_POWEROFF_S = 15


def native_poweroff(t, q, label):
    """At the shell of a native boot on a plain QEMU (no isa-debug-exit):
    `poweroff` must end QEMU by itself with status 0 within
    NATIVE_POWEROFF_S seconds, through the kernel's ACPI S5 ("reboot: Power
    down"), as on any PC.  A kernel that halts ("reboot: System halted") or
    has no working power-off leaves QEMU running."""
    q.expect(PROMPT, timeout=60)
    q.send("poweroff\n")
    start = time.monotonic()
    try:
        status = q.wait_exit(timeout=NATIVE_POWEROFF_S)
    except TestFailure:
        said = re.findall(r"reboot: [^\r\n]*", q.output)
        t.fail(f"{label}: QEMU still running {NATIVE_POWEROFF_S} s after `poweroff` "
               f"(the kernel's last word: {said[-1] if said else 'none'!r})")
    t.note(f"{label}: QEMU exited {time.monotonic() - start:.1f} s after `poweroff`")
    t.check(status == 0, f"{label}: QEMU exited with {status} after `poweroff`, not 0")
    t.check(re.search(r"reboot: Power down", q.output), f"{label}: the kernel did not say 'reboot: Power down'")
    t.check(not re.search(r"init: (poweroff|reboot) -f returned", q.output), f"{label}: the kernel returned to init")


def boot_hv(t, hv_args="", guest_args=SERIAL_CMDLINE, fatal=GUEST_FATAL, memory="256", qemu_args=()):
    """The same bzImage under the hypervisor (QEMU multiboot) to its init
    marker, in paravirtual mode; qemu_args go before the rest (-icount)."""
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    args = [*qemu_args, "-m", memory, "-kernel", paths.HV_ELF, "-initrd", hv_modules(guest_args)]
    if hv_args:
        args += ["-append", hv_args]
    q = t.qemu(*args, fatal=fatal)
    m = q.expect(MARKER, timeout=300)
    t.check(m.group(3) == "vmi", f"guest under the hypervisor reports mode {m.group(3)}")
    return q


def run_in_shell(q, cmd, timeout=60, guest=None):
    """cmd typed at the guest's shell: the lines it printed (one string,
    no carriage returns), read between two sentinels the shell prints
    around it.  The typed line's echo has $((6*7)) where the output has 42,
    so only the run matches.  guest: the name of one of several guests,
    whose lines are marked "[name] "; only its lines are kept, unmarked.
    Does not wait for the prompt after."""
    return shell_output(q, timeout, guest, shell_start(q, cmd))


def shell_start(q, cmd):
    """run_in_shell in two steps: type the command (several guests may
    run theirs at once) and return where the output stood then ..."""
    since = len(q.output)
    q.send(f"echo SH-$((6*7))-BEGIN; {cmd}; echo SH-$((6*7))-END\n")
    return since


def shell_output(q, timeout=60, guest=None, since=None):
    """... and read its output, from since on (expect()'s cursor when not
    given): what other guests' consoles printed meanwhile may have moved
    the cursor past its start."""
    mark = re.escape(f"[{guest}] ") if guest else ""
    if since is not None:
        q.cursor = since
    m = q.expect(rf"(?s)\n{mark}SH-42-BEGIN\n(.*?)(?<=\n){mark}SH-42-END\n", timeout=timeout)
    if not guest:
        return m.group(1).rstrip("\n")
    return "\n".join(re.findall(rf"^{mark}([^\n]*)", m.group(1), re.M))


def shell_search(q, cmd, pattern, timeout=60, guest=None):
    """run_in_shell, then the match of pattern (re.M) in its output;
    TestFailure when the output has none."""
    out = run_in_shell(q, cmd, timeout, guest)
    m = re.search(pattern, out, re.M)
    if not m:
        raise TestFailure(f"`{cmd}` printed no /{pattern}/: {out!r}")
    return m


def program_lines(t, q, label, program, first_line):
    """At the shell: run a comparison program (ring3cmp, sigretcmp) into a
    file (the kernel's own lines about its signals stay off the console),
    print the file, and answer a command afterwards.  Its lines, from the
    one matching first_line to its "NAME done cases=" line."""
    name = os.path.basename(program)
    tag = name.upper()
    q.expect(PROMPT, timeout=120)
    q.send(f"dmesg -n 1; {program} > /tmp/{name}.txt; echo {name}-rc=$?\n")
    m = q.expect(rf"{name}-rc=(\d+)\n", timeout=600)
    t.check(m.group(1) == "0", f"{label}: {name} exited {m.group(1)}")
    q.expect(PROMPT, timeout=60)
    m = shell_search(q, f"cat /tmp/{name}.txt", rf"(?s)^{first_line}.*", timeout=120)
    lines = m.group(0).split("\n")
    q.expect(PROMPT, timeout=60)
    shell_search(q, "echo still-here", r"^still-here$")
    t.check(lines[-1].startswith(f"{tag} done cases="), f"{label}: no end line: {lines[-3:]}")
    return lines
