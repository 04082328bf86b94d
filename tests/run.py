#!/usr/bin/env python3
"""vmi-hv test runner.

Runs the host-side unit tests (every executable in build/tests/unit, TAP
output from cmocka) and the QEMU tests (tests/cases/test_*.py), then prints
    N passed, N failed[, N skipped]
as its last line.  Exit status 0 only when nothing failed.

    tests/run.py                 everything
    tests/run.py -k native       only tests whose name contains "native"
                                 (-k may be repeated: any of them; a -k
                                 that matches no test is an error, exit 2)
    tests/run.py --bench         only the benchmarks: side-by-side figures
    tests/run.py --list          list test names
    tests/run.py -j 1            one test at a time (default: two at a time
                                 on a machine with two CPUs or more; a test
                                 registered alone= or bench=True always runs
                                 by itself)
Serial logs go to test-logs/NAME.log; the paths of failing tests' logs are printed.
"""

import argparse
import glob
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import exec32  # noqa: E402
import vmitest  # noqa: E402
from vmitest import LOGDIR, REGISTRY, TestContext, TestFailure, TestSkipped, alone_reason, paths  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


class Tally:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.seconds = 0.0      # the tests' own times, summed
        self.failures = []

    def record(self, name, outcome, detail="", seconds=None, log=None):
        if seconds is not None:
            self.seconds += seconds
        took = f" ({seconds:.1f}s)" if seconds is not None else ""
        if outcome == "PASS":
            self.passed += 1
            print(f"PASS {name}{took}", flush=True)
        elif outcome == "SKIP":
            self.skipped += 1
            print(f"SKIP {name}: {detail}", flush=True)
        else:
            self.failed += 1
            where = f"\n     log: {os.path.relpath(log, paths.ROOT)}" if log and os.path.exists(log) else ""
            print(f"FAIL {name}{took}: {detail}{where}", flush=True)
            self.failures.append(name)

    def summary(self):
        line = f"{self.passed} passed, {self.failed} failed"
        if self.skipped:
            line += f", {self.skipped} skipped"
        return line


# cmocka's TAP: "1..N", then "ok N - name", "not ok N - name", or for a
# skipped case "not ok N # SKIP name"; comment lines start with "#".  A unit
# test states a skip's reason on the comment line just before it.
TAP_PLAN = re.compile(r"^1\.\.(\d+)$")
TAP_RESULT = re.compile(r"^(ok|not ok) (\d+)(?: - (.*?))?(?:\s*#\s*(SKIP|skip)\b\s*(.*))?$")
# "# note: ..." lines are figures or facts a unit test wants shown with its result.
TAP_NOTE = re.compile(r"^# note: (.*)$")


def selected(name, patterns):
    return not patterns or any(p in name for p in patterns)


def unmatched(patterns, names):
    """The -k patterns that select none of names: a typo would otherwise
    run nothing and report "0 passed, 0 failed", which reads as a pass."""
    return [p for p in patterns or [] if not any(p in n for n in names)]


def unit_suites():
    """The unit suites that must exist: one binary per tests/unit/test_*.c
    (a binary that failed to build is a failure, not a silent omission)."""
    return sorted(os.path.splitext(os.path.basename(c))[0]
                  for c in glob.glob(os.path.join(HERE, "unit", "test_*.c")))


def parse_tap(output):
    """Yield (kind, number, name, detail) for each result line of a TAP stream,
    and ("plan", N, None, None) for the plan line."""
    last_comment = ""
    for raw in output.splitlines():
        line = raw.strip()
        m = TAP_PLAN.match(line)
        if m:
            yield "plan", int(m.group(1)), None, None
            continue
        m = TAP_RESULT.match(line)
        if m:
            verdict, number, name, skip, reason = m.groups()
            if skip and not name:       # cmocka: "not ok N # SKIP name"
                yield "skip", int(number), (reason or "?").strip(), last_comment or "skipped, no reason given"
            elif skip:                  # plain TAP: "ok N - name # SKIP reason"
                yield "skip", int(number), name.strip(), reason or last_comment or "skipped, no reason given"
            else:
                yield ("pass" if verdict == "ok" else "fail"), int(number), (name or "?").strip(), None
            last_comment = ""
            continue
        if line.startswith("#"):
            m = TAP_NOTE.match(line)
            if m:
                yield "note", 0, None, m.group(1)
            last_comment = re.sub(r"^#\s*(SKIP(PED)?:?\s*)?", "", line)


def run_unit_tests(tally, pattern):
    """Each cmocka case in each unit binary counts as one test."""
    ex32 = exec32.decide()
    print(f"32-bit host helpers run {ex32.why}", flush=True)
    env = dict(os.environ, CMOCKA_MESSAGE_OUTPUT="TAP", **ex32.environ())
    for suite in unit_suites():
        if not selected(f"unit/{suite}", pattern):
            continue
        binary = os.path.join(paths.UNIT, suite)
        if not os.access(binary, os.X_OK):
            tally.record(f"unit/{suite}", "FAIL",
                         f"the unit binary {os.path.relpath(binary, paths.ROOT)} is missing (make unit)")
            continue
        log = os.path.join(LOGDIR, f"unit-{suite}.log")
        start = time.monotonic()
        try:
            proc = subprocess.run([binary], capture_output=True, text=True, env=env, timeout=300)
            output, status = proc.stdout + proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as e:
            output, status = str(e.stdout or ""), None
        with open(log, "w") as f:
            f.write(output)
        plan, seen, notes, failed = None, set(), [], 0
        for kind, number, name, detail in parse_tap(output):
            if kind == "plan":
                plan = number
                continue
            if kind == "note":
                if detail not in notes:
                    notes.append(detail)
                continue
            seen.add(number)
            full = f"unit/{suite}/{name}"
            if kind == "skip":
                tally.record(full, "SKIP", detail)
            elif kind == "pass":
                tally.record(full, "PASS")
            else:
                failed += 1
                tally.record(full, "FAIL", "cmocka case failed", log=log)
        for note in notes:
            print(f"    unit/{suite}: {note}", flush=True)
        if status is None:
            tally.record(f"unit/{suite}", "FAIL", "timed out after 300s", time.monotonic() - start, log)
        elif plan is None:
            tally.record(f"unit/{suite}", "FAIL", f"no TAP plan (exit status {status})", log=log)
        elif seen != set(range(1, plan + 1)):
            tally.record(f"unit/{suite}", "FAIL",
                         f"TAP plan 1..{plan} but results for {len(seen)} case(s) "
                         f"(exit status {status})", log=log)
        elif status != 0 and not failed:
            tally.record(f"unit/{suite}", "FAIL", f"exit status {status} with all cases ok", log=log)


def load_cases():
    for path in sorted(glob.glob(os.path.join(HERE, "cases", "test_*.py"))):
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


def run_one(name, fn, opts):
    """Run one QEMU test here; returns (outcome, detail, seconds, log)."""
    t = TestContext(name, alone=alone_reason(opts) is not None)
    vmitest.RUNNING.append(t)
    start = time.monotonic()
    try:
        fn(t)
        return "PASS", "", time.monotonic() - start, None
    except TestSkipped as e:
        return "SKIP", str(e), None, None
    except TestFailure as e:
        return "FAIL", str(e), time.monotonic() - start, t.log_path
    except Exception as e:  # a bug in the test itself is a failure too
        return "FAIL", f"{type(e).__name__}: {e}", time.monotonic() - start, t.log_path
    finally:
        t.cleanup()
        vmitest.RUNNING.pop()


class Forked:
    """One test in a child process of its own (its own globals, working
    directory and environment), its printed lines (t.note) kept in a file
    and shown with its result line when it ends, so that two tests' lines
    never interleave."""

    def __init__(self, name, fn, opts):
        self.name = name
        self.alone = alone_reason(opts) is not None
        self.output = tempfile.TemporaryFile()
        self.result = tempfile.TemporaryFile()
        self.started = time.monotonic()
        sys.stdout.flush()
        sys.stderr.flush()
        self.pid = os.fork()
        if self.pid == 0:
            status = 1
            try:
                os.dup2(self.output.fileno(), 1)
                os.dup2(self.output.fileno(), 2)
                outcome = run_one(name, fn, opts)
                sys.stdout.flush()
                sys.stderr.flush()
                self.result.write(json.dumps(outcome).encode())
                self.result.flush()
                status = 0
            finally:
                os._exit(status)

    def finish(self, status):
        """(printed lines, (outcome, detail, seconds, log)) once the child ended."""
        self.output.seek(0)
        printed = self.output.read().decode("utf-8", "replace")
        self.result.seek(0)
        data = self.result.read()
        if data:
            outcome = tuple(json.loads(data))
        else:
            outcome = ("FAIL", f"the test's process ended without a result (wait status {status})",
                       time.monotonic() - self.started, os.path.join(LOGDIR, f"{self.name}.log"))
        return printed, outcome


def run_qemu_tests(tally, pattern, bench_only, jobs):
    chosen = [(name, fn, opts) for name, fn, opts in REGISTRY
              if selected(name, pattern) and (not bench_only or opts.get("bench"))]
    if jobs <= 1:
        for name, fn, opts in chosen:
            tally.record(name, *run_one(name, fn, opts))
        return
    # Those that may share first, `jobs` at a time, in registration order;
    # then those that need the machine to themselves, one by one.
    queue = [c for c in chosen if alone_reason(c[2]) is None] + \
            [c for c in chosen if alone_reason(c[2]) is not None]
    running = {}
    while queue or running:
        while queue and (not running or (len(running) < jobs and alone_reason(queue[0][2]) is None
                                         and not any(j.alone for j in running.values()))):
            job = Forked(*queue.pop(0))
            running[job.pid] = job
        pid, status = os.wait()
        job = running.pop(pid, None)
        if job is None:
            continue
        printed, outcome = job.finish(status)
        sys.stdout.write(printed)
        tally.record(job.name, *outcome)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", dest="pattern", action="append",
                    help="run only tests whose name contains this (repeatable)")
    ap.add_argument("--bench", action="store_true",
                    help="run only the benchmarks (tests that measure side by side and print figures)")
    ap.add_argument("--list", action="store_true", help="list the tests and exit")
    ap.add_argument("--no-unit", action="store_true", help="skip the host-side unit tests")
    ap.add_argument("-j", dest="jobs", type=int, default=min(os.cpu_count() or 1, 2),
                    help="QEMU tests run at once (default: the CPUs, at most 2; tests registered "
                         "alone= or bench=True always run by themselves)")
    args = ap.parse_args()
    if args.jobs < 1:
        ap.error("-j takes a number of tests, 1 or more")

    load_cases()
    if args.list:
        for name, _, opts in REGISTRY:
            why = alone_reason(opts)
            print(name + ("  (benchmark)" if opts.get("bench") else "") +
                  (f"  (alone: {why})" if why and not opts.get("bench") else ""))
        return 0

    candidates = [name for name, _, opts in REGISTRY if not args.bench or opts.get("bench")]
    if not args.no_unit and not args.bench:
        candidates += [f"unit/{suite}" for suite in unit_suites()]
    missing = unmatched(args.pattern, candidates)
    if missing:
        what = "benchmark" if args.bench else "test"
        where = " (the unit suites are left out: --no-unit)" if args.no_unit else ""
        for p in missing:
            print(f"error: no {what} matches -k {p!r}{where}; tests/run.py --list lists them",
                  file=sys.stderr)
        return 2

    shutil.rmtree(LOGDIR, ignore_errors=True)
    os.makedirs(LOGDIR)
    tally = Tally()
    started = time.monotonic()
    if not args.no_unit and not args.bench:
        run_unit_tests(tally, args.pattern)
    run_qemu_tests(tally, args.pattern, args.bench, args.jobs)
    print(f"test time {time.monotonic() - started:.0f}s ({tally.seconds:.0f}s of tests, "
          f"up to {args.jobs} at a time); logs in {os.path.relpath(LOGDIR)}/")
    if tally.failures:
        print("failed: " + " ".join(tally.failures))
    print(tally.summary(), flush=True)
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
