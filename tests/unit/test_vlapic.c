/* Unit tests for the virtual local APIC (hv/dev/vlapic.c): registers,
 * ICR decoding (destinations, shorthands, refused modes), priorities
 * against TPR and the in-service vector, EOI. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "vlapic.h"

static void registers(void **state)
{
	struct vlapic l;
	struct ipi ipi;
	uint32_t v;

	vlapic_reset(&l, 3);
	assert_true(vlapic_read(&l, VLAPIC_ID, &v));
	assert_int_equal(v, 3u << 24);
	assert_true(vlapic_read(&l, VLAPIC_VERSION, &v));
	assert_int_equal(v & 0xff, 0x14);
	assert_int_equal(vlapic_write(&l, VLAPIC_TPR, 0x1234, 4, &ipi), VLAPIC_OK);
	assert_true(vlapic_read(&l, VLAPIC_TPR, &v));
	assert_int_equal(v, 0x34);
	assert_int_equal(vlapic_write(&l, VLAPIC_SVR, 0x1ff, 4, &ipi), VLAPIC_OK);
	assert_true(vlapic_read(&l, VLAPIC_SVR, &v));
	assert_int_equal(v, 0x1ff);
	/* Unknown registers, the timer's counts, the ID: refused. */
	assert_false(vlapic_read(&l, 0x104, &v));
	assert_false(vlapic_read(&l, 0x1000, &v));
	assert_false(vlapic_read(&l, 0x380, &v));
	assert_int_equal(vlapic_write(&l, 0x380, 1, 4, &ipi), VLAPIC_REFUSED);
	assert_int_equal(vlapic_write(&l, 0x390, 1, 4, &ipi), VLAPIC_REFUSED);
	assert_int_equal(vlapic_write(&l, 0x3e0, 1, 4, &ipi), VLAPIC_REFUSED);
	assert_int_equal(vlapic_write(&l, VLAPIC_ID, 0, 4, &ipi), VLAPIC_REFUSED);
	assert_int_equal(vlapic_write(&l, 0xffffffffu, 0, 4, &ipi), VLAPIC_REFUSED);
}

/* LVTT: masked at reset; vector, mask and mode taken; anything else
 * refused, the register unchanged. */
static void lvt_timer(void **state)
{
	struct vlapic l;
	struct ipi ipi;
	uint32_t v;

	vlapic_reset(&l, 0);
	assert_true(vlapic_read(&l, VLAPIC_LVTT, &v));
	assert_int_equal(v, VLAPIC_LVT_MASKED);
	assert_false(vlapic_timer_fire(&l));		/* masked: nothing */
	assert_int_equal(l.irr[0] | l.irr[1] | l.irr[7], 0);
	assert_true(vlapic_timer_latched(&l));		/* so an expiry costs nothing */
	assert_int_equal(vlapic_write(&l, VLAPIC_LVTT, 0xef, 1, &ipi), VLAPIC_OK);
	assert_true(vlapic_read(&l, VLAPIC_LVTT, &v));
	assert_int_equal(v, 0xef);
	assert_int_equal(vlapic_write(&l, VLAPIC_LVTT, 0x200ef, 1, &ipi), VLAPIC_OK);	/* periodic mode: kept */
	assert_int_equal(vlapic_write(&l, VLAPIC_LVTT, 0x0f, 1, &ipi), VLAPIC_REFUSED);	/* vector below 16 */
	assert_int_equal(vlapic_write(&l, VLAPIC_LVTT, 0x600ef, 1, &ipi), VLAPIC_REFUSED);	/* mode 3 */
	assert_int_equal(vlapic_write(&l, VLAPIC_LVTT, 0x10ef, 1, &ipi), VLAPIC_REFUSED);	/* delivery status */
	assert_int_equal(vlapic_write(&l, VLAPIC_LVTT, 0x4ef, 1, &ipi), VLAPIC_REFUSED);	/* a delivery mode */
	assert_true(vlapic_read(&l, VLAPIC_LVTT, &v));
	assert_int_equal(v, 0x200ef);
	assert_false(vlapic_timer_requested(&l));
	assert_false(vlapic_timer_latched(&l));		/* unmasked, nothing requested */
	assert_true(vlapic_timer_fire(&l));
	assert_true(vlapic_timer_requested(&l));
	assert_true(vlapic_timer_latched(&l));		/* requested: another adds nothing */
	assert_int_equal(vlapic_pending(&l), -1);	/* the APIC is software-disabled */
	vlapic_write(&l, VLAPIC_SVR, 0x1ff, 1, &ipi);
	assert_int_equal(vlapic_pending(&l), 0xef);
	vlapic_ack(&l, 0xef);
	assert_false(vlapic_timer_requested(&l));
	assert_false(vlapic_timer_latched(&l));
	/* Masked with a vector below 16: taken (Linux masks with 0). */
	assert_int_equal(vlapic_write(&l, VLAPIC_LVTT, VLAPIC_LVT_MASKED, 1, &ipi), VLAPIC_OK);
	assert_false(vlapic_timer_fire(&l));
	assert_true(vlapic_timer_latched(&l));
}

static void icr_decoding(void **state)
{
	struct ipi ipi;

	assert_true(vlapic_decode_icr(0x40, 2u << 24, 0, 4, &ipi));	/* fixed 0x40 to APIC ID 2 */
	assert_int_equal(ipi.mode, IPI_FIXED);
	assert_int_equal(ipi.vector, 0x40);
	assert_int_equal(ipi.targets, 1u << 2);
	assert_true(vlapic_decode_icr(0x40041, 0, 1, 4, &ipi));		/* self */
	assert_int_equal(ipi.targets, 1u << 1);
	assert_true(vlapic_decode_icr(0x80041, 0, 1, 4, &ipi));		/* all */
	assert_int_equal(ipi.targets, 0xf);
	assert_true(vlapic_decode_icr(0xc0041, 0, 1, 4, &ipi));		/* all but self */
	assert_int_equal(ipi.targets, 0xd);
	assert_true(vlapic_decode_icr(0x41, 0xffu << 24, 1, 2, &ipi));	/* physical broadcast */
	assert_int_equal(ipi.targets, 0x3);
	assert_false(vlapic_decode_icr(0x41, 4u << 24, 0, 4, &ipi));	/* no such APIC ID */
	assert_false(vlapic_decode_icr(0x41, 200u << 24, 0, 4, &ipi));
	assert_false(vlapic_decode_icr(0x0f, 1u << 24, 0, 4, &ipi));	/* vector below 16 */
	assert_false(vlapic_decode_icr(0x500, 1u << 24, 0, 4, &ipi));	/* INIT */
	assert_int_equal(ipi.mode, IPI_INIT);
	assert_false(vlapic_decode_icr(0x608, 1u << 24, 0, 4, &ipi));	/* STARTUP */
	assert_int_equal(ipi.mode, IPI_STARTUP);
	assert_false(vlapic_decode_icr(0x141, 1u << 24, 0, 4, &ipi));	/* lowest priority */
	assert_false(vlapic_decode_icr(0x841, 1u << 24, 0, 4, &ipi));	/* logical */
	assert_false(vlapic_decode_icr(0x402, 1u << 24, 0, 4, &ipi));	/* NMI: not yet */
}

static void priorities_and_eoi(void **state)
{
	struct vlapic l;
	struct ipi ipi;

	vlapic_reset(&l, 0);
	vlapic_accept(&l, 0x40);
	assert_int_equal(vlapic_pending(&l), -1);		/* software-disabled (SVR) */
	vlapic_write(&l, VLAPIC_SVR, 0x1ff, 1, &ipi);
	assert_int_equal(vlapic_pending(&l), 0x40);
	vlapic_write(&l, VLAPIC_TPR, 0x40, 1, &ipi);
	assert_int_equal(vlapic_pending(&l), -1);		/* masked by TPR class 4 */
	vlapic_write(&l, VLAPIC_TPR, 0x30, 1, &ipi);
	assert_int_equal(vlapic_pending(&l), 0x40);
	vlapic_ack(&l, 0x40);
	assert_int_equal(vlapic_pending(&l), -1);
	vlapic_accept(&l, 0x45);				/* same class: waits for EOI */
	assert_int_equal(vlapic_pending(&l), -1);
	vlapic_accept(&l, 0x81);				/* higher class: nests */
	assert_int_equal(vlapic_pending(&l), 0x81);
	vlapic_ack(&l, 0x81);
	vlapic_write(&l, VLAPIC_EOI, 0, 1, &ipi);		/* ends 0x81 */
	assert_int_equal(vlapic_pending(&l), -1);		/* 0x40 still in service */
	vlapic_write(&l, VLAPIC_EOI, 0, 1, &ipi);		/* ends 0x40 */
	assert_int_equal(vlapic_pending(&l), 0x45);
	vlapic_accept(&l, 3);					/* below 16: ignored */
	vlapic_ack(&l, 0x45);
	vlapic_write(&l, VLAPIC_EOI, 0, 1, &ipi);
	assert_int_equal(vlapic_pending(&l), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(registers),
		cmocka_unit_test(lvt_timer),
		cmocka_unit_test(icr_decoding),
		cmocka_unit_test(priorities_and_eoi),
	};
	return cmocka_run_group_tests(tests, 0, 0);
}
