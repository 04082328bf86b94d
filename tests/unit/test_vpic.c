/* test_vpic.c - the guest's virtual 8259A pair (hv/dev/vpic.c) as Linux's
 * i8259 driver programs and uses it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "vpic.h"
#include "console.h"

static struct vpic pic;

void log_msg(enum log_level level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

static void out(uint16_t port, uint8_t v)
{
	uint32_t val = v;

	assert_true(vpic_io(&pic, port, true, &val));
}

static uint8_t in(uint16_t port)
{
	uint32_t val = 0;

	assert_true(vpic_io(&pic, port, false, &val));
	return (uint8_t)val;
}

/* init_8259A(): ICW1-4, bases 0x30/0x38, then everything unmasked. */
static void linux_init(void)
{
	vpic_reset(&pic);
	out(0x21, 0xff); out(0xa1, 0xff);
	out(0x20, 0x11); out(0x21, 0x30); out(0x21, 0x04); out(0x21, 0x01);
	out(0xa0, 0x11); out(0xa1, 0x38); out(0xa1, 0x02); out(0xa1, 0x01);
	out(0x21, 0x00); out(0xa1, 0x00);
}

static void mask_reads_back(void **state)
{
	linux_init();
	out(0x21, 0xfb);
	assert_int_equal(in(0x21), 0xfb);
	out(0xa1, 0x5a);
	assert_int_equal(in(0xa1), 0x5a);
	assert_false(vpic_io(&pic, 0x22, false, &(uint32_t){0}));
}

static void edge_ack_eoi(void **state)
{
	linux_init();
	assert_false(vpic_pending(&pic));
	vpic_pulse(&pic, 0);
	assert_true(vpic_pending(&pic));
	assert_int_equal(vpic_ack(&pic), 0x30);
	assert_false(vpic_pending(&pic));
	out(0x20, 0x0b);			/* OCW3: read ISR */
	assert_int_equal(in(0x20), 0x01);
	vpic_pulse(&pic, 0);				/* in service: waits */
	assert_false(vpic_pending(&pic));
	out(0x20, 0x60);			/* specific EOI, IRQ0 */
	assert_true(vpic_pending(&pic));
	assert_int_equal(vpic_ack(&pic), 0x30);
	out(0x20, 0x20);			/* non-specific EOI */
	assert_int_equal(in(0x20), 0x00);
}

static void masked_and_priority(void **state)
{
	linux_init();
	out(0x21, 0x01);			/* IRQ0 masked */
	vpic_pulse(&pic, 0);
	assert_false(vpic_pending(&pic));
	out(0x20, 0x0a);			/* OCW3: read IRR */
	assert_int_equal(in(0x20), 0x01);
	vpic_set_line(&pic, 4, true);
	assert_true(vpic_pending(&pic));
	out(0x21, 0x00);
	assert_int_equal(vpic_ack(&pic), 0x30);	/* IRQ0 beats IRQ4 */
	assert_false(vpic_pending(&pic));		/* IRQ4 below IRQ0 in service */
	out(0x20, 0x20);
	assert_int_equal(vpic_ack(&pic), 0x34);
	/* level still high: no second edge, no second request */
	out(0x20, 0x20);
	assert_false(vpic_pending(&pic));
	vpic_set_line(&pic, 4, false);
	vpic_set_line(&pic, 4, true);
	assert_true(vpic_pending(&pic));
}

static void slave_through_cascade(void **state)
{
	linux_init();
	vpic_pulse(&pic, 12);
	assert_true(vpic_pending(&pic));
	assert_int_equal(vpic_ack(&pic), 0x3c);
	out(0xa0, 0x0b);
	assert_int_equal(in(0xa0), 0x10);
	out(0x20, 0x0b);
	assert_int_equal(in(0x20), 0x04);	/* cascade in service on the master */
	out(0xa0, 0x64);			/* specific EOI 4 on the slave */
	out(0x20, 0x62);			/* specific EOI 2 on the master */
	assert_int_equal(in(0xa0), 0x00);
	assert_int_equal(in(0x20), 0x00);
	out(0xa1, 0x10);			/* masked on the slave */
	vpic_pulse(&pic, 12);
	assert_false(vpic_pending(&pic));
}

static void reset_masks_everything(void **state)
{
	vpic_reset(&pic);
	vpic_pulse(&pic, 0);
	assert_false(vpic_pending(&pic));
}

/* The ROM's share (docs/VROM.md, "The 8259s and the alarm without an
 * exit"): ready chips, what is published, what is taken back and what is
 * refused, and an EOI taken from the page letting the next request in. */
static void rom_publish_and_take(void **state)
{
	uint32_t imr[2], isr[2], irr[2];
	struct rule_break brk;

	vpic_reset(&pic);
	assert_int_equal(vpic_rom_ready(&pic), 3);	/* not initialised: served as masked */
	out(0x20, 0x11);				/* ICW1: the master expects ICW2 */
	assert_int_equal(vpic_rom_ready(&pic), 2);
	linux_init();
	assert_int_equal(vpic_rom_ready(&pic), 3);

	vpic_pulse(&pic, 0);
	assert_int_equal(vpic_ack(&pic), 0x30);
	vpic_pulse(&pic, 0);
	vpic_pulse(&pic, 9);				/* the slave's input 1 */
	vpic_rom_publish(&pic, imr, isr, irr);
	assert_int_equal(isr[0], 0x01);
	assert_int_equal(irr[0], 0x05);			/* input 0 and the cascade */
	assert_int_equal(irr[1], 0x02);
	assert_false(vpic_pending(&pic));		/* input 0 in service holds them */

	/* The ROM masks input 0 and EOIs it. */
	imr[0] = 0x01;
	isr[0] = 0;
	assert_true(vpic_rom_take(&pic, imr, isr, &brk));
	assert_int_equal(in(0x21), 0x01);
	assert_true(vpic_pending(&pic));		/* the cascade's request comes in */
	assert_int_equal(vpic_ack(&pic), 0x39);

	/* Impossible states are refused and change nothing. */
	vpic_rom_publish(&pic, imr, isr, irr);
	imr[1] = 0x100;
	assert_false(vpic_rom_take(&pic, imr, isr, &brk));
	assert_string_equal(brk.why, "8259 slave mask 0x100 is not 8 bits");
	imr[1] = 0;
	imr[0] = 0xff;
	isr[0] |= 0x80;
	assert_false(vpic_rom_take(&pic, imr, isr, &brk));
	assert_string_equal(brk.why, "8259 master in-service bits 0x84 were never set (in service: 0x4); an EOI only clears them");
	assert_int_equal(in(0x21), 0x01);

	/* A chip that is not ready is not taken from the page at all. */
	out(0xa0, 0x11);
	vpic_rom_publish(&pic, imr, isr, irr);
	imr[1] = 0x1234;
	assert_true(vpic_rom_take(&pic, imr, isr, &brk));
	assert_int_equal(pic.chips[1].imr, 0);
}

/* vCPU 0's page is published; another vCPU then masks a line and EOIs
 * (its port writes are hypercalls): vCPU 0's page, unchanged by its ROM,
 * must not undo either at its next exit.  Only what vCPU 0's ROM changed
 * since the publication is taken. */
static void rom_take_keeps_other_vcpus_writes(void **state)
{
	uint32_t imr[2], isr[2], irr[2];
	struct rule_break brk;

	vpic_reset(&pic);
	linux_init();
	out(0x21, 0x00);
	vpic_pulse(&pic, 0);
	assert_int_equal(vpic_ack(&pic), 0x30);
	vpic_rom_publish(&pic, imr, isr, irr);
	out(0x21, 0x10);		/* another vCPU masks input 4 */
	out(0x20, 0x20);		/* and EOIs input 0 */
	assert_true(vpic_rom_take(&pic, imr, isr, &brk));
	assert_int_equal(in(0x21), 0x10);
	assert_int_equal(pic.chips[0].isr, 0);

	/* What vCPU 0's ROM did write still wins. */
	vpic_rom_publish(&pic, imr, isr, irr);
	out(0x21, 0x30);
	imr[0] = 0x01;
	assert_true(vpic_rom_take(&pic, imr, isr, &brk));
	assert_int_equal(in(0x21), 0x01);
}

/* The usual exit leaves the page as published: nothing to take back or
 * check (vpic_rom_untouched), and while the chips stay the same their key
 * does, so the next entry publishes nothing.  A mask or EOI the ROM
 * made, or a mask wider than a byte, is a page that differs; another
 * vCPU's port write, a new request or a chip's initialisation moves the
 * key, so the next entry publishes them. */
static void rom_untouched_and_key(void **state)
{
	uint32_t imr[2], isr[2], irr[2];
	uint64_t key;

	vpic_reset(&pic);
	linux_init();
	out(0x21, 0x00);
	vpic_pulse(&pic, 0);
	assert_int_equal(vpic_ack(&pic), 0x30);
	vpic_rom_publish(&pic, imr, isr, irr);
	key = vpic_rom_key(&pic);
	assert_true(vpic_rom_untouched(&pic, imr, isr));
	assert_true(vpic_rom_key(&pic) == key);

	out(0x21, 0x10);		/* another vCPU masks input 4 */
	assert_true(vpic_rom_untouched(&pic, imr, isr));
	assert_false(vpic_rom_key(&pic) == key);

	vpic_rom_publish(&pic, imr, isr, irr);
	key = vpic_rom_key(&pic);
	vpic_pulse(&pic, 3);		/* a request: the ROM's let-through test reads it */
	assert_false(vpic_rom_key(&pic) == key);
	vpic_pulse(&pic, 9);		/* the slave's, through the master's cascade input */
	vpic_rom_publish(&pic, imr, isr, irr);
	key = vpic_rom_key(&pic);
	out(0xa0, 0x11);		/* the slave's ICW1: no longer ready */
	assert_false(vpic_rom_key(&pic) == key);

	vpic_rom_publish(&pic, imr, isr, irr);
	isr[0] = 0;			/* the ROM's EOI */
	assert_false(vpic_rom_untouched(&pic, imr, isr));
	vpic_rom_publish(&pic, imr, isr, irr);
	imr[0] |= 0x100;		/* not a mask: taken, and refused */
	assert_false(vpic_rom_untouched(&pic, imr, isr));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mask_reads_back),
		cmocka_unit_test(edge_ack_eoi),
		cmocka_unit_test(masked_and_priority),
		cmocka_unit_test(slave_through_cascade),
		cmocka_unit_test(reset_masks_everything),
		cmocka_unit_test(rom_publish_and_take),
		cmocka_unit_test(rom_take_keeps_other_vcpus_writes),
		cmocka_unit_test(rom_untouched_and_key),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
