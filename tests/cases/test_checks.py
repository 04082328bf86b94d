"""Checks of the checks (docs/TESTING.md, "Tests"): each feeds one of the suite's
own checks the input that an earlier, weaker form of it accepted, and
the input it must accept, on the host, without QEMU.  A check that can
let a fault through is a test that cannot fail."""

import contextlib
import glob
import os
import re
import subprocess
import time

from vmitest import Console, FATAL_PATTERNS, TestFailure, paths, test
from hvguest import GUEST_FAULT_STOPS, GUEST_STOPPED_LINE
from guest_end import AUDIT
import hvguest
import hvstats
import procstat
import verdicts


def console_of(t, text, fatal=None, typed=False):
    """A Console on a process that prints text and then lingers (typed:
    once a line has been typed to it, as a shell answers a command)."""
    script = ("read x; " if typed else "") + 'printf "%s" "$1"; sleep 5'
    proc = subprocess.Popen(["sh", "-c", script, "sh", text],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return Console(proc, open(t.log_path, "a"), fatal=fatal, name="sh")


@contextlib.contextmanager
def printed(t, text, fatal=None, typed=False):
    """console_of(t, text, fatal, typed), its process ended and log closed after."""
    c = console_of(t, text, fatal, typed)
    try:
        yield c
    finally:
        c.proc.kill()
        c.proc.wait()
        c.log.close()


def expect_outcome(t, text, pattern, fatal=None):
    """expect(pattern) on a console that printed text (ending in END), once
    all of it is in the buffer: ("match", its text) or ("failure", why)."""
    with printed(t, text, fatal) as c:
        deadline = time.monotonic() + 10
        while "END\n" not in c.output and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            return "match", c.expect(pattern, timeout=10).group(0)
        except TestFailure as e:
            return "failure", str(e)


@test("host-check-expect-fatal-before-match")
def host_check_expect_fatal_before_match(t):
    """Console.expect: a fatal line already in the buffer before the
    wanted pattern fails the wait, though both arrived at once; a fatal
    line after the match does not; a test that waits for a stop line
    (and declares it fatal otherwise) gets it."""
    how, what = expect_outcome(t, "vmi-hv: PANIC: shadow lost\nwanted-marker\nEND\n", r"wanted-marker")
    t.check(how == "failure" and "vmi-hv: PANIC: shadow lost" in what,
            f"a PANIC before the wanted line: {how} {what!r}")
    how, what = expect_outcome(t, "wanted-marker\nvmi-hv: PANIC: later\nEND\n", r"wanted-marker")
    t.check(how == "match", f"a PANIC after the wanted line: {how} {what!r}")
    fatal = [*FATAL_PATTERNS, GUEST_STOPPED_LINE]
    how, what = expect_outcome(t, "vmi-hv: guest stopped: triple fault: vector 6\nEND\n",
                               r"vmi-hv: guest stopped: triple fault", fatal)
    t.check(how == "match", f"the wanted stop line itself: {how} {what!r}")
    how, what = expect_outcome(t, "vmi-hv: guest stopped: triple fault: vector 6\nEND\n",
                               r"triple fault: vector \d+", fatal)
    t.check(how == "match", f"the wanted part of a stop line: {how} {what!r}")
    how, what = expect_outcome(t, "vmi-hv: guest stopped: triple fault\nvmi-hv: stopped (exit code 6)\nEND\n",
                               r"vmi-hv: stopped \(exit code 6\)", fatal)
    t.check(how == "failure" and "guest stopped: triple fault" in what,
            f"a stop line skipped over: {how} {what!r}")


# A number captured right after a greedy wildcard that also matches digits
# ("[^\n]*(\d+)", ".*(\d+)", ".+(\d+)"): the wildcard takes all the digits
# but the last, so "10 mismatches" reads as 0.
GREEDY_BEFORE_NUMBER = re.compile(r"(?:\.|\[\^[^\]]*\])[*+]\(\\d")


def greedy_number_captures(text):
    """(line number, line) of each source line with such a capture."""
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1)
            if GREEDY_BEFORE_NUMBER.search(line)]


@test("host-check-audit-count-regex")
def host_check_audit_count_regex(t):
    """The shadow audit line's count of mismatches is read whole: the one
    definition of the line (guest_end.AUDIT) gives 10 for "10
    mismatches", and no test in tests/ captures a number right after a
    greedy wildcard (the lint shown failing on such a regex first)."""
    line = ("vmi-hv: shadow audit: 3 page directories, 41 page tables, 40960 entries checked, "
            "10 mismatches (see above)\n")
    m = re.search(AUDIT, line)
    t.check(m and m.group(4) == "10", f"guest_end.AUDIT reads {m.group(4) if m else None} mismatches in {line!r}")
    t.check(greedy_number_captures(r'''q.expect(r"vmi-hv: shadow audit: [^\n]*(\d+) mismatches")'''),
            "the lint does not see the greedy capture it is for")
    t.check(not greedy_number_captures(r'''re.findall(r"shadow audit: [^\n]*?(\d+) mismatches")'''),
            "the lint flags a lazy wildcard")
    found = []
    for path in sorted(glob.glob(os.path.join(paths.ROOT, "tests", "**", "*.py"), recursive=True)):
        with open(path) as f:
            text = f.read()
        if os.path.samefile(path, __file__):
            continue        # its examples
        found += [f"{os.path.relpath(path, paths.ROOT)}:{n}: {line}" for n, line in greedy_number_captures(text)]
    t.check(not found, "a number captured after a greedy wildcard (it reads only its last digit): "
            + "; ".join(found))


def blames_guest(reason):
    return any(re.match(ok, reason) for ok in GUEST_FAULT_STOPS)


@test("host-check-guest-stop-allow-list")
def host_check_guest_stop_allow_list(t):
    """The fuzzers' allow-list of stop reasons that blame the guest takes
    the per-call refusals the fuzzers really earn (texts from their runs),
    and not just any "VMI call N (Name): ..." stop: a reason that says
    the hypervisor went wrong inside a call must fail them."""
    guest_faults = [
        "VMI call 20 (SetCR0): mov to cr0 6000fff0: leaving protected mode",
        "VMI call 24 (SetCR4): mov to cr4 00000020: PAE (vmi-hv guests are non-PAE)",
        "VMI call 2 (SetGDT): lgdt: the guest's GDT has 8192 entries, the hypervisor holds 32",
        "VMI call 9 (SetLDT): lldt 0xf8: GDT slot 31 is the hypervisor's",
        "VMI call 11 (SetTR) raised exception 13 (error 4), which the call cannot return",
        "VMI call 85 (INSB): port out 0x5000 (1 bytes) is outside the legacy PC I/O range (0-0x400): "
        "no device of this guest is there (buffer 00100000, count 1)",
    ]
    hv_faults = [
        "VMI call 9 (SetLDT): load_seg: unknown segment register 7",
        "VMI call 20 (SetCR0): mov to cr1",
        "VMI call 11 (SetTR): unsupported instruction 0f 00 d8",
        "VMI call 2 (SetGDT): x",
    ]
    for r in guest_faults:
        t.check(blames_guest(r), f"a guest's fault not on the allow-list: {r}")
    for r in hv_faults:
        t.check(not blames_guest(r), f"the allow-list takes a stop that is not the guest's fault: {r}")


@test("host-check-every-try")
def host_check_every_try(t):
    """hv-syscall-no-exit's tries: a #GP exit or IRET hypercall in any try
    fails, though a later try's noisy total is good; the noisy total alone
    takes the best of the tries."""
    def always(f):
        return [f"{f['gp']} #GP exits"] if f["gp"] else []

    def settled(f):
        return f["noise"] < 100

    tries = [{"gp": 100000, "noise": 100400}, {"gp": 0, "noise": 12}, {"gp": 0, "noise": 3}]
    problems, last = verdicts.judge_tries(lambda n: tries[n - 1], 3, always, settled)
    t.check(problems and "try 1" in problems[0], f"a #GP exit in try 1 passed: {problems}, last {last}")
    tries = [{"gp": 0, "noise": 400}, {"gp": 0, "noise": 12}, {"gp": 0, "noise": 3}]
    problems, last = verdicts.judge_tries(lambda n: tries[n - 1], 3, always, settled)
    t.check(not problems and last["noise"] == 12, f"a noisy first try failed the test: {problems}, last {last}")


# gdb's output on the Init stop in the hypervisor, then on the guest's
# rest_init, as debug-gdb-hypervisor-and-guest reads it.
GDB_HV = """Breakpoint 1, vcpu_hypercall (v=0x204000) at /work/main/hv/vcpu/exit/hypercall.c:255
255\t{
#0  vcpu_hypercall (v=0x204000) at /work/main/hv/vcpu/exit/hypercall.c:255
"""
GDB_HV_FRAMES = """#1  0x00107751 in handle_exit (cr2=3239814452, f=0x207fb4, v=0x204000) at /work/main/hv/vcpu/vcpu.c:238
#2  vcpu_run_once (v=<optimized out>) at /work/main/hv/vcpu/vcpu.c:302
"""
GDB_GUEST = """Breakpoint 2 at 0xc113e2a0: file init/main.c, line 665.

Breakpoint 2, rest_init () at init/main.c:665
#0  rest_init () at init/main.c:665
#1  0xc124f841 in arch_call_rest_init () at init/main.c:865
#2  0xc124fd02 in start_kernel () at init/main.c:1113
"""


@test("host-check-gdb-hv-backtrace")
def host_check_gdb_hv_backtrace(t):
    """debug-gdb-hypervisor-and-guest looks for the hypervisor's backtrace
    in what gdb printed at the hypervisor stop, not in the guest's later
    one: a hypervisor backtrace of frame 0 alone fails."""
    def hv_frames(out):
        return re.search(verdicts.HV_FRAME, verdicts.hv_part_of_gdb(out))
    t.check(hv_frames(GDB_HV + GDB_HV_FRAMES + GDB_GUEST), "a real hypervisor backtrace is not seen")
    t.check(not hv_frames(GDB_HV + GDB_GUEST), "frame 0 in the hypervisor, then the guest's frames, passed")
    t.check(not hv_frames(GDB_HV + GDB_GUEST.replace("init/main.c:865", "/src/hv/guest/main.c:865")),
            "the guest's frame #1 counted as the hypervisor's")


@test("host-check-bench-failures")
def host_check_bench_failures(t):
    """compare-native-vs-hv: a boot whose workloads did not all succeed
    (microbench's BENCH-END failures=N, a BENCH-FAIL line, its exit
    status) fails, whichever workload it was; hackbench saying why it did
    not run is a failure too."""
    ok = {"mode": "hv", "tests": {"hackbench": {}, "gzip": {}}, "failures": {}, "bench_end_failures": 0,
          "guest_rc": 0}
    t.check(not verdicts.bench_problems(ok), f"a good boot: {verdicts.bench_problems(ok)}")
    gzip_failed = dict(ok, tests={"hackbench": {}}, bench_end_failures=1, guest_rc=1,
                       failures={"gzip": "/bin/gzip exited with status 1"})
    t.check(verdicts.bench_problems(gzip_failed), "gzip failed (BENCH-END failures=1) and the boot passed")
    no_hackbench = dict(ok, tests={"gzip": {}}, bench_end_failures=1, guest_rc=1,
                        failures={"hackbench": "/usr/bin/hackbench is not in the initramfs"})
    t.check(verdicts.bench_problems(no_hackbench), "hackbench missing from the initramfs, and the boot passed")
    no_end = dict(ok, bench_end_failures=None)
    t.check(verdicts.bench_problems(no_end), "a boot without its BENCH-END line passed")


@test("host-check-sharing-test-refused-whole-machine")
def host_check_sharing_test_refused_whole_machine(t):
    """A test that shares the machine with another (tests/run.py -j 2; not
    registered alone=) is refused QEMU on two CPUs under MTTCG and make in
    the checkout, saying to register it alone= (docs/TESTING.md, "Two
    tests at a time"); a test registered alone= is not, and -smp 2 without
    MTTCG (one host thread) is not either.  Nothing is started: the
    refusals come before QEMU or make would run, and the one allowed QEMU
    is a command that exits at once."""
    import vmitest
    sharing = vmitest.TestContext(t.name + ".sharing", alone=False)
    alone = vmitest.TestContext(t.name + ".alone", alone=True)
    said = f"register {sharing.name} with alone="
    for ctx, accel, refused in ((sharing, "tcg,thread=multi", True), (alone, "tcg,thread=multi", False),
                                (sharing, "tcg", False)):
        try:
            q = ctx.qemu("-smp", "2", "-version", accel=accel, debug_exit=False)
            q.wait_exit(timeout=30)
            outcome = None
        except TestFailure as e:
            outcome = str(e)
        finally:
            ctx.cleanup()
            ctx.qemus.clear()
        if refused:
            t.check(outcome and said in outcome,
                    f"{ctx.name}: -smp 2 under {accel} was not refused: {outcome}")
        else:
            t.check(outcome is None, f"{ctx.name}: -smp 2 under {accel} refused: {outcome}")
    vmitest.RUNNING.append(sharing)
    try:
        vmitest.start_make(["--version"], subprocess.DEVNULL)
        t.fail("make started in a test that shares the machine")
    except TestFailure as e:
        t.check(said in str(e), f"make refused without saying why: {e}")
    finally:
        vmitest.RUNNING.pop()
    vmitest.RUNNING.append(alone)
    try:
        vmitest.stop_group(vmitest.start_make(["--version"], subprocess.DEVNULL))
    finally:
        vmitest.RUNNING.pop()


# A Ctrl-] s report as the hypervisor prints it (trimmed), on -smp 2, with
# a line of guest 2 printed on the other CPU between its last lines.
STATS_REPORT = """vmi-guest# vmi-hv: statistics (guest running, hypervisor up 3786 ms, 777 timer interrupts):
vmi-hv: counters: 15002 exits, 27 emulated instructions, 819 hidden (shadow) page faults, 622 exceptions reflected, 13261 hypercalls, 7488 COM1 bytes, 3 denied port accesses
vmi-hv: emulated by kind: cli=7 sti=6 mov to cr=5
vmi-hv: hypervisor time per exit: 100056 cycles (38497 ns) on average over 14682 exits, run loop included; 14167 exits quiet (the vCPU entered again at once, no device poll)
vmi-hv: exits by vector: 13=28 14=1440 130=13261
vmi-hv: VMI calls: Init=1 WriteGDTEntry=33 SetAlarm=133
vmi-hv: virtual interrupts: 652 delivered, 571 alarms fired (at worst 16544 us late, 331 us on average)
vmi-hv: vcpu time: guest 1 (guest1) vcpu 0: real=7543 available=7532 stolen=11 cycles (running=5918 halted=1614); 4 of 2902 ms stolen; 571 alarms (at worst 16544 us late, 331 us on average), 322 wake-ups (0 took the CPU at once)
[guest2] busy: done
vmi-hv: vcpu time: guest 2 (guest2) vcpu 0: real=900 available=800 stolen=100 cycles (running=700 halted=100); 40 of 290 ms stolen; 5 alarms (at worst 16 us late, 3 us on average), 32 wake-ups (1 took the CPU at once)
vmi-hv: cpu 0 (APIC ID 0): busy in guests 57.9%, hypervisor 23.4%, idle 18.6% of 2901 ms; 777 timer interrupts, 0 IPIs
vmi-hv: cpu 1 (APIC ID 1): busy in guests 7.9%, hypervisor 3.4%, idle 88.6% of 2900 ms; 77 timer interrupts, 4 IPIs
after-report
END
"""


@test("host-check-statistics-report")
def host_check_statistics_report(t):
    """hvstats.read_statistics: the whole report of a two-CPU machine is
    read (both CPU lines) and parsed; a guest's line printed inside it
    stays for a later expect(), and no guest line is taken for the
    hypervisor's."""
    with printed(t, STATS_REPORT) as c:
        c.cmd = ["-smp", "2"]
        s = hvstats.read_statistics(c, timeout=10)
        t.check((s.up_ms, s.timer_irqs) == (3786, 777), f"header: {s.up_ms} ms, {s.timer_irqs} interrupts")
        t.check(s.counters["exits"] == 15002 and s.counters["denied_ports"] == 3, f"counters: {s.counters}")
        t.check(s.hv_time == dict(cycles=100056, ns=38497, timed_exits=14682, quiet=14167), f"time: {s.hv_time}")
        t.check(s.exits_by_vector == {13: 28, 14: 1440, 130: 13261}, f"vectors: {s.exits_by_vector}")
        t.check(s.vmi_calls == {"Init": 1, "WriteGDTEntry": 33, "SetAlarm": 133}, f"calls: {s.vmi_calls}")
        t.check(s.interrupts["alarms"] == 571 and s.interrupts["mean_late_us"] == 331, f"irqs: {s.interrupts}")
        t.check(s.vcpu(2, 0)["stolen_ms"] == 40 and s.guests["guest1"]["real_ms"] == 2902, f"vcpus: {s.vcpus}")
        t.check(sorted(s.cpus) == [0, 1] and s.cpus[1]["ipis"] == 4, f"cpus: {s.cpus}")
        t.check("busy: done" not in s.text, "a guest line taken into the report")
        t.check(c.expect(r"\[guest2\] busy: done\n", timeout=5), "the guest's line inside the report was skipped")
        t.check(c.expect(r"after-report", timeout=5), "the line after the report")


@test("host-check-run-in-shell")
def host_check_run_in_shell(t):
    """hvguest.run_in_shell: the output between the sentinels, not the
    typed line's echo (which has $((6*7)) where the output has 42); with
    several guests, only the named guest's lines, unmarked."""
    echo = "vmi-guest# echo SH-$((6*7))-BEGIN; grep cpu /proc/stat; echo SH-$((6*7))-END\n"
    with printed(t, echo + "SH-42-BEGIN\ncpu0 1 2\ncpu1 3 4\nSH-42-END\nEND\n", typed=True) as c:
        out = hvguest.run_in_shell(c, "grep cpu /proc/stat", timeout=10)
        t.check(out == "cpu0 1 2\ncpu1 3 4", f"one guest: {out!r}")
    with printed(t, "[one] " + echo + "[one] SH-42-BEGIN\n[two] cpu9 9\n[one] cpu0 1 2\n[one] SH-42-END\nEND\n",
                 typed=True) as c:
        m = hvguest.shell_search(c, "grep cpu /proc/stat", r"^cpu(\d+) (\d+) (\d+)$", timeout=10, guest="one")
        t.check(m.groups() == ("0", "1", "2"), f"guest one of two: {m.group(0)!r}")
    # Guest one's output began before the wait for guest two's console
    # moved the cursor past it: read from where it was typed.
    text = "[one] vmi-guest# echo ...\n[one] SH-42-BEGIN\nvmi-hv: console input goes to guest 2 (two)\n[one] cpu0 5\n[one] SH-42-END\nEND\n"
    with printed(t, text) as c:
        c.expect(r"console input goes to guest 2", timeout=10)
        out = hvguest.shell_output(c, timeout=10, guest="one", since=0)
        t.check(out == "cpu0 5", f"guest one, read from where it was typed: {out!r}")


@test("host-check-procstat-window")
def host_check_procstat_window(t):
    """procstat.window_cmd run by the host's sh over its own /proc/stat:
    both readings parse, extra figures printed on several lines come back
    as one reading's words, and the window's elapsed time and columns
    advance."""
    cmd = procstat.window_cmd("sleep 0.3", lines="cpu[0-9]", extra="$(printf '1.5\\n2.5\\n')", stat_outside=True)
    out = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=30).stdout
    w = procstat.parse_window(out)
    t.check(w.before.extra == ["1.5", "2.5"] and w.after.extra == ["1.5", "2.5"], f"extra: {out!r}")
    t.check(0.2 <= w.elapsed <= 5, f"elapsed {w.elapsed} s over a sleep of 0.3 s: {out!r}")
    t.check("cpu0" in w.after.stat and len(w.delta("cpu0")) >= 8, f"cpu0's columns: {out!r}")
    t.check(sum(w.delta("cpu0")) >= 0 and 0 <= w.share(procstat.IDLE, "cpu0") <= 2, f"the window: {out!r}")
