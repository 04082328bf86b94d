"""Several guests at once (docs/HV.md, "Several guests"): each pair of multiboot modules
(a bzImage with its command line, then its initrd) is one guest, with the
guestN.mem=, guestN.name= and guestN.weight= hypervisor options.  Loading
two guests; a module list that does not pair up, and guests that do not
fit the machine together, stop at load time naming the guest."""

import os
import re
import time

from guest_config import describe, guest_config
from vmitest import FATAL_PATTERNS, accel_for, paths, smp_args, test
from hvguest import (DONE, GUEST_FATAL, GUEST_REBOOT, MARKER, REGS, SERIAL_CMDLINE, boot_multiboot,
                     ends_cleanly, expect_bad_input, hv_modules, shell_output, shell_search, shell_start,
                     stays_responsive)
from guest_end import FRAMES
from hvstats import hv_statistics
from procstat import STEAL, USER_HZ, parse_window, window_cmd
from vgascreen import vga_has
from multiguest import MTTCG, end_both, expect_all, give_console, prompt
from benchwork import (QUIET_SPREAD, WORK_CS, capacity_machines, capacity_note, host_capacity, median_of, spread, work,
                       work_initrd, work_machine)


def two_pairs(second_cmdline=None):
    second = hv_modules() if second_cmdline is None else hv_modules(second_cmdline)
    return hv_modules() + "," + second


@test("hv-multi-load-two-guests")
def hv_multi_load_two_guests(t):
    t.require(paths.BZIMAGE, paths.INITRD)
    q = boot_multiboot(t, two_pairs(), append="guest_mem=48M guest2.name=web guest2.weight=3 after_load=stop",
                       mem="320")
    q.expect(r"vmi-hv: stopped \(exit code 1\): guests loaded and checked", timeout=60)
    status = q.wait_exit(timeout=30)
    t.check(status == DONE, f"exit status {status}, expected {DONE}")
    t.check("vmi-hv: 2 guests from 4 modules" in q.output, "no '2 guests from 4 modules' line")
    t.check("vmi-hv: guest 1 (guest1): modules 1 and 2, 48 MiB, weight 1" in q.output,
            "guest 1's line is missing or wrong")
    t.check("vmi-hv: guest 2 (web): modules 3 and 4, 48 MiB, weight 3" in q.output,
            "guest 2's line is missing or wrong")
    loaded = len(re.findall(r"guest loaded and checked; its modules kept for a reboot", q.output))
    t.check(loaded == 2, f"{loaded} guests loaded, expected 2")
    t.check(q.output.count("guest memory: 48 MiB") == 2, "not two guests of 48 MiB")


@test("hv-multi-error-unpaired")
def hv_multi_error_unpaired(t):
    t.require(paths.BZIMAGE, paths.INITRD)
    q = boot_multiboot(t, two_pairs() + "," + hv_modules(initrd=False), append="guest3.name=db", mem="320")
    expect_bad_input(t, q, r"guest 3 \(db\): no initrd: module 5, its bzImage, is the last one")


@test("hv-multi-error-memory")
def hv_multi_error_memory(t):
    t.require(paths.BZIMAGE, paths.INITRD)
    q = boot_multiboot(t, two_pairs(), append="guest_mem=96M guest2.name=web", mem="160")
    expect_bad_input(t, q, r"guest 2 \(web\): 96M of memory does not fit: \d+ KiB free for all guests")


@test("hv-multi-error-option")
def hv_multi_error_option(t):
    q = boot_multiboot(t, append="guest1.weight=0", mem="320")
    expect_bad_input(t, q, r"malformed option 'guest1.weight=0': a guest's weight is 1-100")


# ---- two Linux guests at once (the scheduler) ---------------------------

def two_linux_guests(t, second_cmdline=SERIAL_CMDLINE, append="", monitor=False, cpu=None, smp=1):
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    mods = hv_modules() + "," + hv_modules(second_cmdline)
    return t.qemu(*(("-cpu", cpu) if cpu else ()), *smp_args(smp),
                  "-m", "400", "-kernel", paths.HV_ELF, "-initrd", mods, "-append",
                  f"guest_mem=64M guest1.name=one guest2.name=two {append}".strip(),
                  fatal=FATAL_PATTERNS, monitor=monitor,
                  accel=accel_for(smp))


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
    # Two powers off, one reboots: only the last one ends the hypervisor
    # (a reboot with another guest running starts the guest again:
    # hv-multi-reboot-poweroff).
    q.send("poweroff -f\n")
    q.expect(r"vmi-hv: guest 2 \(two\) has ended; 1 other goes on", timeout=120)
    q.expect(r"vmi-hv: guest powered off: ", timeout=60)
    q.send("\n")
    q.expect(prompt("one"), timeout=120)
    q.send("reboot -f\n")
    q.expect(r"vmi-hv: stopped \(exit code 7\): guest reboot", timeout=120)
    status = q.wait_exit(timeout=30)
    t.check(status == GUEST_REBOOT, f"exit status {status}, expected {GUEST_REBOOT}")


@test("hv-multi-reboot-poweroff")
def hv_multi_reboot_poweroff(t):
    """Guest two's `reboot` (init's, then the kernel's restart: VMI
    Reboot) starts it again from its modules while guest one keeps
    answering, and the rebooted guest reaches its shell and answers too;
    its frames come back at the reboot.  Then two's `poweroff` (init's,
    then the kernel's power-off handler: VMI Shutdown) ends it alone,
    "powered off", while one answers; one's `poweroff`, the last, ends the
    run with the power-off status.  No guest is "stopped" on the way."""
    q = two_linux_guests(t)
    expect_all(q, [prompt("one"), prompt("two")], timeout=400)
    type_into(t, q, 2, "two", "before")
    q.send("reboot\n")
    q.expect(r"\[two\] [^\n]*init: reboot: asking the kernel", timeout=60)
    q.expect(r"vmi-hv: guest reboot: the guest called Reboot \(hard, how 1\)", timeout=60)
    q.expect(r"vmi-hv: guest two starts again from its modules \(reboot 1\)", timeout=60)
    rebooted = len(q.output)
    t.check(not re.search(r"guest 2 \(two\) has ended", q.output), "the reboot ended guest two")
    # While two boots again, one answers; then two, from its new shell.
    type_into(t, q, 1, "one", "during")
    q.send("\x1d2")
    q.expect(r"\[two\] " + MARKER, timeout=400)
    type_into(t, q, 2, "two", "after")
    t.check(not re.search(r"\[one\] " + MARKER, q.output[rebooted:]), "guest one booted again too")
    q.send("poweroff\n")
    q.expect(r"\[two\] [^\n]*init: poweroff: asking the kernel", timeout=60)
    # Under VMI the kernel's power-off handler is VMI Shutdown (natively
    # it is ACPI S5).
    q.expect(r"\[two\] [^\n]*reboot: Power down", timeout=60)
    q.expect(r"vmi-hv: guest 2 \(two\) has ended; 1 other goes on", timeout=60)
    q.expect(r"vmi-hv: guest powered off: the guest called Shutdown\n", timeout=60)
    type_into(t, q, 1, "one", "alone")
    q.send("poweroff\n")
    q.expect(r"vmi-hv: guest powered off: the guest called Shutdown\n", timeout=60)
    q.expect(r"vmi-hv: stopped \(exit code 8\): guest powered off", timeout=60)
    ends_cleanly(t, q, timeout=30)
    frames = re.findall(FRAMES, q.output)
    t.check(len(frames) == 3, f"{len(frames)} machine-frames lines, expected 3 (two's reboot, two's and one's ends)")
    if frames:
        after, _, before = frames[-1]
        t.check(after == before, f"machine frames free {after} after both ended, {before} before the guests ran")


@test("hv-multi-vga-focus")
def hv_multi_vga_focus(t):
    """Each guest has a VGA screen of its own, and the VGA shows the one
    whose guest has the console: what guest one printed is on the screen
    while one has the console, gone while two has it, and back again."""
    q = two_linux_guests(t, monitor=True)
    expect_all(q, [prompt("one"), prompt("two")], timeout=400)
    type_into(t, q, 1, "one", "vgaone")
    t.check(vga_has(q, "vgaone-42-back"), "guest one's answer is not on the VGA screen it has")
    type_into(t, q, 2, "two", "vgatwo")
    t.check(vga_has(q, "vgatwo-42-back"), "guest two's answer is not on the VGA screen it has")
    t.check(not vga_has(q, "vgaone-42-back", timeout=0), "guest one's output is on guest two's screen")
    give_console(q, 1, "one")
    t.check(vga_has(q, "vgaone-42-back"), "guest one's screen did not come back")
    t.check(not vga_has(q, "vgatwo-42-back", timeout=0), "guest two's output is on guest one's screen")
    t.check(not any(row.startswith("[one]") or row.startswith("[two]") for row in q.vga_text()),
            "the VGA screen shows the serial console's guest names")
    end_both(q)
    stays_responsive(t, q)


AMD_POINTERS = r"x87 pointers cleared between guests \(AMD fxsave\)"


def fpu_kept(t, q):
    """Both guests run /tests/fpukeep at once (xmm0-7 and the x87 stack
    loaded with values of their own and checked for seconds while the
    scheduler switches between the guests); both find their values intact.
    Guest two checks 2 s longer: two guests that print at the same moment
    can cut each other's lines in two on the console, and the line this
    waits for must come whole."""
    for n, name, seconds, seed in ((1, "one", 6, 11), (2, "two", 8, 22)):
        give_console(q, n, name)
        q.send(f"/tests/fpukeep {seconds} {seed}\n")
    found = expect_all(q, [r"\[one\] FPUKEEP ([^\n]*)\n", r"\[two\] FPUKEEP ([^\n]*)\n"], timeout=120)
    for name, m in zip(("one", "two"), found):
        t.note(f"guest {name}: FPUKEEP {m.group(1)}")
        t.check(m.group(1).startswith("ok"), f"guest {name}'s registers changed under it: FPUKEEP {m.group(1)}")


@test("hv-multi-fpu-isolation")
def hv_multi_fpu_isolation(t):
    """Each guest's FPU and SSE registers are its own (fpu_kept); on QEMU's
    default (Intel) CPU without AMD's x87 pointer workaround."""
    q = at_shells(t)
    t.check(not re.search(AMD_POINTERS, q.output), "the AMD x87 pointer workaround on an Intel CPU")
    fpu_kept(t, q)
    end_both(q)
    stays_responsive(t, q)


@test("hv-multi-fpu-isolation-amd")
def hv_multi_fpu_isolation_amd(t):
    """On an AMD CPU (QEMU's phenom model) the hypervisor clears the x87
    instruction and data pointers before it restores a guest whose image
    has no exception pending (AMD's fxsave leaves the previous guest's
    there; hv/arch/fpu.c): it says so at boot, and the guests' registers
    stay their own with the extra fnclex/ffree/fildl at every switch.
    QEMU restores the pointers on any vendor, so the leak itself cannot
    be shown here; an Intel model must not take the AMD path."""
    q = at_shells(t, cpu="phenom")
    t.check(re.search(AMD_POINTERS, q.output), "no 'x87 pointers cleared' at boot on an AMD CPU")
    fpu_kept(t, q)
    end_both(q)
    stays_responsive(t, q)


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




class Sample:
    """One Ctrl-] s: the hypervisor's uptime and timer interrupts, and per
    guest name its vCPU's real, available, stolen and running cycles, real
    in ms, alarms, worst and mean alarm lateness (us) and wake-ups; and
    the host's clock when it came (the independent figure: the line's
    available is running + halted and real their sum with stolen, by the
    code that prints them, so those sums prove nothing)."""

    def __init__(self, t, q, guests=2):
        self.t = t
        s = hv_statistics(q)
        self.host_s, self.ms, self.timer_irqs = s.host_s, s.up_ms, s.timer_irqs
        self.guests = {name: dict(v, avail=v["available"]) for name, v in s.guests.items()}
        self.cpus = s.cpus
        t.check(len(self.guests) >= guests, f"vcpu time lines of {sorted(self.guests)} in the statistics, "
                                            f"expected {guests} guests")

    def since(self, before, name):
        """The guest's counters over the window before -> self.  Its REAL
        (and the hypervisor's uptime) must have advanced as the host's
        clock did: within 10% and half a second (TCG's TSC follows the
        host's time; the two clocks are read a few ms apart)."""
        a, b = self.guests[name], before.guests[name]
        host_ms = (self.host_s - before.host_s) * 1000
        for what, ms in ((f"guest {name}'s REAL", a["real_ms"] - b["real_ms"]),
                         ("the hypervisor's uptime", self.ms - before.ms)):
            self.t.check(abs(ms - host_ms) <= 0.10 * host_ms + 500,
                         f"{what} advanced {ms} ms while the host's clock advanced {host_ms:.0f} ms")
        return {k: a[k] - b[k] for k in ("real", "avail", "stolen", "running", "alarms", "wakeups", "at_once")}


def start_busy(q, n, name):
    """A CPU-bound loop in guest n's user mode, in the background."""
    give_console(q, n, name)
    q.send("while :; do :; done &\n")
    q.expect(prompt(name), timeout=120)


# In the guest: /proc/stat's cpu line, /proc/uptime (REAL time), a
# printk timestamp (the kernel's sched_clock, REAL time too: the KVM/Xen
# convention, docs/GUEST.md) and the busy loop's runtime (utime + stime of
# $!, the shell's last background job, from /proc/PID/stat: the scheduler's
# sum_exec_runtime in USER_HZ ticks) before and after a sleep of WINDOW_S
# seconds.  Steal is the 9th field of the cpu line, in USER_HZ (100) ticks;
# uptime in seconds with two decimals.
WINDOW_S = 8
# Without the printk probe (k=0, r=0) where the guest must stay idle: the
# probe's dmesg | grep pipeline is work that competes with a busy guest.
def steal_cmd(printk_probe=True):
    k = ("k() { echo steal-probe >/dev/kmsg; dmesg | grep steal-probe | tail -1 | "
         "sed 's/^.[ ]*\\([0-9.]*\\)].*/\\1/'; }; "
         "r() { read -r _ _ _ _ _ _ _ _ _ _ _ _ _ u s _ < /proc/$!/stat; echo $((u + s)); }; "
         if printk_probe else "k() { echo 0; }; r() { echo 0; }; ")
    # The runtime read beside the uptime and /proc/stat, before the probe's
    # pipeline: a pipeline between them shifts the runtime window by a
    # latency that grows with the host's load.
    return k + window_cmd(f"sleep {WINDOW_S}", extra="$(r) $(k)")


def start_steal_window(q, n, name, printk_probe=True):
    """Guest n's window begun; where its output starts (for guest_window)."""
    give_console(q, n, name)
    return shell_start(q, steal_cmd(printk_probe))


def guest_window(t, q, name, since):
    """Over the guest's window, as shares of its elapsed (REAL) time: what
    its own /proc/stat counted as steal, by how much its sched_clock
    (printk time) fell behind, and the busy loop's runtime."""
    w = parse_window(shell_output(q, timeout=120, guest=name, since=since))
    (r0, k0), (r1, k1) = ((int(r), float(k)) for r, k in (w.before.extra, w.after.extra))
    return w.share(STEAL), 1 - (k1 - k0) / w.elapsed, (r1 - r0) / (w.elapsed * USER_HZ)


def guest_windows(t, q, marks):
    """guest_window for each guest of marks ({name: start_steal_window's
    mark}), their lines in any order (each guest's window ends when its own
    sleep does, and under load guest two's can print first); the cursor
    after the last of them."""
    end, windows = q.cursor, {}
    for name, since in marks.items():
        windows[name] = guest_window(t, q, name, since)
        end = max(end, q.cursor)
    q.cursor = end
    return windows


def started_windows(q, names, printk_probe=True):
    """A window begun in each guest of names (guests 1, 2, ...)."""
    return {n: start_steal_window(q, i + 1, n, printk_probe) for i, n in enumerate(names)}


def idle_cost(t, q):
    """Both guests idle at their shells for WINDOW_S: the hypervisor's
    timer interrupts per second (all CPUs) and each guest's alarms per
    second."""
    time.sleep(2)
    a = Sample(t, q)
    time.sleep(WINDOW_S)
    b = Sample(t, q)
    secs = (b.ms - a.ms) / 1000
    return (b.timer_irqs - a.timer_irqs) / secs, {n: b.since(a, n)["alarms"] / secs for n in ("one", "two")}


# Timer interrupts two idle guests may cost per alarm they fired, counted
# over one window (so the host's speed moves neither side alone): the
# alarm, and now and then a slice end when both woke at once (1.42 seen:
# 7.4/s for 5.2 alarms/s).  A 1 kHz tick would be about 200 per alarm, a
# tick at every 10 ms slice end about 20.
IRQS_PER_ALARM = 2.5


def idle_cost_holds(t, idle_rate, needed, where=""):
    """The idle guests' timer interrupts, per alarm they needed."""
    per_alarm = idle_rate / needed if needed else float("inf")
    t.check(needed > 0 and per_alarm <= IRQS_PER_ALARM,
            f"{idle_rate:.1f} timer interrupts/s{where} with both guests idle, for {needed:.1f} alarms/s: "
            f"{per_alarm:.2f} per alarm, at most {IRQS_PER_ALARM}")


def at_shells(t, append="", cpu=None, smp=1):
    q = two_linux_guests(t, append=append, cpu=cpu, smp=smp)
    expect_all(q, [prompt("one"), prompt("two")], timeout=400)
    return q


@test("hv-multi-stolen-time", alone="steal shares against the host's clock")
def hv_multi_stolen_time(t):
    """Both guests busy: each one's /proc/stat counts 35-65% of its time
    as steal, and agrees within 5 points with the hypervisor's STOLEN for
    its vCPU over the same stretch.  The time convention (docs/GUEST.md,
    KVM/Xen): sched_clock (printk's timestamps) follows REAL, not falling
    behind by the steal; the busy loop's runtime excludes the steal with
    PARAVIRT_TIME_ACCOUNTING (the second configuration) and includes it
    without."""
    cfg = guest_config(t)
    steal_accounting = cfg.get("PARAVIRT_TIME_ACCOUNTING") == "y"
    t.note(describe(cfg))
    q = at_shells(t)
    start_busy(q, 1, "one")
    start_busy(q, 2, "two")
    time.sleep(2)   # steady state: the busy guest's vruntime has overtaken
    before = Sample(t, q)
    windows = guest_windows(t, q, started_windows(q, ("one", "two")))
    guest = {name: w[0] for name, w in windows.items()}
    after = Sample(t, q)
    for name in ("one", "two"):
        d = after.since(before, name)
        hv_share = d["stolen"] / d["real"] if d["real"] else 0
        lag, runtime = windows[name][1], windows[name][2]
        t.note(f"guest {name}: /proc/stat steal {guest[name]:.1%} of its time, "
               f"hypervisor STOLEN {hv_share:.1%} of {d['real']} cycles; "
               f"its sched_clock (printk time) fell behind REAL by {lag:.1%}; "
               f"the busy loop ran {runtime:.1%} of the time")
        # The probes read uptime and printk time a few commands apart, and
        # a slice of steal between them moves one side (up to 5% seen under
        # host load, the more the slower the host runs the commands); on
        # AVAILABLE the lag would be the steal, about 50%.
        t.check(abs(lag) <= 0.20,
                f"guest {name}: sched_clock fell behind REAL by {lag:.1%} (steal {guest[name]:.1%}): "
                f"sched_clock does not follow REAL")
        # The loop shares its vCPU only with the window's few commands,
        # which take more of it the slower TCG runs (86-95% seen without
        # steal accounting): they only ever lower its share.  With steal
        # accounting its runtime excludes the steal (at most 1 - steal);
        # without, it includes it (well above 1 - steal).
        free = 1 - guest[name]
        if steal_accounting:
            t.check(free - 0.15 <= runtime <= free + 0.03,
                    f"guest {name}: the busy loop's runtime is {runtime:.1%} of the time, expected 1 - steal "
                    f"= {free:.1%} (at most 3 points above, 15 below): PARAVIRT_TIME_ACCOUNTING is on")
        else:
            t.check(free + 0.25 <= runtime <= 1.03,
                    f"guest {name}: the busy loop's runtime is {runtime:.1%} of the time, expected about all "
                    f"of it, steal {guest[name]:.1%} included: PARAVIRT_TIME_ACCOUNTING is off")
        t.check(0.35 <= guest[name] <= 0.65, f"guest {name}: /proc/stat steal {guest[name]:.1%}, expected 35-65%")
        t.check(0.35 <= hv_share <= 0.65, f"guest {name}: hypervisor STOLEN {hv_share:.1%}, expected 35-65%")
        t.check(abs(guest[name] - hv_share) <= 0.05,
                f"guest {name}: /proc/stat steal {guest[name]:.1%} and STOLEN {hv_share:.1%} differ by more than 5 points")
    end_both(q)
    stays_responsive(t, q)


STEAL_BASE = r"\[%s\] [^\n]*VMI: steal time accounted from here: (\d+) ns stolen before are not charged"


@test("hv-multi-steal-no-backlog")
def hv_multi_steal_no_backlog(t):
    """Two guests boot together on one CPU, so each has time stolen before
    its kernel turns steal time accounting on (docs/GUEST.md, "The time device").
    That time is not charged afterwards as a backlog: at the shell, the
    steal in each guest's /proc/stat is at most what the hypervisor's
    STOLEN counted after the guest's steal clock started (its total less
    the base the guest printed), not the whole STOLEN since boot."""
    q = at_shells(t)
    base_ms = {}
    for name in ("one", "two"):
        m = re.search(STEAL_BASE % name, q.output)
        t.check(m is not None, f"guest {name}: no 'steal time accounted from here' line")
        base_ms[name] = int(m.group(1)) / 1e6 if m else 0
    steal_ms = {}
    for n, name in ((1, "one"), (2, "two")):
        give_console(q, n, name)
        m = shell_search(q, "head -1 /proc/stat", r"^cpu +([\d ]+)$", timeout=120, guest=name)
        steal_ms[name] = int(m.group(1).split()[7]) * 10     # USER_HZ ticks
    after = Sample(t, q)
    for name in ("one", "two"):
        g = after.guests[name]
        hv_ms = g["stolen"] * g["real_ms"] / g["real"] if g["real"] else 0
        t.note(f"guest {name}: STOLEN before steal accounting {base_ms[name]:.0f} ms, hypervisor STOLEN "
               f"{hv_ms:.0f} ms in all, /proc/stat steal {steal_ms[name]} ms")
        # Booting beside the other guest, its kernel waited for the CPU
        # before the accounting began: otherwise this test shows nothing.
        t.check(base_ms[name] >= 20, f"guest {name}: only {base_ms[name]:.0f} ms stolen before steal "
                                     f"accounting: the boots did not overlap")
        # Ticks of 10 ms each, and the Sample comes after the guest's read
        # (idle at their shells, the guests lose little time in between).
        since = hv_ms - base_ms[name]
        t.check(steal_ms[name] <= since + 20,
                f"guest {name}: /proc/stat steal {steal_ms[name]} ms, more than the {since:.0f} ms "
                f"STOLEN since its steal clock started: the boot's stolen time was charged as a backlog")
        t.check(steal_ms[name] >= 0.8 * since - 50,
                f"guest {name}: /proc/stat steal {steal_ms[name]} ms, well below the {since:.0f} ms STOLEN "
                f"since its steal clock started: steal went uncounted")
    end_both(q)
    stays_responsive(t, q)


# ---- several CPUs (docs/SMP.md, "More than one CPU") ----

def linux_guests(t, names, smp=2, mem="512", guest_mem="48M", append=""):
    """len(names) Linux guests from the same bzImage, on an -smp machine
    with MTTCG; at their shells."""
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    opts = " ".join(f"guest{i + 1}.name={n}" for i, n in enumerate(names))
    q = t.qemu("-smp", str(smp), "-m", mem, "-kernel", paths.HV_ELF,
               "-initrd", ",".join(hv_modules() for _ in names),
               "-append", f"guest_mem={guest_mem} {opts} {append}".strip(),
               fatal=GUEST_FATAL, accel=accel_for(smp))
    expect_all(q, [prompt(n) for n in names], timeout=600)
    return q


def steal_windows(t, q, names):
    """Each guest's /proc/stat steal over one WINDOW_S window, all at once."""
    return {n: w[0] for n, w in guest_windows(t, q, started_windows(q, names, printk_probe=False)).items()}


@test("hv-smp-two-busy-guests", alone="QEMU on -smp 2 with MTTCG: both host CPUs; steal shares, idle timer interrupts per second")
def smp_two_busy_guests(t):
    """Two busy guests on -smp 2: each has a CPU of its own, so each one's
    /proc/stat steal over an 8 s spin is at most 10% (50% on one CPU,
    hv-multi-stolen-time), and the hypervisor's STOLEN agrees; Ctrl-] l
    shows them on different CPUs and Ctrl-] s both CPUs busy in guests.
    Idle first: two idle guests on two CPUs cost no more timer interrupts
    than their alarms need, as on one CPU (hv-multi-idle-busy)."""
    q = at_shells(t, smp=2)
    t.check("2 guests share 2 CPUs" in q.output, "the hypervisor did not run the guests on 2 CPUs")
    idle_rate, alarms = idle_cost(t, q)
    needed = alarms["one"] + alarms["two"]
    t.note(f"two idle guests on 2 CPUs: {idle_rate:.1f} timer interrupts/s over all CPUs, "
           f"for {needed:.1f} alarms/s")
    idle_cost_holds(t, idle_rate, needed, " over all CPUs")
    start_busy(q, 1, "one")
    start_busy(q, 2, "two")
    time.sleep(2)
    before = Sample(t, q)
    steal = steal_windows(t, q, ("one", "two"))
    after = Sample(t, q)
    cpus = {c: (v["guest_pct"], v["hv_pct"], v["idle_pct"]) for c, v in after.cpus.items()}
    t.note(f"per CPU since they joined (guests%, hypervisor%, idle%): {cpus}")
    t.check(sorted(cpus) == [0, 1], f"Ctrl-] s listed CPUs {sorted(cpus)}")
    for name in ("one", "two"):
        d = after.since(before, name)
        hv_share = d["stolen"] / d["real"] if d["real"] else 0
        t.note(f"guest {name}: /proc/stat steal {steal[name]:.1%}, hypervisor STOLEN {hv_share:.1%}")
        t.check(steal[name] <= 0.10, f"guest {name}: /proc/stat steal {steal[name]:.1%}, expected at most 10%")
        t.check(hv_share <= 0.10, f"guest {name}: hypervisor STOLEN {hv_share:.1%}, expected at most 10%")
    q.send("\x1dl")
    on = expect_all(q, [r"  1 one +running +weight 1, \d+ exits, on CPU (\d)",
                        r"\* 2 two +running +weight 1, \d+ exits, on CPU (\d)"], timeout=60)
    t.check(on[0].group(1) != on[1].group(1), f"both guests on CPU {on[0].group(1)}")
    end_both(q)


FOUR = ("one", "two", "three", "four")


def four_busy(t, weights):
    """Four busy guests on -smp 2 with these weights: each one's steal over
    one window and its share of the two CPUs by the hypervisor's
    AVAILABLE (running) over the same time."""
    q = linux_guests(t, FOUR, append=" ".join(f"guest{i + 1}.weight={w}" for i, w in enumerate(weights)))
    for i, n in enumerate(FOUR):
        start_busy(q, i + 1, n)
    time.sleep(3)
    before = Sample(t, q, guests=4)
    steal = steal_windows(t, q, FOUR)
    after = Sample(t, q, guests=4)
    ran = {n: after.since(before, n)["running"] for n in FOUR}
    total = sum(ran.values())
    share = {n: ran[n] / total if total else 0 for n in FOUR}
    for n in FOUR:
        t.note(f"guest {n} (weight {weights[FOUR.index(n)]}): /proc/stat steal {steal[n]:.1%}, "
               f"{share[n]:.1%} of the two CPUs' guest time")
    return steal, share


@test("hv-smp-four-busy-guests", alone="QEMU on -smp 2 with MTTCG: both host CPUs; steal shares")
def smp_four_busy_guests(t):
    """Four busy guests of equal weight on -smp 2: two CPUs for four, so
    each guest's /proc/stat steal is 50% +- 12 points."""
    steal, _ = four_busy(t, (1, 1, 1, 1))
    for n in FOUR:
        t.check(0.38 <= steal[n] <= 0.62, f"guest {n}: steal {steal[n]:.1%}, expected 50% +- 12 points")


@test("hv-smp-four-weights", alone="QEMU on -smp 2 with MTTCG: both host CPUs; CPU shares by weight")
def smp_four_weights(t):
    """Weights 2:1:1:1 over four busy guests on -smp 2: 40/20/20/20% of
    the two CPUs, +- 8 points (the weights hold across CPUs: the per-CPU queues balance
    by virtual runtime)."""
    _, share = four_busy(t, (2, 1, 1, 1))
    for n, want in zip(FOUR, (0.40, 0.20, 0.20, 0.20)):
        t.check(abs(share[n] - want) <= 0.08, f"guest {n}: {share[n]:.1%} of the CPUs, expected {want:.0%} +- 8")


@test("hv-smp-pinned", alone="QEMU on -smp 2 with MTTCG: both host CPUs; steal shares")
def smp_pinned(t):
    """guest1.cpus=0 guest2.cpus=0 on -smp 2: both busy guests share CPU 0
    (about 50% steal each) while CPU 1 idles, and Ctrl-] l names CPU 0 for
    both; a list naming no running CPU is refused at load."""
    q = at_shells(t, append="guest1.cpus=0 guest2.cpus=0", smp=2)
    start_busy(q, 1, "one")
    start_busy(q, 2, "two")
    time.sleep(2)
    steal = steal_windows(t, q, ("one", "two"))
    for name in ("one", "two"):
        t.note(f"guest {name} (pinned to CPU 0): /proc/stat steal {steal[name]:.1%}")
        t.check(0.35 <= steal[name] <= 0.65, f"guest {name}: steal {steal[name]:.1%}, expected 35-65% on one CPU")
    q.send("\x1dl")
    on = expect_all(q, [r"  1 one +\w+ +weight 1, \d+ exits, (?:on|last on) CPU (\d), (\d+) migrations",
                        r"\* 2 two +\w+ +weight 1, \d+ exits, (?:on|last on) CPU (\d), (\d+) migrations"], timeout=60)
    t.check([m.group(1) for m in on] == ["0", "0"] and [m.group(2) for m in on] == ["0", "0"],
            f"pinned guests seen on CPUs {[m.group(1) for m in on]}, migrations {[m.group(2) for m in on]}")
    end_both(q)
    q = boot_multiboot(t, two_pairs(), append="guest2.cpus=5", mem="320")
    expect_bad_input(t, q, r"guest 2 \(guest2\): guest2.cpus= names no CPU the hypervisor runs on \(CPUs 0-0\)")


@test("hv-smp-pinned-ap", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_pinned_ap(t):
    """guest1.cpus=1 guest2.cpus=1 on -smp 2: both guests live on the AP
    alone, so what the boot CPU takes for them (console input, their
    alarms' timer) reaches them by IPI: each answers what is typed to it,
    sleeps a second of its own uptime on its alarms, and Ctrl-] l names
    CPU 1 for both, with no migration."""
    q = at_shells(t, append="guest1.cpus=1 guest2.cpus=1", smp=2)
    for n, name in ((1, "one"), (2, "two")):
        type_into(t, q, n, name, f"pinned{n}")
        q.send("read u0 r < /proc/uptime; sleep 1; read u1 r < /proc/uptime; echo slept $u0 $u1\n")
        m = q.expect(r"\[%s\] slept (\d+\.\d\d) (\d+\.\d\d)\n" % name, timeout=60)
        slept = float(m.group(2)) - float(m.group(1))
        t.check(0.95 <= slept <= 1.5, f"guest {name}: sleep 1 took {slept:.2f} s of its uptime")
    q.send("\x1dl")
    on = expect_all(q, [r"  1 one +\w+ +weight 1, \d+ exits, (?:on|last on) CPU (\d), (\d+) migrations",
                        r"\* 2 two +\w+ +weight 1, \d+ exits, (?:on|last on) CPU (\d), (\d+) migrations"], timeout=60)
    t.check([m.group(1) for m in on] == ["1", "1"] and [m.group(2) for m in on] == ["0", "0"],
            f"guests pinned to CPU 1 seen on CPUs {[m.group(1) for m in on]}, "
            f"migrations {[m.group(2) for m in on]}")
    end_both(q)


@test("hv-smp-eight-guests", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_eight_guests(t):
    """Eight Linux guests on -smp 2 in a 512 MiB machine: each boots to
    its shell and answers a command typed to it."""
    names = tuple(f"g{i}" for i in range(1, 9))
    q = linux_guests(t, names, guest_mem="32M")
    t.check("8 guests share 2 CPUs" in q.output, "the 8 guests did not share 2 CPUs")
    for i, n in enumerate(names):
        type_into(t, q, i + 1, n, f"hello{i + 1}")


@test("hv-smp-migration", alone="QEMU on -smp 2 with MTTCG: both host CPUs; migrations in a time")
def smp_migration(t):
    """Three busy guests on two CPUs with 1 ms slices: their vCPUs move
    between the CPUs thousands of times, with the shadow audit on at every
    exit: no mismatch, and fpukeep (registers checked while switched and
    moved) stays clean in every guest."""
    names = ("one", "two", "three")
    q = linux_guests(t, names, append="slice=1 audit=exit")
    for i, n in enumerate(names[1:]):
        start_busy(q, i + 2, n)
    for i, n in enumerate(names):
        give_console(q, i + 1, n)
        # 2 s apart at the end: their lines must not cut each other (fpu_kept).
        q.send(f"/tests/fpukeep {15 + 2 * i} {i + 7}\n")
    found = expect_all(q, [r"\[%s\] FPUKEEP ([^\n]*)\n" % n for n in names], timeout=300)
    for n, m in zip(names, found):
        t.note(f"guest {n}: FPUKEEP {m.group(1)}")
        t.check(m.group(1).startswith("ok"), f"guest {n}'s registers changed under it: FPUKEEP {m.group(1)}")
    q.send("\x1dl")
    moves = [int(m.group(1)) for m in
             (q.expect(r"%s +\w+ +weight 1, \d+ exits, (?:on|last on) CPU \d, (\d+) migrations" % n, timeout=60)
              for n in names)]
    t.note(f"migrations: {dict(zip(names, moves))}")
    t.check(sum(moves) >= 2000, f"only {sum(moves)} migrations between the CPUs")
    # A mismatch would have stopped its guest (audit_action=stop, a fatal
    # line here); the audit must have run, and found none.
    m = hv_statistics(q).search(r"continuous audit \(exit\): (\d+) audits, (\d+) entries checked, (\d+) mismatches")
    t.note(f"continuous audit of guest one: {m.group(1)} audits, {m.group(2)} entries, {m.group(3)} mismatches")
    t.check(int(m.group(1)) > 1000 and m.group(3) == "0", f"audit: {m.group(0)}")


# ---- bench-smp-two-guests: the second CPU's gain, against the host's own ----

# The work and the host's capacity: tests/lib/benchwork.py.
# Rounds of the bench: -smp 1 and -smp 2 alternately; the host's capacity
# (two -smp 1 QEMUs at once against one alone) alternately too.
RATIO_ROUNDS = 3
# The speed target (docs/SMP.md, "More than one CPU") and the share of the
# host's own capacity the hypervisor should turn into guest work are
# printed beside the medians, not asserted: a timed threshold at the
# figure the design reaches flakes with the host (bench-smp-guest-speedup
# measured 1.698x against the 1.7x it asserted on a quiet CI host).
# Asserted on a quiet host (the -smp 1 machine's work alone moved at most
# QUIET_SPREAD over its six windows, and two QEMUs at once got at least
# CAPACITY_TO_JUDGE of one alone): the ratio at least FLOOR, well above
# the 1.0x of guests that take turns on one CPU and well below what the
# design gives.  A host that gives less (capacities of 1.27x-2.01x were
# measured on CI minutes apart) bounds the ratio by that, whatever the
# hypervisor does.
TARGET, EFFICIENCY_AIM, FLOOR, CAPACITY_TO_JUDGE = 1.8, 0.9, 1.3, 1.7
# Always, however busy the host: each guest of the -smp 2 machine had at
# most AT_ONCE_STOLEN of its time stolen (the hypervisor's STOLEN over its
# REAL, TSC time) while both worked.  Two guests on a CPU each lose none
# of it (hv-smp-two-busy-guests: 0.0%); taking turns on one CPU, each
# loses about half.  A host that sets a QEMU thread aside does not move
# it: the guest on that CPU stays the one running there.
AT_ONCE_STOLEN = 0.10


def stolen_shares(before, after):
    """Each guest's STOLEN over its REAL between two Samples of q."""
    shares = {}
    for name in ("one", "two"):
        d = after.since(before, name)
        shares[name] = d["stolen"] / d["real"] if d["real"] else 1.0
    return shares


@test("bench-smp-two-guests", bench=True)
def bench_smp_two_guests(t):
    """Two busy guests on -smp 1 and on -smp 2 (MTTCG) in one run: their
    combined work in the same time, RATIO_ROUNDS times alternately, and
    the median ratio.  Beside it the host's own capacity, measured the
    same way: the same two guests' work in two -smp 1 QEMUs at once
    against one alone (a 2-core host whose cores are hyperthreads or
    busy with other work cannot give anyone 2x).  The hypervisor's
    efficiency is ratio / capacity.  Printed: the ratio against TARGET,
    the efficiency against EFFICIENCY_AIM.  Asserted: on the -smp 2
    machine each guest at most AT_ONCE_STOLEN of its time stolen while
    both work (always), and the ratio at least FLOOR when the host can be
    judged (above)."""
    if (os.cpu_count() or 1) < 2:
        t.skip(f"the host has {os.cpu_count()} CPU: MTTCG cannot run two guest CPUs at once")
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    initrd = work_initrd(t)
    # At most two QEMUs at a time: two -smp 1 machines for the capacity,
    # then the second gives way to the -smp 2 machine.
    one, other = capacity_machines(t, initrd)
    capacity_pairs = host_capacity(one, other)
    end_both(other)
    other.kill()
    two = work_machine(t, 2, initrd)
    expect_all(two, [prompt("one"), prompt("two")], timeout=400)
    t.check("2 guests share 2 CPUs" in two.output, "the hypervisor did not run the guests on 2 CPUs")
    ratio_pairs, stolen = [], []
    for _ in range(RATIO_ROUNDS):
        on_one = work([one])[0]
        before = Sample(t, two)
        on_two = work([two])[0]
        stolen.append(stolen_shares(before, Sample(t, two)))
        ratio_pairs.append((on_two, on_one))
    end_both(one)
    end_both(two)

    ratio, capacity = median_of(ratio_pairs), median_of(capacity_pairs)
    efficiency = ratio / capacity if capacity else 0
    singles = [b for _, b in ratio_pairs + capacity_pairs]
    moved = spread(singles)
    worst_stolen = {n: max(s[n] for s in stolen) for n in ("one", "two")}
    t.note("combined work of two busy guests (rounds/s) in %d s windows: %s" % (
        WORK_CS // 100, "; ".join(f"-smp 1 {b:.1f}, -smp 2 {a:.1f} ({a / b:.2f}x)" for a, b in ratio_pairs)))
    t.note(capacity_note(capacity_pairs))
    t.note("on -smp 2, each guest's time stolen while both worked (hypervisor STOLEN / REAL), per round: %s" % (
        "; ".join(f"one {s['one']:.1%}, two {s['two']:.1%}" for s in stolen)))
    t.note(f"medians: -smp 2 / -smp 1 {ratio:.2f}x (target {TARGET}x: " +
           ("met" if ratio >= TARGET else "not met") + f"), host capacity {capacity:.2f}x, hypervisor efficiency "
           f"{efficiency:.2f} (aim {EFFICIENCY_AIM}); the host's own speed (-smp 1 alone) moved {moved:.2f}x "
           f"between windows (quiet: at most {QUIET_SPREAD}x)")
    for name in ("one", "two"):
        t.check(worst_stolen[name] <= AT_ONCE_STOLEN,
                f"on -smp 2 guest {name} had {worst_stolen[name]:.1%} of its time stolen while both worked "
                f"(at most {AT_ONCE_STOLEN:.0%}): the guests did not run at once")
    if moved > QUIET_SPREAD or capacity < CAPACITY_TO_JUDGE:
        # The guests ran at once (checked above); the floor itself is a
        # counted skip, so the tally shows how often it went unjudged.
        t.skip(f"the ratio floor is not judged (the guests running at once is): the host is too noisy or too "
               f"small (its speed moved {moved:.2f}x, at most {QUIET_SPREAD}x to judge; its capacity "
               f"{capacity:.2f}x, at least {CAPACITY_TO_JUDGE}x to judge)")
    t.note(f"asserted: ratio >= {FLOOR}x on this quiet host of capacity {capacity:.2f}x")
    t.check(ratio >= FLOOR, f"-smp 2 did {ratio:.2f}x the work of -smp 1 on a quiet host of capacity "
                            f"{capacity:.2f}x, not {FLOOR}x: the guests did not gain from the second CPU")


@test("hv-multi-weights", alone="CPU shares by weight against the host's clock")
def hv_multi_weights(t):
    """Both busy at weights 2:1: each guest's own /proc/stat, over its own
    window of wall-clock time (its uptime: REAL), counts steal of about
    1/3 and 2/3, so guest one had 67% of the CPU the two shared, within
    10 points; the hypervisor's AVAILABLE says the same within 5."""
    q = at_shells(t, "guest1.weight=2")
    start_busy(q, 1, "one")
    start_busy(q, 2, "two")
    time.sleep(2)   # steady state
    before = Sample(t, q)
    steal = {n: w[0] for n, w in guest_windows(t, q, started_windows(q, ("one", "two"), printk_probe=False)).items()}
    after = Sample(t, q)
    had = {name: 1 - steal[name] for name in steal}
    share = had["one"] / (had["one"] + had["two"]) if had["one"] + had["two"] > 0 else 0
    one, two = after.since(before, "one")["avail"], after.since(before, "two")["avail"]
    hv_share = one / (one + two) if one + two else 0
    t.note(f"weights 2:1, both busy: by their own /proc/stat guest one had {had['one']:.1%} of its time, "
           f"guest two {had['two']:.1%}: one's share {share:.1%}; the hypervisor's AVAILABLE: {hv_share:.1%}")
    t.check(0.57 <= share <= 0.77, f"guest one (weight 2) had {share:.1%} by the guests' /proc/stat, "
                                   f"expected 67% +- 10 points")
    t.check(abs(share - hv_share) <= 0.05,
            f"the guests' /proc/stat ({share:.1%}) and the hypervisor's AVAILABLE ({hv_share:.1%}) disagree")
    end_both(q)
    stays_responsive(t, q)


# The share of an idle guest's wake-ups that preempt a busy guest at once:
# not all, since a wake-up within the granularity of the busy guest's
# vruntime, or past its guest's burst of wake-up preemptions, waits (97%
# seen before those rules, 87-91% with them; none without preemption).
AT_ONCE_SHARE = 0.75


@test("hv-multi-idle-busy", alone="idle cost: timer interrupts per second")
def hv_multi_idle_busy(t):
    """Guest one idles at its shell while guest two spins: two gets >= 80%
    of the time (95% measured: the rest is one's wake-ups and the
    hypervisor's work, which take longer the slower the host; an idle
    guest given slices as if busy would leave it about half), one's steal stays near 0 (its wake-ups take the CPU at
    once), and an idle guest costs only the timer interrupts its alarms
    need (the hypervisor's timer is armed per event, not at 1 kHz)."""
    q = at_shells(t)
    # Both idle first: what idling costs in hypervisor timer interrupts.
    idle_rate, alarms = idle_cost(t, q)
    t.note(f"two idle guests: {idle_rate:.1f} hypervisor timer interrupts/s "
           f"(alarms/s: one {alarms['one']:.1f}, two {alarms['two']:.1f}); a 1 kHz tick would be 1000/s")
    timer = re.search(r"vmi-hv: hypervisor timer: (one-shot local APIC timer|one-shot IRQ0 \(PIT mode 0\)|the PIT)",
                      q.output)
    t.check(timer, "the hypervisor's timer line (local APIC or PIT) is not in the log")
    if timer.group(1).startswith("one-shot local APIC"):
        # Nothing but the alarms (and a few slice ends when both woke).
        idle_cost_holds(t, idle_rate, alarms["one"] + alarms["two"])
    else:
        # The PIT's shots last 54.9 ms at most: about 18/s besides the alarms.
        t.check(idle_rate < 60, f"{idle_rate:.0f} timer interrupts/s with both guests idle (PIT)")

    start_busy(q, 2, "two")
    before = Sample(t, q)
    one_guest_steal = guest_window(t, q, "one", start_steal_window(q, 1, "one", printk_probe=False))[0]
    after = Sample(t, q)
    one, two = after.since(before, "one"), after.since(before, "two")
    secs = (after.ms - before.ms) / 1000
    busy_share = two["running"] / two["real"]
    idle_stolen = one["stolen"] / one["real"]
    t.note(f"one idle, one busy: the busy guest ran {busy_share:.1%} of the time; the idle guest: "
           f"{idle_stolen:.2%} stolen by the hypervisor's count, {one_guest_steal:.2%} steal in its /proc/stat, "
           f"{one['alarms'] / secs:.1f} alarms/s, {one['wakeups'] / secs:.1f} wake-ups/s; "
           f"{(after.timer_irqs - before.timer_irqs) / secs:.0f} hypervisor timer interrupts/s in all")
    for name in ("one", "two"):
        g = after.guests[name]
        t.note(f"alarm lateness since guest {name} started: {g['mean_late_us']} us on average, "
               f"{g['late_us']} us at worst")
    t.check(busy_share >= 0.80, f"the busy guest ran only {busy_share:.1%} of the time")
    # The idle guest's wake-ups take the CPU from the busy one at once: a
    # count the host's speed cannot move (its stolen share, each wake-up's
    # wait for the switch, grows as the host slows: 0.63% and 1.37% were
    # printed on a loaded host).  Wake-ups that waited for the busy
    # guest's slice to end would lose about a quarter of the time.
    at_once = one["at_once"] / max(1, one["wakeups"])
    t.note(f"the idle guest's wake-ups: {one['at_once']} of {one['wakeups']} took the CPU at once")
    t.check(one["wakeups"] > 0 and at_once >= AT_ONCE_SHARE,
            f"{one['at_once']} of the idle guest's {one['wakeups']} wake-ups took the CPU at once, "
            f"not {AT_ONCE_SHARE:.0%}")
    end_both(q)
    stays_responsive(t, q)


@test("hv-multi-iso-entry")
def hv_multi_iso_entry(t):
    """The ISO's "two Linux guests" entry (hotkey 2): GRUB loads the same
    bzImage and initrd twice, and both guests reach their shells."""
    t.require(paths.ISO)
    q = t.qemu("-m", "320", "-cdrom", paths.ISO,
               fatal=FATAL_PATTERNS)
    q.expect(r"two Linux guests", timeout=60)
    q.send("2")
    q.expect(r"vmi-hv: 2 guests from 4 modules", timeout=120)
    expect_all(q, [prompt("one"), prompt("two")], timeout=400)
    t.note(f"both guests at their shells {q.elapsed():.1f}s after QEMU started, through GRUB")
    type_into(t, q, 2, "two", "iso")
    end_both(q)
    stays_responsive(t, q)


@test("hv-smp-iso-four-guests", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def hv_smp_iso_four_guests(t):
    """The ISO's "four Linux guests" entry (hotkey 4) on -smp 2, as make
    run boots it: four guests over two CPUs reach their shells, Ctrl-] l
    names the CPUs, and each answers."""
    t.require(paths.ISO)
    q = t.qemu("-smp", "2", "-m", "512", "-cdrom", paths.ISO, accel=MTTCG,
               fatal=FATAL_PATTERNS)
    q.expect(r"four Linux guests", timeout=60)
    q.send("4")
    q.expect(r"vmi-hv: 4 guests share 2 CPUs", timeout=120)
    expect_all(q, [prompt(n) for n in FOUR], timeout=600)
    q.send("\x1dl")
    q.expect(r"  4 four +\w+ +weight 1, \d+ exits, (?:on|last on) CPU [01], \d+ migrations", timeout=60)
    for i, n in enumerate(FOUR):
        type_into(t, q, i + 1, n, f"iso{i + 1}")


@test("hv-smp-linux-reboot-at-once", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def hv_smp_linux_reboot_at_once(t):
    """Guest one of two vCPUs, both running at once (the default), beside
    guest two of one: one's `reboot` (VMI Reboot, called on whichever of
    its vCPUs the kernel restarts on, the other inside the guest on the
    other CPU) starts it again from its modules with both vCPUs, while two
    keeps answering; the rebooted one finds its two CPUs again.  Then both
    power off; no guest is stopped and every frame comes back."""
    q = two_linux_guests(t, append="guest1.vcpus=2", smp=2)
    expect_all(q, [prompt("one"), prompt("two")], timeout=400)
    q.send("\x1d1")
    q.expect(r"vmi-hv: console input goes to guest 1 \(one\)", timeout=60)
    cpus = shell_search(q, "nproc", r"^(\d+)$", guest="one").group(1)
    t.check(cpus == "2", f"guest one counts {cpus} CPUs, not 2")
    q.send("reboot\n")
    q.expect(r"vmi-hv: guest reboot: the guest called Reboot \(hard, how 1\)", timeout=60)
    q.expect(r"vmi-hv: guest one starts again from its modules \(reboot 1\)", timeout=60)
    type_into(t, q, 2, "two", "during")
    q.send("\x1d1")
    q.expect(r"vmi-hv: guest one: vCPU 1 started by vCPU 0", timeout=400)
    q.expect(r"\[one\] " + MARKER, timeout=300)
    q.expect(prompt("one"), timeout=120)
    cpus = shell_search(q, "nproc", r"^(\d+)$", guest="one").group(1)
    t.check(cpus == "2", f"guest one counts {cpus} CPUs, not 2")
    q.send("poweroff\n")
    q.expect(r"vmi-hv: guest 1 \(one\) has ended; 1 other goes on", timeout=60)
    type_into(t, q, 2, "two", "alone")
    q.send("poweroff\n")
    q.expect(r"vmi-hv: stopped \(exit code 8\): guest powered off", timeout=60)
    ends_cleanly(t, q, timeout=30)
    frames = re.findall(FRAMES, q.output)
    if frames:
        after, _, before = frames[-1]
        t.check(after == before, f"machine frames free {after} after both ended, {before} before the guests ran")
    t.check(len(frames) == 3, f"{len(frames)} machine-frames lines, expected 3 (one's reboot, both ends)")
