"""Foundation: the guest kernel and initramfs boot natively, from the ISO and
directly, and the runner turns broken inputs into clear failures."""

import os
import re
import time

from vmitest import TestFailure, paths, test
from hvguest import LINE_END, MARKER, NATIVE_REBOOT, SERIAL_CMDLINE

# Patterns that capture numbers end in \n (or LINE_END) so that a half-printed line never matches.
GUEST_CMDLINE = SERIAL_CMDLINE


def boot_direct(t, extra_cmdline="", accel="tcg", kernel=None, initrd=None):
    t.require(paths.BZIMAGE, paths.INITRD)
    return t.qemu("-m", "128", "-kernel", kernel or paths.BZIMAGE,
                  "-initrd", initrd or paths.INITRD,
                  "-append", f"{GUEST_CMDLINE} {extra_cmdline}".strip(), accel=accel)


def type_and_check(t, q):
    """Type a command at the guest shell and see its output come back."""
    q.expect(r"vmi-guest# ", timeout=30)
    q.send("echo typed-$((6 * 7))-back\n")
    q.expect(r"typed-42-back", timeout=30)


def expect_reboot_exit(t, q):
    """The guest's reboot ends QEMU (-no-reboot) with status 0."""
    status = q.wait_exit(timeout=30)
    t.check(status == NATIVE_REBOOT, f"exit status {status}, expected {NATIVE_REBOOT} (the guest's reboot)")


def run_sanity(t, q):
    q.expect(MARKER, timeout=120)
    m = q.expect(r"SANITY forks=(\d+) execs_ok=(\d+)" + LINE_END, timeout=120)
    t.check(m.group(1) == m.group(2) == "16", f"fork+exec: {m.group(0)}")
    m = q.expect(r"SANITY pipe_bytes=(\d+)" + LINE_END, timeout=60)
    t.check(int(m.group(1)) == 256 * 1024, f"pipe: {m.group(0)}")
    m = q.expect(r"SANITY mmap_pages=(\d+) cow_ok=(\d)" + LINE_END, timeout=60)
    t.check(m.group(1) == "1024" and m.group(2) == "1", f"mmap: {m.group(0)}")
    q.expect(r"SANITY result=PASS", timeout=30)
    q.expect(r"VMITEST-DONE name=sanity rc=0", timeout=30)
    expect_reboot_exit(t, q)


@test("native-iso-boot-shell")
def native_iso_boot_shell(t):
    """GRUB from the ISO, its native entry, the init marker, then the shell."""
    t.require(paths.ISO)
    q = t.qemu("-m", "128", "-cdrom", paths.ISO)
    q.expect(r"Linux guest, native", timeout=60)
    q.send("n")  # the native entry's hotkey
    m = q.expect(MARKER, timeout=120)
    t.check(m.group(3) == "native", f"guest reports mode {m.group(3)}")
    t.note(f"QEMU start to init marker through GRUB: {q.elapsed():.1f}s")
    type_and_check(t, q)
    q.send("reboot -f\n")
    expect_reboot_exit(t, q)


def timed_sanity(t, q, label):
    """Note the time to the init marker, then check the sanity run."""
    m = q.expect(MARKER, timeout=120)
    t.note(f"native boot ({label}), QEMU start to init marker: {q.elapsed():.2f}s, "
           f"guest uptime {m.group(1)}s")
    q.cursor = 0
    run_sanity(t, q)


@test("native-sanity-tcg")
def native_sanity_tcg(t):
    timed_sanity(t, boot_direct(t, "vmitest=sanity"), "TCG")


@test("native-sanity-kvm")
def native_sanity_kvm(t):
    # t.qemu() skips only when kvm_usable()'s own probes find KVM unusable
    # here; once they pass, any failure of this boot is a failure.
    timed_sanity(t, boot_direct(t, "vmitest=sanity", accel="kvm"), "KVM")


@test("native-unknown-test-reported")
def native_unknown_test(t):
    q = boot_direct(t, "vmitest=no-such-test")
    q.expect(r"vmitest: no test program /tests/no-such-test", timeout=120)
    q.expect(r"VMITEST-DONE name=no-such-test rc=127", timeout=30)
    expect_reboot_exit(t, q)


def expect_clear_failure(t, q, must_mention, within):
    """The runner must turn a broken boot into a failure that says why, fast."""
    start = time.monotonic()
    try:
        q.expect(MARKER, timeout=within * 3)
    except TestFailure as e:
        took = time.monotonic() - start
        t.check(re.search(must_mention, str(e)), f"failure does not say why: {e}")
        t.check(took < within, f"failure took {took:.0f}s, not < {within}s: {e}")
        t.note(f"reported in {took:.1f}s: {e}")
        return
    t.fail("a broken boot reached the init marker")


@test("runner-corrupt-initrd")
def runner_corrupt_initrd(t):
    junk = t.tmpfile("initrd.img", os.urandom(256 * 1024))
    q = boot_direct(t, initrd=junk)
    expect_clear_failure(t, q, r"Kernel panic", within=90)


@test("runner-corrupt-kernel")
def runner_corrupt_kernel(t):
    junk = t.tmpfile("bzImage", os.urandom(512 * 1024))
    q = boot_direct(t, kernel=junk)
    expect_clear_failure(t, q, r"QEMU exited", within=30)


@test("runner-missing-initrd")
def runner_missing_initrd(t):
    q = boot_direct(t, initrd=os.path.join(paths.BUILD, "no-such-initrd.img"))
    expect_clear_failure(t, q, r"QEMU exited.*(initrd|No such file)", within=30)
