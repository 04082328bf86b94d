"""Several guests at once (issue 15): each pair of multiboot modules
(a bzImage with its command line, then its initrd) is one guest, with the
guestN.mem=, guestN.name= and guestN.weight= hypervisor options.  Loading
two guests; a module list that does not pair up, and guests that do not
fit the machine together, stop at load time naming the guest."""

import re

from vmitest import paths, test
from hvguest import BAD_INPUT, DONE, SERIAL_CMDLINE


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
