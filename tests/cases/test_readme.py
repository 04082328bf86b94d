"""The README's first command works as it says: `make run` boots the ISO in
QEMU with the serial console on the terminal, the default entry reaches the
guest's shell under vmi-hv, and `reboot -f` in the guest ends the session."""

import os
import re
import signal
import subprocess
import threading
import time

from vmitest import paths, test
from hvguest import MARKER, PROMPT, quiet_console


class Terminal:
    """make's stdin and stdout as a person at the terminal sees them."""

    def __init__(self, proc, log):
        self.proc, self.output, self.cursor = proc, "", 0
        self.lock = threading.Lock()
        self.log = open(log, "w", errors="replace")
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for chunk in iter(lambda: os.read(self.proc.stdout.fileno(), 4096), b""):
            text = chunk.decode("utf-8", "replace").replace("\r", "")
            with self.lock:
                self.output += text
            self.log.write(text)
            self.log.flush()

    def expect(self, pattern, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                m = re.compile(pattern).search(self.output, self.cursor)
            if m:
                self.cursor = m.end()
                return m
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        return None

    def send(self, text):
        for ch in text.encode():
            self.proc.stdin.write(bytes([ch]))
            self.proc.stdin.flush()
            time.sleep(0.01)


@test("readme-make-run")
def readme_make_run(t):
    t.require(paths.ISO)
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "MAKEFLAGS", "MFLAGS")}
    proc = subprocess.Popen(["make", "-s", "--no-print-directory", "run"], cwd=paths.ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env, start_new_session=True)
    term = Terminal(proc, t.log_path)
    try:
        t.check(term.expect(r"Booting \S+vmi-hv\.iso in QEMU\. Serial console on this terminal; "
                            r"quit with Ctrl-A X\.", 300), "make run did not say what it boots")
        m = term.expect(MARKER, 300)
        t.check(m and m.group(3) == "vmi", "the default entry did not reach the init marker in vmi mode")
        t.check(term.expect(PROMPT, 60), "no shell prompt")
        quiet_console(term)
        term.send("echo readme-$((6*7))\n")
        t.check(term.expect(r"\nreadme-42\n", 60), "a command typed at the terminal did not run")
        term.send("reboot -f\n")
        try:
            status = proc.wait(60)
        except subprocess.TimeoutExpired:
            t.fail("'reboot -f' did not end the make run session")
        t.note(f"make run: shell under vmi-hv, then 'reboot -f' ended the session (make exit {status})")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
