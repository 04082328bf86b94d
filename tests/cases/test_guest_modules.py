"""A module built against the VMI kernel links and works (docs/GUEST.md, "The second configuration",
"export what modules need").

Modules inline port and string I/O (asm/io.h) and __read_cr4()
(asm/special_insns.h); with CONFIG_X86_VMI those inlines call vmi_io_in(),
vmi_io_ins(), vmi_read_cr4() and friends.  The module below (MODULE_C,
written into the test's directory: no kernel source is kept in the
repository) is built out of tree against the guest's own tree (modpost refuses a module
that calls an unexported symbol), put in a second cpio archive after the
initrd, and loaded natively and under vmi-hv: it reads CMOS status
register B with inb() and four times with insb(), writes the POST port
with outsb() and reads CR4.

Only a configuration with module support can run it: the second one
(make test-configs, guest/config/alt-preempt-hz1000.config).  The default
tinyconfig kernel has none, and the test says so and skips.
"""

import os
import re
import shutil
import subprocess

from hvguest import MARKER, PROMPT, SERIAL_CMDLINE, GUEST_FATAL, hv_modules
from vmitest import paths, test

MODULE_C = r"""// SPDX-License-Identifier: GPL-2.0
/*
 * A module that uses what modules inline from asm/io.h and
 * asm/special_insns.h: port and string I/O and __read_cr4().  Under
 * CONFIG_X86_VMI these inlines call vmi_io_in(), vmi_io_ins(),
 * vmi_read_cr4() and friends, so the module links (modpost) only if
 * those are exported, and loads only if they work (docs/GUEST.md, "The second configuration").
 *
 * It reads CMOS status register B (stable: the RTC's mode bits) once with
 * inb() and four times with insb(), writes two bytes to the POST port
 * 0x80 with outsb(), and prints what it saw.
 */
#include <linux/module.h>
#include <linux/io.h>
#include <asm/special_insns.h>

#define CMOS_INDEX	0x70
#define CMOS_DATA	0x71
#define CMOS_STATUS_B	0x0b
#define POST_PORT	0x80

static int __init vmi_exports_init(void)
{
	static const u8 post[2] = { 0x5a, 0xa5 };
	unsigned long cr4 = __read_cr4();
	u8 one, four[4];

	outb(CMOS_STATUS_B, CMOS_INDEX);
	one = inb(CMOS_DATA);
	insb(CMOS_DATA, four, sizeof(four));
	outsb(POST_PORT, post, sizeof(post));
	pr_info("vmi_exports: cr4 %08lx, cmos status B %02x, insb %02x %02x %02x %02x\n",
		cr4, one, four[0], four[1], four[2], four[3]);
	return 0;
}

static void __exit vmi_exports_exit(void)
{
}

module_init(vmi_exports_init);
module_exit(vmi_exports_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("VMI exports seen from a module (vmi-hv test)");
"""
LINE = r"vmi_exports: cr4 ([0-9a-f]{8}), cmos status B ([0-9a-f]{2}), insb ([0-9a-f ]{11})"


def build_module(t, tree):
    """vmi_exports.ko, built out of tree against tree (its Module.symvers)."""
    subprocess.run(["make", "-s", "-C", tree, "ARCH=i386", f"-j{os.cpu_count()}", "modules"],
                   check=True, capture_output=True, text=True)
    src = os.path.join(t.tmpdir, "vmi_exports")
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(src)
    with open(os.path.join(src, "vmi_exports.c"), "w") as f:
        f.write(MODULE_C)
    with open(os.path.join(src, "Kbuild"), "w") as f:
        f.write("obj-m := vmi_exports.o\n")
    r = subprocess.run(["make", "-C", tree, "ARCH=i386", f"M={src}", "modules"],
                       capture_output=True, text=True)
    undefined = re.findall(r'"(\w+)" \[[^\]]*\] undefined', r.stdout + r.stderr)
    t.check(not undefined, f"modpost: the module calls unexported symbols: {', '.join(undefined)}")
    t.check(r.returncode == 0, f"the module does not build:\n{(r.stdout + r.stderr)[-2000:]}")
    return os.path.join(src, "vmi_exports.ko")


def initrd_with(t, ko):
    """The guest's initrd followed by a cpio archive holding /vmi_exports.ko
    (the kernel unpacks concatenated archives one after another)."""
    stage = os.path.join(t.tmpdir, "stage")
    shutil.rmtree(stage, ignore_errors=True)
    os.makedirs(stage)
    shutil.copy(ko, stage)
    archive = subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], input=b"vmi_exports.ko\n",
                             cwd=stage, capture_output=True, check=True).stdout
    with open(paths.INITRD, "rb") as f:
        initrd = f.read()
    # The kernel looks for the next archive at a 4-byte boundary and skips
    # zeros up to it.
    initrd += bytes(-len(initrd) % 512)
    return t.tmpfile("initrd-with-module.img", initrd + archive)


def load(t, q, label):
    """insmod at the shell: (cr4, status B by inb, the four insb bytes)."""
    q.expect(PROMPT, timeout=120)
    q.send("insmod /vmi_exports.ko && echo insmod-ok\n")
    m = q.expect(LINE, timeout=60)
    q.expect(r"insmod-ok", timeout=60)
    t.note(f"{label}: {m.group(0)}")
    return m.group(1), m.group(2), m.group(3).split()


@test("guest-module-vmi-exports", alone="runs make modules in the guest's kernel tree")
def module_vmi_exports(t):
    t.require(paths.BZIMAGE, paths.INITRD, paths.HV_ELF, paths.GUEST_CONFIG)
    with open(paths.GUEST_CONFIG) as f:
        config = f.read()
    if "CONFIG_MODULES=y" not in config:
        t.skip("this kernel has no module support (the default tinyconfig fragment); "
               "make test-configs builds one that has")
    ko = build_module(t, os.path.dirname(paths.GUEST_CONFIG))
    initrd = initrd_with(t, ko)

    q = t.qemu("-m", "128", "-kernel", paths.BZIMAGE, "-initrd", initrd,
               "-append", SERIAL_CMDLINE, fatal=GUEST_FATAL)
    q.expect(MARKER, timeout=300)
    _, native_b, native_ins = load(t, q, "native")
    q.kill()

    q = t.qemu("-m", "256", "-kernel", paths.HV_ELF, "-initrd", hv_modules(initrd=initrd),
               fatal=GUEST_FATAL)
    m = q.expect(MARKER, timeout=300)
    t.check(m.group(3) == "vmi", f"guest under the hypervisor reports mode {m.group(3)}")
    _, hv_b, hv_ins = load(t, q, "vmi-hv")

    t.check(native_ins == [native_b] * 4, f"native: insb read {native_ins}, inb {native_b}")
    t.check(hv_ins == [hv_b] * 4, f"vmi-hv: insb read {hv_ins}, inb {hv_b}")
    t.check(hv_b == native_b, f"CMOS status B is {hv_b} under vmi-hv, {native_b} natively")
