"""Several guests at once (issue 15): each pair of multiboot modules
(a bzImage with its command line, then its initrd) is one guest, with the
guestN.mem=, guestN.name= and guestN.weight= hypervisor options.  Loading
two guests; a module list that does not pair up, and guests that do not
fit the machine together, stop at load time naming the guest."""

import re
import time

from vmitest import paths, test
from hvguest import (BAD_INPUT, DONE, GUEST_FATAL, GUEST_REBOOT, REGS, SERIAL_CMDLINE,
                     stays_responsive)


def hv(t, modules=None, append=None, mem="320"):
    """The hypervisor from QEMU's multiboot loader; modules is the -initrd
    string (comma-separated "path args" items)."""
    t.require(paths.HV_ELF)
    args = ["-m", mem, "-kernel", paths.HV_ELF]
    if modules is not None:
        args += ["-initrd", modules]
    if append is not None:
        args += ["-append", append]
    return t.qemu(*args)


def guest_modules(cmdline=SERIAL_CMDLINE, initrd=True):
    """One guest's module pair (QEMU splits -initrd at single commas)."""
    mods = f"{paths.BZIMAGE} {cmdline}".replace(",", ",,")
    return mods + ("," + paths.INITRD if initrd else "")


def expect_error(t, q, pattern):
    """One error line matching pattern, then a clean stop with status 5."""
    q.expect(r"vmi-hv: error: " + pattern, timeout=30)
    status = q.wait_exit(timeout=30)
    t.check(status == BAD_INPUT, f"exit status {status}, expected {BAD_INPUT}")
    t.check(q.output.count("vmi-hv: error:") == 1, "not exactly one error line")


def two_pairs(second_cmdline=None):
    second = guest_modules() if second_cmdline is None else guest_modules(cmdline=second_cmdline)
    return guest_modules() + "," + second


@test("hv-multi-load-two-guests")
def hv_multi_load_two_guests(t):
    t.require(paths.BZIMAGE, paths.INITRD)
    q = hv(t, two_pairs(), append="guest_mem=48M guest2.name=web guest2.weight=3 after_load=stop",
           mem="320")
    q.expect(r"vmi-hv: stopped \(exit code 1\): guests loaded and checked", timeout=60)
    status = q.wait_exit(timeout=30)
    t.check(status == DONE, f"exit status {status}, expected {DONE}")
    t.check("vmi-hv: 2 guests from 4 modules" in q.output, "no '2 guests from 4 modules' line")
    t.check("vmi-hv: guest 1 (guest1): modules 1 and 2, 48 MiB, weight 1" in q.output,
            "guest 1's line is missing or wrong")
    t.check("vmi-hv: guest 2 (web): modules 3 and 4, 48 MiB, weight 3" in q.output,
            "guest 2's line is missing or wrong")
    loaded = len(re.findall(r"guest loaded and checked; released \d+ KiB", q.output))
    t.check(loaded == 2, f"{loaded} guests loaded, expected 2")
    t.check(q.output.count("guest memory: 48 MiB") == 2, "not two guests of 48 MiB")


@test("hv-multi-error-unpaired")
def hv_multi_error_unpaired(t):
    t.require(paths.BZIMAGE, paths.INITRD)
    q = hv(t, two_pairs() + "," + guest_modules(initrd=False), append="guest3.name=db", mem="320")
    expect_error(t, q, r"guest 3 \(db\): no initrd: module 5, its bzImage, is the last one")


@test("hv-multi-error-memory")
def hv_multi_error_memory(t):
    t.require(paths.BZIMAGE, paths.INITRD)
    q = hv(t, two_pairs(), append="guest_mem=96M guest2.name=web", mem="160")
    expect_error(t, q, r"guest 2 \(web\): 96M of memory does not fit: \d+ KiB free for all guests")


@test("hv-multi-error-option")
def hv_multi_error_option(t):
    q = hv(t, append="guest1.weight=0")
    expect_error(t, q, r"malformed option 'guest1.weight=0': a guest's weight is 1-100")


# ---- two Linux guests at once (the scheduler) ---------------------------

def expect_all(q, patterns, timeout=300):
    """Each regex somewhere after the current point, in any order (two
    guests' output interleaves); returns the matches, the cursor after the
    last of them."""
    start, end, found = q.cursor, q.cursor, []
    for p in patterns:
        q.cursor = start
        m = q.expect(p, timeout=timeout)
        found.append(m)
        end = max(end, m.end())
    q.cursor = end
    return found


def prompt(name):
    return r"\[%s\] [^\n]*vmi-guest# " % re.escape(name)


def two_linux_guests(t, second_cmdline=SERIAL_CMDLINE, append=""):
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    mods = guest_modules() + "," + guest_modules(cmdline=second_cmdline)
    return t.qemu("-m", "400", "-kernel", paths.HV_ELF, "-initrd", mods, "-append",
                  f"guest_mem=64M guest1.name=one guest2.name=two {append}".strip(),
                  fatal=[p for p in GUEST_FATAL if "guest stopped" not in p])


def type_into(t, q, n, name, word):
    """Give guest n the console, run a command there: its answer comes back
    from that guest only."""
    q.send("\x1d%d" % n)
    q.expect(r"vmi-hv: console input goes to guest %d \(%s\)" % (n, name), timeout=60)
    q.send("\n")
    q.expect(prompt(name), timeout=120)
    before = len(q.output)
    q.send(f"echo {word}-$((6 * 7))-back\n")
    q.expect(r"\[%s\] %s-42-back\n" % (name, word), timeout=120)
    answers = re.findall(r"\[(\w+)\] %s-42-back" % word, q.output[before:])
    t.check(answers == [name], f"'{word}' answered by {answers}, expected only {name}")


@test("hv-multi-two-linux-guests")
def hv_multi_two_linux_guests(t):
    q = two_linux_guests(t)
    q.expect(r"vmi-hv: 2 guests share the CPU: 10000 us slices", timeout=60)
    expect_all(q, [prompt("one"), prompt("two")], timeout=400)
    t.note(f"both guests at their shells {q.elapsed():.1f}s after QEMU started")
    type_into(t, q, 1, "one", "first")
    type_into(t, q, 2, "two", "second")
    q.send("\x1dl")
    expect_all(q, [r"\* 2 two +(running|halted|runnable) +weight 1",
                   r"  1 one +(running|halted|runnable) +weight 1"], timeout=60)
    # Both reboot; only the last one ends the hypervisor.
    q.send("reboot -f\n")
    q.expect(r"vmi-hv: guest 2 \(two\) has ended; 1 other goes on", timeout=120)
    q.expect(r"vmi-hv: guest reboot: ", timeout=60)
    q.send("\n")
    q.expect(prompt("one"), timeout=120)
    q.send("reboot -f\n")
    q.expect(r"vmi-hv: stopped \(exit code 7\): guest reboot", timeout=120)
    status = q.wait_exit(timeout=30)
    t.check(status == GUEST_REBOOT, f"exit status {status}, expected {GUEST_REBOOT}")


@test("hv-multi-rule-breaker")
def hv_multi_rule_breaker(t):
    q = two_linux_guests(t, f"{SERIAL_CMDLINE} vmi_selftest=bad-descriptor")
    q.expect(r"vmi-hv: guest 2 \(two\) has ended; 1 other goes on", timeout=400)
    m = q.expect(r"vmi-hv: guest stopped: ([^\n]*)\n", timeout=60)
    t.check(m.group(1).startswith("WriteGDTEntry 28"), f"stop reason {m.group(1)}")
    q.expect(REGS, timeout=30)
    q.send("\x1d2")
    q.expect(r"vmi-hv: guest 2 \(two\) has ended; the console stays with one", timeout=60)
    q.expect(prompt("one"), timeout=400)
    type_into(t, q, 1, "one", "still")
    q.send("\x1dq")
    q.expect(r"vmi-hv: guest stopped: stopped from the console", timeout=60)
    stays_responsive(t, q)


TIME_LINE = (r"vmi-hv: vcpu time: guest (\d) \((\w+)\) vcpu 0: real=(\d+) available=(\d+) stolen=(\d+) "
             r"cycles \(running=(\d+) halted=(\d+)\); \d+ of \d+ ms stolen\n")


def vcpu_times(t, q):
    """Ctrl-] s: every vCPU's real, available and stolen cycles, which must
    add up exactly."""
    q.send("\x1ds")
    q.expect(r"vmi-hv: statistics \(guest running, hypervisor up \d+ ms, \d+ timer interrupts\):", timeout=60)
    found = {}
    for _ in range(2):
        m = q.expect(TIME_LINE, timeout=60)
        real, avail, stolen, running, halted = map(int, m.groups()[2:])
        t.check(avail + stolen == real, f"guest {m.group(2)}: available {avail} + stolen {stolen} != real {real}")
        t.check(running + halted == avail, f"guest {m.group(2)}: running + halted != available")
        found[m.group(2)] = (real, stolen, running)
    return found


def both_busy(t, append=""):
    """Two guests at their shells, each running a busy loop; their time
    (real, stolen, running cycles) over 6 seconds of that.  The window is
    long because the TSC runs on while the host deschedules QEMU, which
    is charged to whichever guest had the CPU."""
    q = two_linux_guests(t, append=append)
    expect_all(q, [prompt("one"), prompt("two")], timeout=400)
    for n, name in ((1, "one"), (2, "two")):
        q.send("\x1d%d" % n)
        q.expect(r"vmi-hv: console input goes to guest %d \(%s\)" % (n, name), timeout=60)
        q.send("while :; do :; done &\n")
        q.expect(prompt(name), timeout=120)
    before = vcpu_times(t, q)
    time.sleep(6)
    after = vcpu_times(t, q)
    spent = {name: tuple(a - b for a, b in zip(after[name], before[name])) for name in after}
    return q, spent


def end_both(q):
    q.send("\x1dq")
    q.expect(r"has ended; 1 other goes on", timeout=60)
    q.send("\x1dq")
    q.expect(r"has ended; 0 others go on", timeout=60)


@test("hv-multi-stolen-time")
def hv_multi_stolen_time(t):
    q, spent = both_busy(t)
    for name in ("one", "two"):
        real, stolen, _ = spent[name]
        share = stolen / real if real else 0
        t.note(f"guest {name}: {share:.0%} of {real} cycles stolen with both guests busy")
        t.check(share > 0.2, f"guest {name}: only {share:.0%} stolen with both guests busy")
    end_both(q)
    stays_responsive(t, q)


@test("hv-multi-weights")
def hv_multi_weights(t):
    q, spent = both_busy(t, "guest2.weight=3")
    one, two = spent["one"][2], spent["two"][2]
    share = two / (one + two) if one + two else 0
    t.note(f"weights 1:3, both busy: guest two ran {share:.0%} of the time")
    t.check(0.6 < share < 0.9, f"guest two (weight 3) ran {share:.0%}, expected about 75%")
    end_both(q)
    stays_responsive(t, q)


@test("hv-multi-iso-entry")
def hv_multi_iso_entry(t):
    """The ISO's "two Linux guests" entry (hotkey 2): GRUB loads the same
    bzImage and initrd twice, and both guests reach their shells."""
    t.require(paths.ISO)
    q = t.qemu("-m", "320", "-cdrom", paths.ISO,
               fatal=[p for p in GUEST_FATAL if "guest stopped" not in p])
    q.expect(r"two Linux guests", timeout=60)
    q.send("2")
    q.expect(r"vmi-hv: 2 guests from 4 modules", timeout=120)
    expect_all(q, [prompt("one"), prompt("two")], timeout=400)
    t.note(f"both guests at their shells {q.elapsed():.1f}s after QEMU started, through GRUB")
    type_into(t, q, 2, "two", "iso")
    end_both(q)
    stays_responsive(t, q)
