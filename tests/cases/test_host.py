"""The suite on other hosts (docs/TESTING.md, "Hosts"): a host that cannot execute i386
binaries, no ../shared next to the checkout, a checkout path with spaces or
deep nesting.  Each test starts the real runner (tests/run.py) or make in a
subprocess, with its logs kept apart from this run's."""

import os
import re
import shutil
import subprocess
import sys

import exec32
from vmitest import paths, test

RUNNER = os.path.join(paths.ROOT, "tests", "run.py")
SUMMARY = r"(\d+) passed, (\d+) failed(?:, (\d+) skipped)?\n"


def run_runner(t, args, env_extra, timeout=600, logs="runner"):
    """tests/run.py ARGS with extra environment; returns (output, counts)."""
    logdir = os.path.join(t.tmpdir, logs)
    os.makedirs(logdir, exist_ok=True)
    env = dict(os.environ, VMIHV_TEST_LOGS=logdir, **env_extra)
    proc = subprocess.run([sys.executable, RUNNER, *args], capture_output=True, text=True,
                          env=env, timeout=timeout)
    out = proc.stdout + proc.stderr
    with open(t.log_path, "a") as f:
        f.write(f"# {' '.join(args)} with {env_extra}\n{out}\n")
    m = re.search(SUMMARY, out)
    t.check(m, f"the runner printed no summary line (status {proc.returncode}): {out[-300:]}")
    counts = tuple(int(g or 0) for g in m.groups())
    return out, counts, proc.returncode


def broken_probe(t):
    """An i386 probe whose ELF header no kernel accepts: execve gives
    'Exec format error', as on a host with IA32 emulation off."""
    with open(exec32.PROBE, "rb") as f:
        data = bytearray(f.read())
    data[0x12:0x14] = b"\xff\xff"        # e_machine: no such machine
    path = t.tmpfile("exec32-probe-broken", bytes(data))
    os.chmod(path, 0o755)
    return path


@test("host-exec32-fallback-broken-native")
def host_exec32_fallback_broken_native(t):
    """With native i386 execution broken, the ROM transport suite runs its
    helper under qemu-i386 and passes in full, and says so."""
    t.require(exec32.PROBE)
    probe = broken_probe(t)
    t.check(exec32.probe_native(probe) is not None, "the broken probe ran natively")
    out, (passed, failed, skipped), status = run_runner(
        t, ["-k", "unit/test_vrom_transport"], {"VMIHV_EXEC32_PROBE": probe, "VMIHV_EXEC32": "auto"})
    t.check(re.search(r"32-bit host helpers run under \S*qemu-i386: this host cannot "
                      r"execute i386 binaries \(execve of an i386 program failed: Exec format error\)",
                      out), f"the runner does not say it fell back: {out[:300]}")
    t.check(re.search(r"romexec32 slots ran under \S*qemu-i386", out),
            "the transport test does not say its helper ran under qemu-i386")
    t.check(not re.search(r"romexec32 \w+ ran natively", out), "a helper still ran natively")
    t.check(status == 0 and failed == 0 and skipped == 0 and passed >= 7,
            f"{passed} passed, {failed} failed, {skipped} skipped (status {status})")
    t.note(f"native i386 broken on purpose: {passed} passed, {failed} failed under qemu-i386")


@test("host-exec32-forced-modes")
def host_exec32_forced_modes(t):
    """VMIHV_EXEC32=qemu runs the helper under qemu-i386 whatever the host
    can do; an unknown mode is an error that names the choices; auto follows
    the probe: native when it runs, qemu-i386 when it cannot."""
    out, (passed, failed, _), status = run_runner(
        t, ["-k", "unit/test_vrom_transport"], {"VMIHV_EXEC32": "qemu"}, logs="qemu")
    t.check(re.search(r"run under \S*qemu-i386 \(forced by VMIHV_EXEC32=qemu\)", out),
            f"forced qemu not reported: {out[:200]}")
    t.check(status == 0 and failed == 0 and passed >= 7, f"forced qemu: {passed} passed, {failed} failed")
    bad = exec32.decide("sometimes")
    t.check(bad.how is None and "auto, native, qemu" in bad.why, f"bad mode: {bad.why}")
    # auto against probes whose outcome the test fixes: one that prints
    # the probe's line (a script: it runs whatever the host), one that no
    # kernel executes.
    good = t.tmpfile("exec32-probe-good", f"#!/bin/sh\necho '{exec32.PROBE_OUTPUT}'\n".encode())
    os.chmod(good, 0o755)
    auto = exec32.decide("auto", probe=good)
    t.check(auto.how == "native", f"auto chose {auto.how} although the probe ran: {auto.why}")
    auto = exec32.decide("auto", probe=broken_probe(t))
    want = "qemu-i386" if shutil.which("qemu-i386") else None
    t.check(auto.how == want and "cannot execute i386" in auto.why,
            f"auto chose {auto.how} ({auto.why}) although the probe failed; wanted {want}")
    auto = exec32.decide("auto")
    t.note(f"this host: auto runs i386 helpers {auto.why}")


@test("host-no-shared-seeds")
def host_no_shared_seeds(t):
    """Without ../shared (the VMware seeds) the seed comparison is a counted
    skip with its reason; everything else in the ABI suite still runs."""
    out, (passed, failed, skipped), status = run_runner(
        t, ["-k", "unit/test_vmi_abi_sync"],
        {"VMI_SEED": os.path.join(t.tmpdir, "no-shared", "seed.patch")})
    t.check(re.search(r"SKIP unit/test_vmi_abi_sync/test_seed_agreement: the VMware seed .* "
                      r"is not readable", out), f"no skip with a reason: {out[-400:]}")
    t.check(status == 0 and failed == 0 and skipped == 1 and passed >= 5,
            f"{passed} passed, {failed} failed, {skipped} skipped")


@test("host-checkout-path-with-space")
def host_checkout_path_with_space(t):
    """make refuses a checkout path with a space at once, and says why
    (GNU make and the kernel build cannot work there)."""
    d = os.path.join(t.tmpdir, "with space")
    os.makedirs(d, exist_ok=True)
    shutil.copy(os.path.join(paths.ROOT, "Makefile"), d)
    proc = subprocess.run(["make", "-C", d, "-n", "test"], capture_output=True, text=True, timeout=60)
    t.check(proc.returncode != 0, "make accepted a path with a space")
    t.check(re.search(r"contains a space; GNU make and the Linux kernel build\s+cannot work there",
                      proc.stderr), f"unclear error: {proc.stderr.strip()}")


@test("host-deep-checkout-path", alone="builds the unit tests in a clone with make and runs them")
def host_deep_checkout_path(t):
    """A clone of this commit 300 characters deep builds its unit tests and
    passes them (absolute paths are baked into the binaries, and command
    lines must not be cut)."""
    # .git is a directory in a clone and a file in a worktree: ask git.
    if subprocess.run(["git", "-C", paths.ROOT, "rev-parse", "--git-dir"],
                      capture_output=True).returncode != 0:
        t.skip("not a git checkout: nothing to clone")
    head = subprocess.run(["git", "-C", paths.ROOT, "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    deep = os.path.join(t.tmpdir, *(["deeply-nested-directory-level"] * 10), "vmi-hv")
    shutil.rmtree(os.path.join(t.tmpdir, "deeply-nested-directory-level"), ignore_errors=True)
    subprocess.run(["git", "clone", "-q", "--no-checkout", paths.ROOT, deep], check=True, timeout=120)
    subprocess.run(["git", "-C", deep, "checkout", "-q", head], check=True, timeout=60)
    # The working tree's changes too, so that what is tested is what is here.
    diff = subprocess.run(["git", "-C", paths.ROOT, "diff", "HEAD", "--binary"],
                          capture_output=True, timeout=60).stdout
    if diff:
        subprocess.run(["git", "-C", deep, "apply", "--binary", "-"], input=diff, check=True, timeout=60)
    for f in subprocess.run(["git", "-C", paths.ROOT, "ls-files", "--others", "--exclude-standard"],
                            capture_output=True, text=True).stdout.split():
        os.makedirs(os.path.dirname(os.path.join(deep, f)), exist_ok=True)
        shutil.copy(os.path.join(paths.ROOT, f), os.path.join(deep, f))
    t.check(len(deep) > 300, f"only {len(deep)} characters deep")
    build = subprocess.run(["make", "-C", deep, "unit"], capture_output=True, text=True, timeout=600)
    with open(t.log_path, "a") as f:
        f.write(build.stdout + build.stderr)
    t.check(build.returncode == 0, f"make unit failed at depth {len(deep)}: "
                                   f"{(build.stdout + build.stderr)[-300:]}")
    env = dict(os.environ, VMIHV_TEST_LOGS=os.path.join(deep, "test-logs"))
    proc = subprocess.run([sys.executable, os.path.join(deep, "tests", "run.py"), "-k", "unit/"],
                          capture_output=True, text=True, env=env, timeout=900)
    out = proc.stdout + proc.stderr
    with open(t.log_path, "a") as f:
        f.write(out)
    m = re.search(SUMMARY, out)
    t.check(m and m.group(2) == "0" and proc.returncode == 0,
            f"unit tests at depth {len(deep)}: {m.group(0).strip() if m else out[-300:]}")
    t.note(f"checkout {len(deep)} characters deep: {m.group(0).strip()}")
    shutil.rmtree(os.path.join(t.tmpdir, "deeply-nested-directory-level"), ignore_errors=True)


@test("host-qemu-missing")
def host_qemu_missing(t):
    """Without qemu-system-i386 on PATH a QEMU test fails at once with what
    to install, not with a Python traceback."""
    code = ("import sys; sys.path.insert(0, %r); import vmitest\n"
            "try:\n    vmitest.Qemu([], %r)\nexcept vmitest.TestFailure as e:\n    print('FAILURE:', e)\n"
            % (os.path.join(paths.ROOT, "tests", "lib"), os.path.join(t.tmpdir, "q.log")))
    os.makedirs(t.tmpdir, exist_ok=True)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PATH=os.path.join(t.tmpdir, "empty-path")))
    t.check(re.search(r"FAILURE: qemu-system-i386 is not installed: run 'make deps'", proc.stdout),
            f"unclear: {proc.stdout.strip()} {proc.stderr.strip()[-300:]}")


@test("host-runner-k-no-match")
def host_runner_k_no_match(t):
    """A -k that matches no test (a typo) makes the runner fail, exit
    status 2, naming the pattern, instead of "0 passed, 0 failed"; one
    such -k beside a good one fails too."""
    for args in (["--no-unit", "-k", "no-such-test-anywhere"],
                 ["--no-unit", "-k", "host-qemu-missing", "-k", "no-such-test-anywhere"]):
        env = dict(os.environ, VMIHV_TEST_LOGS=os.path.join(t.tmpdir, "runner"))
        proc = subprocess.run([sys.executable, RUNNER, *args], capture_output=True, text=True,
                              env=env, timeout=120)
        out = proc.stdout + proc.stderr
        with open(t.log_path, "a") as f:
            f.write(f"# {' '.join(args)}: status {proc.returncode}\n{out}\n")
        t.check(proc.returncode == 2, f"{' '.join(args)}: exit status {proc.returncode}, expected 2: {out[-300:]}")
        t.check("no test matches -k 'no-such-test-anywhere'" in proc.stderr,
                f"{' '.join(args)}: the runner does not name the pattern: {out[-300:]}")
        t.check("PASS host-qemu-missing" not in out, f"{' '.join(args)}: ran tests before refusing")


# What apt-get update says when a mirror is caught mid-sync (seen on a
# Debian mirror: one i386 security index failed its size check).
MIRROR_SYNC_INDEX = "http://deb.debian.org/debian-security/dists/bookworm-security/main/binary-i386/Packages.xz"
MIRROR_SYNC_ERROR = (
    f"E: Failed to fetch {MIRROR_SYNC_INDEX}  File has unexpected size (188096 != 187696). "
    "Mirror sync in progress? [IP: 151.101.2.132 80]\n"
    "   Hashes of expected file:\n"
    "    - Filesize:187696 [weak]\n"
    "E: Some index files failed to download. They have been ignored, or old ones used instead.\n")


def run_deps_with_fake_apt(t, name, install_status):
    """scripts/deps.sh with PATH-shimmed dpkg-query (a package missing),
    id (root), dpkg, apt-get (update fails as on a mirror mid-sync, exit
    100; install exits install_status) and sleep (no wait).  Returns
    (exit status, stderr, the apt-get command lines it ran)."""
    shims = os.path.join(t.tmpdir, name)
    os.makedirs(shims, exist_ok=True)
    calls = os.path.join(shims, "apt-get.calls")
    with open(os.path.join(shims, "mirror-sync.txt"), "w") as f:
        f.write(MIRROR_SYNC_ERROR)
    scripts = {
        "dpkg-query": "#!/bin/sh\nexit 1\n",
        "id": "#!/bin/sh\n[ \"$1\" = -u ] && echo 0 && exit 0\nexit 1\n",
        "dpkg": "#!/bin/sh\n[ \"$1\" = --print-foreign-architectures ] && echo i386\nexit 0\n",
        "sleep": "#!/bin/sh\nexit 0\n",
        "apt-get": ("#!/bin/sh\n"
                    f"echo \"$*\" >> '{calls}'\n"
                    "case \"$1\" in\n"
                    f"update) cat '{shims}/mirror-sync.txt' >&2; exit 100 ;;\n"
                    f"install) exit {install_status} ;;\n"
                    "esac\nexit 1\n"),
    }
    for tool, text in scripts.items():
        path = os.path.join(shims, tool)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o755)
    env = dict(os.environ, PATH=shims + os.pathsep + os.environ["PATH"])
    proc = subprocess.run(["bash", os.path.join(paths.ROOT, "scripts", "deps.sh")], capture_output=True,
                          text=True, env=env, timeout=60)
    with open(t.log_path, "a") as f:
        f.write(f"# deps.sh, install exits {install_status}: status {proc.returncode}\n"
                f"{proc.stdout}{proc.stderr}\n")
    with open(calls) if os.path.exists(calls) else open(os.devnull) as f:
        apt = f.read().splitlines()
    return proc.returncode, proc.stderr, apt


@test("host-deps-mirror-sync")
def host_deps_mirror_sync(t):
    """make deps on a mirror caught mid-sync (apt-get update fails, exit
    100, one index with "File has unexpected size ... Mirror sync in
    progress?"): deps.sh tries the update three times, names the index
    that failed, installs anyway and succeeds.  No real apt is touched."""
    status, err, apt = run_deps_with_fake_apt(t, "install-works", 0)
    updates = [c for c in apt if c.startswith("update")]
    installs = [c for c in apt if c.startswith("install")]
    t.check(len(updates) == 3, f"{len(updates)} apt-get update attempts, expected 3: {apt}")
    t.check(MIRROR_SYNC_INDEX in err, f"the failing index is not named on stderr: {err[-400:]}")
    t.check(len(installs) == 1 and "qemu-system-x86" in installs[0], f"no install after the failed update: {apt}")
    t.check(status == 0, f"deps.sh exited {status}, expected 0 (the install succeeded): {err[-400:]}")


@test("host-deps-install-fails")
def host_deps_install_fails(t):
    """The same failed update, and then the install fails too: deps.sh
    exits non-zero with an error naming what it could not install."""
    status, err, apt = run_deps_with_fake_apt(t, "install-fails", 100)
    t.check(status != 0, f"deps.sh exited 0 although the install failed: {err[-400:]}")
    t.check(re.search(r"deps: error: could not install: .*qemu-system-x86", err),
            f"no clear error on stderr: {err[-400:]}")
    t.check(sum(c.startswith("install") for c in apt) == 1, f"apt-get calls: {apt}")
