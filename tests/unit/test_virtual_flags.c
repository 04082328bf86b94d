/* test_virtual_flags.c - the EFLAGS a guest sees (its virtual IF and
 * IOPL over the real ones) and SetIOPLMask's argument check. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "virtual_flags.h"

/* The guest's IF and IOPL replace the real ones (IF 1, IOPL 0 in a
 * guest, but any real value is replaced); every other bit is kept. */
static void test_visible_eflags(void **state)
{
	(void)state;
	assert_int_equal(guest_visible_eflags(0x00000202, false, 0), 0x00000002);
	assert_int_equal(guest_visible_eflags(0x00000202, true, 0), 0x00000202);
	assert_int_equal(guest_visible_eflags(0x00000202, true, 0x3000), 0x00003202);
	assert_int_equal(guest_visible_eflags(0x00000202, false, 0x1000), 0x00001002);
	/* a real IOPL never shows through the virtual one */
	assert_int_equal(guest_visible_eflags(0x00003202, true, 0), 0x00000202);
	assert_int_equal(guest_visible_eflags(0x00003202, false, 0x2000), 0x00002002);
	/* arithmetic flags, DF, TF, AC, ID stay as they are */
	assert_int_equal(guest_visible_eflags(0x00240dd7, true, 0x3000), 0x00243fd7);
	/* bits outside IOPL in the virtual value are not shown */
	assert_int_equal(guest_visible_eflags(0x00000002, false, 0xffffffff), 0x00003002);
}

static void test_iopl_mask(void **state)
{
	(void)state;
	assert_true(iopl_mask_valid(0));
	assert_true(iopl_mask_valid(0x1000));
	assert_true(iopl_mask_valid(0x2000));
	assert_true(iopl_mask_valid(0x3000));
	assert_false(iopl_mask_valid(3));		/* a level, not a mask */
	assert_false(iopl_mask_valid(0x3200));		/* with IF */
	assert_false(iopl_mask_valid(0x4000));		/* NT */
	assert_false(iopl_mask_valid(0x80003000u));
	assert_false(iopl_mask_valid(0xffffffffu));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_visible_eflags),
		cmocka_unit_test(test_iopl_mask),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
