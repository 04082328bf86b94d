// SPDX-License-Identifier: GPL-2.0
/*
 * A module that uses what modules inline from asm/io.h and
 * asm/special_insns.h: port and string I/O and __read_cr4().  Under
 * CONFIG_X86_VMI these inlines call vmi_io_in(), vmi_io_ins(),
 * vmi_read_cr4() and friends, so the module links (modpost) only if
 * those are exported, and loads only if they work (issue 21 item 8;
 * tests/cases/test_guest_modules.py).
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
