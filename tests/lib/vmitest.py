"""vmitest: the small library behind tests/run.py.

A test is a function decorated with @test("name"); it receives a TestContext
`t` and fails by raising (t.check, t.fail, or a failed q.expect), or skips
with t.skip("reason").  QEMU runs headless; its serial console is a pipe, so
a test reads what the guest prints and types into it as a person would.
"""

import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# VMIHV_TEST_LOGS: another place for the logs (a runner started by a test).
LOGDIR = os.environ.get("VMIHV_TEST_LOGS") or os.path.join(ROOT, "test-logs")


class paths:
    ROOT = ROOT
    BUILD = os.path.join(ROOT, "build")
    ISO = os.path.join(ROOT, "vmi-hv.iso")
    # VMIHV_BZIMAGE: another guest kernel for the same tests (make
    # test-configs: the second configuration, build/guest-alt/bzImage).
    BZIMAGE = os.environ.get("VMIHV_BZIMAGE") or os.path.join(BUILD, "guest", "bzImage")
    # The configuration that kernel was built with (scripts/build-guest.sh
    # builds in OUTDIR/linux next to OUTDIR/bzImage).
    GUEST_CONFIG = os.path.join(os.path.dirname(BZIMAGE), "linux", ".config")
    # The stock kernel of make compare: the tarball without the series
    # (scripts/build-guest.sh --stock), for the VMI kernel's native overhead.
    BZIMAGE_STOCK = os.path.join(BUILD, "guest-stock", "bzImage")
    INITRD = os.path.join(BUILD, "guest", "initrd.img")
    # The initrd plus Debian's i386 stress-ng (scripts/build-stress-initrd.sh).
    STRESS_INITRD = os.path.join(BUILD, "guest", "stress-initrd.img")
    HV_ELF = os.path.join(BUILD, "hv", "vmi-hv.elf")
    # The tiny test guest (tests/guests/, built by make hv).
    TGUEST = os.path.join(BUILD, "hv", "test-guests", "tguest.bzImage")
    VROM = os.path.join(BUILD, "vrom", "vmi.rom")
    UNIT = os.path.join(BUILD, "tests", "unit")


# The lines the hypervisor prints when it dies (the one definition; the
# tests of tests/lib/hvguest.py build on it).  Each names its cause, so a
# failure message quoting it says why.  host-fatal-patterns-match-hv fails
# when one of them matches no string in hv/ (a pattern gone stale).
HV_FATAL_PATTERNS = [
    r"vmi-hv: PANIC: [^\n]*",                                    # hv_panic(), hv/lib/stop.c
    r"vmi-hv: CPU exception \d+ \([^\n]*\) in the hypervisor[^\n]*",  # hv/arch/traps.c (#DF too)
    r"vmi-hv: error: [^\n]*",                                    # hv_fail(), bad input
]

# Lines that mean the guest (or the hypervisor) is dead: waiting on would only
# run into the timeout, so expect() fails at once and says why.
FATAL_PATTERNS = [
    r"Kernel panic - not syncing[^\n]*",
    *HV_FATAL_PATTERNS,
]

# Exit status of QEMU's isa-debug-exit device: (value << 1) | 1.
DEBUG_EXIT_DEVICE = ["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]


class TestFailure(Exception):
    pass


class ExpectTimeout(TestFailure):
    """expect() ran out of time: nothing fatal came, the pattern did not."""


class TestSkipped(Exception):
    pass


REGISTRY = []


def test(name, **opts):
    """Register a test function under a unique name.

    opts: bench=True (a benchmark: --bench runs it, and it runs alone);
    alone="why" (tests/run.py -j runs it with no other test beside it:
    its assertions depend on CPU time or share, it runs QEMU on more than
    one CPU, or it runs make; docs/TESTING.md, "Two tests at a
    time")."""
    def register(fn):
        if any(t[0] == name for t in REGISTRY):
            raise ValueError(f"duplicate test name {name}")
        if "alone" in opts and not (isinstance(opts["alone"], str) and opts["alone"]):
            raise ValueError(f"{name}: alone= takes the reason the test needs the machine to itself")
        REGISTRY.append((name, fn, opts))
        return fn
    return register


def alone_reason(opts):
    """Why a registered test must run with no other beside it, or None
    when it may share the machine with one other test."""
    if opts.get("alone"):
        return opts["alone"]
    if opts.get("bench"):
        return "a benchmark: its figures need the machine to itself"
    return None


# The test running in this process (tests/run.py sets it), for the checks
# of start_make() and TestContext.qemu(): a test that shares the machine
# must not start what needs it whole.
RUNNING = []


def _shares_machine():
    return bool(RUNNING) and not RUNNING[-1].alone


# A machine of several CPUs runs with MTTCG: one host thread per CPU.
MTTCG = "tcg,thread=multi"


def accel_for(smp):
    """QEMU's accelerator for a machine of smp CPUs: MTTCG for several (each
    CPU a host thread), plain TCG for one."""
    return MTTCG if smp > 1 else "tcg"


def smp_args(smp):
    """QEMU's -smp for smp CPUs, nothing for one."""
    return ("-smp", str(smp)) if smp > 1 else ()


def _cpus_asked(args, accel):
    """How many host threads a QEMU command line asks to run guest code:
    -smp's count under MTTCG (accel tcg,thread=multi), else 1."""
    if "thread=multi" not in accel:
        return 1
    for i, a in enumerate(args[:-1]):
        if a == "-smp":
            m = re.match(r"(?:cpus=)?(\d+)", args[i + 1])
            return int(m.group(1)) if m else 1
    return 1


_KVM_VERDICT = []


def _kvm_ioctl_probe():
    """/dev/kvm opens, speaks API 12, and gives a VM with one vCPU."""
    import fcntl
    KVM_GET_API_VERSION, KVM_CREATE_VM, KVM_CREATE_VCPU = 0xAE00, 0xAE01, 0xAE41
    try:
        fd = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        return f"/dev/kvm cannot be opened ({e.strerror})"
    try:
        version = fcntl.ioctl(fd, KVM_GET_API_VERSION)
        if version != 12:
            return f"/dev/kvm speaks KVM API {version}, not 12"
        vm = fcntl.ioctl(fd, KVM_CREATE_VM, 0)
        try:
            os.close(fcntl.ioctl(vm, KVM_CREATE_VCPU, 0))
        finally:
            os.close(vm)
    except OSError as e:
        return f"/dev/kvm opens, but creating a VM and a vCPU fails ({e.strerror})"
    finally:
        os.close(fd)
    return None


# The smallest kernel QEMU's -kernel takes: a multiboot header with the
# a.out kludge (load the file at 1 MiB, enter at 0x100020), then 32-bit code
# that writes "K\n" to the debug console port 0x402 and halts.
_MB_MAGIC, _MB_FLAGS = 0x1BADB002, 0x00010000
_PROBE_KERNEL = struct.pack("<8I", _MB_MAGIC, _MB_FLAGS, -(_MB_MAGIC + _MB_FLAGS) & 0xffffffff,
                                0x100000, 0x100000, 0, 0, 0x100020) + bytes(
    [0x66, 0xBA, 0x02, 0x04,    # mov $0x402, %dx
     0xB0, 0x4B, 0xEE,          # mov $'K', %al; out %al, %dx
     0xB0, 0x0A, 0xEE,          # mov $'\n', %al; out %al, %dx
     0xFA, 0xF4, 0xEB, 0xFD])   # cli; hlt; jmp back to the hlt


def _probe_kernel_run(accel, timeout=20):
    """QEMU with -accel `accel` runs SeaBIOS (real mode, then 32-bit), its
    option ROM that loads a -kernel, and a kernel of ours in protected mode
    through to its first port write (SeaBIOS reports on the debug port
    0x402, the kernel writes "K" there).  Returns (seconds it took, None),
    or (None, why it did not)."""
    with tempfile.TemporaryDirectory(prefix="vmitest-probe-") as d:
        log = os.path.join(d, "debugcon.txt")
        kernel = os.path.join(d, "probe.mb")
        with open(kernel, "wb") as f:
            f.write(_PROBE_KERNEL)
        cmd = ["qemu-system-i386", "-accel", accel, "-display", "none", "-nodefaults",
               "-monitor", "none", "-serial", "none", "-no-reboot", "-m", "32", "-kernel", kernel,
               "-chardev", f"file,id=dbg,path={log}",
               "-device", "isa-debugcon,iobase=0x402,chardev=dbg"]
        start = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        text = ""
        try:
            while time.monotonic() < start + timeout:
                if os.path.exists(log):
                    with open(log, errors="replace") as f:
                        text = f.read()
                if re.search(r"^K$", text, re.M):
                    return time.monotonic() - start, None
                if proc.poll() is not None:
                    out = proc.stdout.read().decode(errors="replace").strip().splitlines()
                    return None, (f"qemu-system-i386 -accel {accel} exits at once: "
                                  + (out[-1] if out else f"status {proc.returncode}"))
                time.sleep(0.05)
        finally:
            proc.kill()
            proc.wait()
        last = text.strip().splitlines()[-1:] or ["nothing"]
        return None, (f"under -accel {accel} a 46-byte multiboot kernel given to -kernel did not run in "
                      f"{timeout}s (SeaBIOS's last line: {last[0].strip()!r})")


def _kvm_speed_probe():
    """KVM runs the probe kernel, and no slower than TCG does.  A host was
    seen whose /dev/kvm works but runs SeaBIOS 30-40 times slower than
    TCG (4 s against 0.1 s: no hardware virtualization beneath it), and
    Linux still in its decompressor, silent, after 85 s."""
    kvm, why = _probe_kernel_run("kvm")
    if why:
        return why
    tcg, why = _probe_kernel_run("tcg")
    if why:
        return None             # TCG's own trouble is not KVM's: judge KVM by its boot
    if kvm > 2 * tcg + 1.0:
        return (f"this host's KVM is slower than TCG: a 46-byte kernel ran {kvm:.1f} s after QEMU started "
                f"under -accel kvm, {tcg:.1f} s under tcg")
    return None


def kvm_usable():
    """Return None when KVM can run a guest here, else the reason it cannot.

    Decided once per run by probes of its own, not by a test's outcome: no
    /dev/kvm, one that cannot be opened, one that refuses a VM or a vCPU, or a
    KVM under which QEMU cannot run the BIOS and a tiny -kernel of ours, or
    runs them slower than TCG does."""
    if not _KVM_VERDICT:
        if not os.path.exists("/dev/kvm"):
            reason = "no /dev/kvm on this host"
        else:
            reason = _kvm_ioctl_probe() or _kvm_speed_probe()
        _KVM_VERDICT.append(reason)
    return _KVM_VERDICT[0]


def start_make(args, stdout, env_extra=None):
    """`make -s ARGS` in the checkout, as a user starts it: in a process
    group of its own (stop_group() takes the QEMU it starts along), with no
    DISPLAY (no window) and outside the jobserver of a make running us."""
    if _shares_machine():
        raise TestFailure(f"make {' '.join(args)} in a test that shares the machine: register "
                          f"{RUNNING[-1].name} with alone=\"...\" (docs/TESTING.md, \"Two tests at a time\")")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "MAKEFLAGS", "MFLAGS")}
    env.update(env_extra or {})
    return subprocess.Popen(["make", "-s", "--no-print-directory", *args], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=stdout, stderr=subprocess.STDOUT,
                            env=env, start_new_session=True)


def stop_group(proc):
    """Kill a process started by start_make() and everything it started."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


class Console:
    """A process's console on a pipe, read as a person would: what it prints
    (kept in .output and the log), expect() for a regex, send() to type.

    `name` says who exited when the process ends early ("QEMU", "make run")."""

    def __init__(self, proc, log, fatal=None, name="QEMU"):
        self.proc, self.log, self.name = proc, log, name
        self.fatal = FATAL_PATTERNS if fatal is None else fatal
        self.output = ""
        # (seconds since start, len(output)) after each read: when each
        # part of the output arrived, by the host's clock (make compare's
        # boot phases, tests/lib/compare_guest.py).
        self.arrivals = []
        self.cursor = 0          # expect() searches from here on
        self.lock = threading.Condition()
        self.started = time.monotonic()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        while True:
            data = os.read(self.proc.stdout.fileno(), 4096)
            if not data:
                break
            text = data.decode("utf-8", "replace").replace("\r", "")
            with self.lock:
                self.output += text
                self.arrivals.append((time.monotonic() - self.started, len(self.output)))
                self.log.write(text)
                self.log.flush()
                self.lock.notify_all()
        with self.lock:
            self.lock.notify_all()

    def elapsed(self):
        return time.monotonic() - self.started

    def expect(self, pattern, timeout=60, fatal=None):
        """Wait for regex `pattern` in the output after the last match.

        Returns the re.Match.  Fails at once when QEMU exits or a fatal line
        (kernel panic, hypervisor fatal error) appears first; fails on timeout.
        "First" is by position in the output, not by when we looked: a fatal
        line already in the buffer before the match fails too, though both
        arrived in one read.  A fatal line that the match itself starts on
        (a test that waits for a stop line, and declares it fatal otherwise)
        is the one wanted, not one before it.
        """
        fatal = self.fatal if fatal is None else fatal
        rx = re.compile(pattern)
        fatal_rx = [re.compile(p) for p in fatal]
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                m = rx.search(self.output, self.cursor)
                if m:
                    line_start = self.output.rfind("\n", 0, m.start()) + 1
                    for f in fatal_rx:
                        bad = f.search(self.output, self.cursor, max(line_start, self.cursor))
                        if bad:
                            raise TestFailure(f"waiting for /{pattern}/: {bad.group(0).strip()} "
                                              f"(before the match)")
                    self.cursor = m.end()
                    return m
                # Whole lines only: a fatal line quoted half-printed would
                # not say why.
                whole = self.output.rfind("\n") + 1
                if self.proc.poll() is not None and not self.reader.is_alive():
                    whole = len(self.output)
                for f in fatal_rx:
                    bad = f.search(self.output, self.cursor, max(whole, self.cursor))
                    if bad:
                        raise TestFailure(f"waiting for /{pattern}/: {bad.group(0).strip()}")
                if self.proc.poll() is not None and not self.reader.is_alive():
                    tail = self.output[-300:].strip().splitlines()[-3:]
                    raise TestFailure(f"{self.name} exited (status {self.proc.returncode}) before "
                                      f"/{pattern}/ appeared; last output: {' | '.join(tail)}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ExpectTimeout(f"timeout after {timeout}s waiting for /{pattern}/")
                self.lock.wait(min(left, 0.5))

    def send(self, text, delay=0.01):
        """Type text into the serial console, one character at a time."""
        for ch in text.encode():
            self.proc.stdin.write(bytes([ch]))
            self.proc.stdin.flush()
            time.sleep(delay)

    def wait_exit(self, timeout=60):
        """Wait for the process to exit by itself; return its exit status."""
        try:
            status = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise TestFailure(f"{self.name} still running {timeout}s later")
        self.reader.join(5)
        return status


class Qemu(Console):
    """A headless qemu-system-i386 with its serial console on a pipe.

    With monitor=True, QEMU's human monitor listens on a unix socket (in a
    short temporary directory: socket paths are limited to 108 bytes) for
    monitor_command() and vga_screen()/vga_text()."""

    def __init__(self, args, log_path, accel="tcg", fatal=None, monitor=False, debug_exit=True):
        self.log_path = log_path
        self.mon_dir = tempfile.mkdtemp(prefix="vmitest-mon-") if monitor else None
        mon = f"unix:{self.mon_dir}/mon.sock,server=on,wait=off" if monitor else "none"
        self.cmd = ["qemu-system-i386", "-accel", accel, "-display", "none",
                    "-monitor", mon, "-no-reboot", "-nic", "none",
                    "-chardev", "stdio,id=con,signal=off", "-serial", "chardev:con",
                    *(DEBUG_EXIT_DEVICE if debug_exit else []), *args]
        log = open(log_path, "w", errors="replace")
        log.write("# " + " ".join(self.cmd) + "\n")
        log.flush()
        try:
            proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        except FileNotFoundError:
            log.close()
            raise TestFailure("qemu-system-i386 is not installed: run 'make deps' as root "
                              "(Debian package qemu-system-x86)")
        super().__init__(proc, log, fatal)

    def monitor_command(self, command, timeout=30):
        """Run one human-monitor command; return its output (needs monitor=True)."""
        if not self.mon_dir:
            raise TestFailure("monitor_command() needs Qemu(..., monitor=True)")
        path = os.path.join(self.mon_dir, "mon.sock")
        deadline = time.monotonic() + timeout
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            while True:
                try:
                    s.connect(path)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise TestFailure(f"QEMU monitor {path} did not answer")
                    time.sleep(0.2)

            def until_prompt():
                data = b""
                while not data.endswith(b"(qemu) "):
                    chunk = s.recv(4096)
                    if not chunk:
                        raise TestFailure("QEMU monitor closed the connection")
                    data += chunk
                return data.decode("utf-8", "replace")

            until_prompt()                   # banner
            s.sendall(command.encode() + b"\n")
            out = until_prompt()
        # The monitor echoes the command (with terminal escapes) first.
        out = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", out).replace("\r", "")
        return out[:-len("(qemu) ")].split("\n", 1)[-1]

    def vga_screen(self, cols=80, rows=25):
        """The VGA text screen (0xB8000) as rows of (text, attributes)."""
        dump = os.path.join(self.mon_dir or "", "vga.bin")
        if os.path.exists(dump):
            os.remove(dump)
        # Quoted: unquoted, "4000 /tmp/..." would parse as a division.
        out = self.monitor_command(f'pmemsave 0xb8000 {cols * rows * 2} "{dump}"')
        if not os.path.isfile(dump):
            raise TestFailure(f"pmemsave wrote no {dump}; the monitor said {out.strip()!r}")
        with open(dump, "rb") as f:
            data = f.read()
        if len(data) != cols * rows * 2:
            raise TestFailure(f"pmemsave wrote {len(data)} bytes of the VGA text buffer")
        screen = []
        for r in range(rows):
            line = data[r * cols * 2:(r + 1) * cols * 2]
            screen.append((line[0::2].decode("cp437"), bytes(line[1::2])))
        return screen

    def vga_text(self, cols=80, rows=25):
        """The VGA text screen as a list of rows, trailing blanks dropped."""
        return [text.rstrip() for text, _ in self.vga_screen(cols, rows)]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(5)
        self.log.close()
        if self.mon_dir:
            shutil.rmtree(self.mon_dir, ignore_errors=True)


class TestContext:
    def __init__(self, name, alone=False):
        self.name = name
        # Registered alone= (or a benchmark): may use the whole machine.
        self.alone = alone
        self.log_path = os.path.join(LOGDIR, f"{name}.log")
        self.qemus = []
        self.tmpdir = os.path.join(LOGDIR, f"{name}.tmp")

    def qemu(self, *args, accel="tcg", fatal=None, monitor=False, debug_exit=True):
        """Start QEMU with the given arguments; its serial log is the test's log
        (a second QEMU in one test logs to NAME.2.log, and so on).  monitor=True
        gives it a human monitor for q.monitor_command() and q.vga_screen();
        debug_exit=False leaves out isa-debug-exit, as a plain
        `qemu-system-i386 -cdrom vmi-hv.iso` has none."""
        cpus = _cpus_asked(list(args), accel)
        if cpus > 1 and not self.alone:
            self.fail(f"QEMU on {cpus} CPUs (MTTCG: {cpus} host threads) in a test that shares the "
                      f"machine: register {self.name} with alone=\"...\" "
                      f"(docs/TESTING.md, \"Two tests at a time\")")
        if accel == "kvm":
            reason = kvm_usable()
            if reason:
                self.skip(reason)
        n = len(self.qemus) + 1
        path = self.log_path if n == 1 else self.log_path[:-4] + f".{n}.log"
        q = Qemu(list(args), path, accel=accel, fatal=fatal, monitor=monitor, debug_exit=debug_exit)
        self.qemus.append(q)
        return q

    def require(self, *files):
        """Fail with a clear message when a build artifact is missing."""
        for f in files:
            if not os.path.isfile(f):
                self.fail(f"missing build artifact {os.path.relpath(f, ROOT)} (run make)")

    def tmpfile(self, name, data):
        os.makedirs(self.tmpdir, exist_ok=True)
        path = os.path.join(self.tmpdir, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def check(self, cond, message):
        if not cond:
            raise TestFailure(message)

    def fail(self, message):
        raise TestFailure(message)

    def skip(self, reason):
        raise TestSkipped(reason)

    def note(self, text):
        """A figure worth reporting (boot time, ratio): printed with the result."""
        print(f"    {self.name}: {text}", flush=True)

    def cleanup(self):
        for q in self.qemus:
            q.kill()
