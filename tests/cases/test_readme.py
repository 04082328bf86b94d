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


@test("readme-make-stress")
def readme_make_stress(t):
    """`make stress` as the README shows it, shortened (1 then 2 workers,
    2 rounds): each run passes under audit=every=1 with 0 mismatches and
    the shadow pages come back to the baseline."""
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    out = os.path.join(t.tmpdir, "stress")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS")}
    proc = subprocess.run(["make", "-s", "--no-print-directory", "stress",
                           f"STRESSARGS=--workers 1,2 --rounds 2 --out {out}"],
                          cwd=paths.ROOT, capture_output=True, text=True, env=env, timeout=600)
    text = proc.stdout + proc.stderr
    with open(t.log_path, "w") as f:
        f.write(text)
    t.check(proc.returncode == 0, f"make stress exited {proc.returncode}: {text[-400:]}")
    runs = re.findall(r"ptstress x(\d+) \(2 rounds, [0-9.]+ s\): (\d+)/(\d+) PASS", text)
    t.check([r[0] for r in runs] == ["1", "2"] and all(r[1] == r[2] for r in runs),
            f"ptstress runs: {runs}")
    audits = re.findall(r"audit \(every=1\): (\d+) audits, (\d+) entries checked, (\d+) mismatches", text)
    t.check(len(audits) == 2 and all(int(a[0]) > 0 and a[2] == "0" for a in audits),
            f"audit lines: {audits}")
    pages = re.findall(r"shadow pages: baseline (\d+), peak (\d+), end (\d+)", text)
    t.check(len(pages) == 2 and all(p[0] == p[2] and int(p[1]) > int(p[0]) for p in pages),
            f"shadow pages: {pages}")
    t.note(f"make stress (short): {audits[0][0]}+{audits[1][0]} audits, 0 mismatches, shadow pages {pages}")
