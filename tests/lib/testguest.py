"""The tiny test guest (tests/guests/, paths.TGUEST) as the hypervisor's
guests: the modules of a boot, one or several test guests each with its
command line.

    tiny_initrd(t)              the initrd module a test guest ignores
    tguest_modules(t, *lines)   QEMU's -initrd: a test guest per command
                                line (e.g. "tguest=idle"), each with the
                                tiny initrd; commas in a line are doubled
                                (QEMU splits modules at commas)
"""

from vmitest import paths
from hvguest import hv_modules


def tiny_initrd(t):
    return t.tmpfile("tiny-initrd", b"not an initramfs, the test guest ignores it\n")


def tguest_modules(t, *cmdlines):
    t.require(paths.HV_ELF, paths.TGUEST)
    tiny = tiny_initrd(t)
    return ",".join(hv_modules(line, tiny, kernel=paths.TGUEST) for line in cmdlines)
