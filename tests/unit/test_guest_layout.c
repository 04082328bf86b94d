/* Unit tests for guest placement and the zero page (hv/loader/guest_layout.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "bzimage_fixture.h"
#include "guest_layout.h"
#include "layout.h"

static uint8_t img[FIX_LEN];
static struct bzimage_info bi;
static struct guest_plan plan;
static char why[200];

static int setup(void **state)
{
	fixture_bzimage(img);
	assert_true(bzimage_parse(img, FIX_LEN, &bi, why, sizeof(why)));
	return 0;
}

static void initrd_goes_high(void **state)
{
	assert_true(guest_plan_build(&bi, 128u << 20, 3000000, 20, &plan, why, sizeof(why)));
	assert_int_equal(plan.kernel_gpa, 0x100000);
	assert_int_equal(plan.entry, 0x100000);
	assert_int_equal(plan.initrd_size, 3000000);
	assert_int_equal(plan.initrd_gpa % 4096, 0);
	assert_true(plan.initrd_gpa + plan.initrd_size <= 128u << 20);
	assert_true(plan.initrd_gpa + 4096 + plan.initrd_size > 128u << 20);
	assert_true(plan.initrd_gpa >= plan.kernel_end);
	assert_int_equal(plan.kernel_end, 0x1800000);
	assert_int_equal(plan.e820_count, 4);
}

static void initrd_below_addr_max(void **state)
{
	bi.initrd_addr_max = 0x3fffffff;
	assert_true(guest_plan_build(&bi, 2048u << 20, 1 << 20, 0, &plan, why, sizeof(why)));
	assert_int_equal(plan.initrd_gpa + (1 << 20), 0x40000000);
}

static void initrd_larger_than_memory(void **state)
{
	assert_false(guest_plan_build(&bi, 32u << 20, 40u << 20, 0, &plan, why, sizeof(why)));
	assert_non_null(strstr(why, "larger than guest memory"));
}

static void initrd_does_not_fit_above_kernel(void **state)
{
	/* 32 MiB guest, kernel up to 24 MiB: 10 MiB will not fit. */
	assert_false(guest_plan_build(&bi, 32u << 20, 10u << 20, 0, &plan, why, sizeof(why)));
	assert_non_null(strstr(why, "does not fit"));
	assert_true(guest_plan_build(&bi, 32u << 20, 8u << 20, 0, &plan, why, sizeof(why)));
	assert_int_equal(plan.initrd_gpa, 24u << 20);
}

static void empty_initrd(void **state)
{
	assert_false(guest_plan_build(&bi, 128u << 20, 0, 0, &plan, why, sizeof(why)));
	assert_non_null(strstr(why, "empty"));
}

static void kernel_too_big_for_memory(void **state)
{
	assert_false(guest_plan_build(&bi, 16u << 20, 4096, 0, &plan, why, sizeof(why)));
	assert_non_null(strstr(why, "decompress"));
}

static void cmdline_too_long(void **state)
{
	assert_false(guest_plan_build(&bi, 128u << 20, 4096, 2048, &plan, why, sizeof(why)));
	assert_non_null(strstr(why, "command line"));
	assert_true(guest_plan_build(&bi, 128u << 20, 4096, 2047, &plan, why, sizeof(why)));
}

static void zero_page_contents(void **state)
{
	static uint8_t bp[BP_SIZE];

	assert_true(guest_plan_build(&bi, 128u << 20, 3000000, 20, &plan, why, sizeof(why)));
	memset(bp, 0xee, sizeof(bp));
	boot_params_fill(bp, img, &bi, &plan);
	/* The header is copied from the image... */
	assert_memory_equal(bp + HDR_HEADER, "HdrS", 4);
	assert_int_equal(le16(bp + HDR_VERSION), 0x020f);
	assert_int_equal(le16(bp + HDR_BOOT_FLAG), 0xaa55);
	/* ...and nothing outside it survives from the image or the buffer. */
	assert_int_equal(bp[0x26c], 0);
	assert_int_equal(bp[0x100], 0);
	/* The loader's fields. */
	assert_int_equal(bp[HDR_TYPE_OF_LOADER], 0xff);
	assert_true(bp[HDR_LOADFLAGS] & LOADFLAG_LOADED_HIGH);
	assert_false(bp[HDR_LOADFLAGS] & LOADFLAG_CAN_USE_HEAP);
	assert_int_equal(le32(bp + HDR_CMD_LINE_PTR), GUEST_CMDLINE_GPA);
	assert_int_equal(le32(bp + HDR_RAMDISK_IMAGE), plan.initrd_gpa);
	assert_int_equal(le32(bp + HDR_RAMDISK_SIZE), 3000000);
	assert_int_equal(le32(bp + BP_ALT_MEM_K), 127 * 1024);
	assert_int_equal(bp[BP_E820_ENTRIES], 4);
	/* e820 entries are packed 20-byte records. */
	assert_int_equal(le64(bp + BP_E820_TABLE + 2 * 20), GUEST_ROM_GPA);
	assert_int_equal(le32(bp + BP_E820_TABLE + 2 * 20 + 16), E820_RESERVED);
	assert_int_equal(le64(bp + BP_E820_TABLE + 3 * 20 + 8), (128u << 20) - 0x100000);
	/* No VGA text screen: vgacon must not start (zero cols and lines). */
	assert_int_equal(bp[0x07], 0);
	assert_int_equal(bp[0x0e], 0);
	assert_int_equal(bp[0x0f], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(initrd_goes_high, setup),
		cmocka_unit_test_setup(initrd_below_addr_max, setup),
		cmocka_unit_test_setup(initrd_larger_than_memory, setup),
		cmocka_unit_test_setup(initrd_does_not_fit_above_kernel, setup),
		cmocka_unit_test_setup(empty_initrd, setup),
		cmocka_unit_test_setup(kernel_too_big_for_memory, setup),
		cmocka_unit_test_setup(cmdline_too_long, setup),
		cmocka_unit_test_setup(zero_page_contents, setup),
	};
	return cmocka_run_group_tests_name("guest_layout", tests, NULL, NULL);
}
