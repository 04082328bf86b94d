/* Unit tests for bzImage validation (hv/loader/bzimage.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "bzimage_fixture.h"

static uint8_t img[FIX_LEN];
static struct bzimage_info bi;
static char why[200];

static int setup(void **state)
{
	fixture_bzimage(img);
	why[0] = '\0';
	return 0;
}

static void good_image_parses(void **state)
{
	assert_true(bzimage_parse(img, FIX_LEN, &bi, why, sizeof(why)));
	assert_int_equal(bi.protocol, 0x020f);
	assert_int_equal(bi.setup_size, 5 * 512);
	assert_int_equal(bi.pm_offset, 5 * 512);
	assert_int_equal(bi.pm_size, FIX_PM_SIZE);
	assert_int_equal(bi.header_end, 0x26c);
	assert_int_equal(bi.code32_start, 0x100000);
	assert_int_equal(bi.cmdline_size, 2047);
	assert_true(bi.relocatable);
	assert_int_equal(bi.init_size, 0x800000);
	assert_string_equal(bi.version, "6.1.0-test #1");
}

static void zero_setup_sects_means_four(void **state)
{
	img[HDR_SETUP_SECTS] = 0;
	assert_true(bzimage_parse(img, FIX_LEN, &bi, why, sizeof(why)));
	assert_int_equal(bi.setup_size, 5 * 512);
}

static void empty_module(void **state)
{
	assert_false(bzimage_parse(img, 0, &bi, why, sizeof(why)));
	assert_non_null(strstr(why, "empty"));
}

static void elf_file(void **state)
{
	memcpy(img, "\177ELF\1\1\1", 7);
	assert_false(bzimage_parse(img, FIX_LEN, &bi, why, sizeof(why)));
	assert_non_null(strstr(why, "ELF"));
}

static void random_bytes(void **state)
{
	uint32_t x = 12345;

	for (size_t i = 0; i < FIX_LEN; i++) {
		x = x * 1103515245 + 12345;
		img[i] = (uint8_t)(x >> 16);
	}
	img[0x1fe] = 0x12;	/* make sure the signature is not there by luck */
	assert_false(bzimage_parse(img, FIX_LEN, &bi, why, sizeof(why)));
	assert_non_null(strstr(why, "0xAA55"));
}

static void too_small(void **state)
{
	assert_false(bzimage_parse(img, 100, &bi, why, sizeof(why)));
	assert_non_null(strstr(why, "too small"));
}

static void no_hdrs(void **state)
{
	memcpy(img + HDR_HEADER, "XXXX", 4);
	assert_false(bzimage_parse(img, FIX_LEN, &bi, why, sizeof(why)));
	assert_non_null(strstr(why, "HdrS"));
}

static void protocol_too_old(void **state)
{
	put16(img + HDR_VERSION, 0x0205);
	assert_false(bzimage_parse(img, FIX_LEN, &bi, why, sizeof(why)));
	assert_non_null(strstr(why, "2.05 is too old"));
	put16(img + HDR_VERSION, 0x0206);
	assert_true(bzimage_parse(img, FIX_LEN, &bi, why, sizeof(why)));
	assert_int_equal(bi.init_size, 0);		/* 2.10+ field not read */
	assert_int_equal(bi.pref_address, 0x100000);
}

static void zimage_rejected(void **state)
{
	img[HDR_LOADFLAGS] = 0;
	assert_false(bzimage_parse(img, FIX_LEN, &bi, why, sizeof(why)));
	assert_non_null(strstr(why, "LOADED_HIGH"));
}

static void truncated(void **state)
{
	assert_false(bzimage_parse(img, FIX_LEN - 16, &bi, why, sizeof(why)));
	assert_non_null(strstr(why, "truncated"));
	img[HDR_SETUP_SECTS] = 200;	/* setup larger than the file */
	assert_false(bzimage_parse(img, FIX_LEN, &bi, why, sizeof(why)));
	assert_non_null(strstr(why, "truncated"));
}

static void odd_code32_start(void **state)
{
	put32(img + HDR_CODE32_START, 0x200000);
	assert_false(bzimage_parse(img, FIX_LEN, &bi, why, sizeof(why)));
	assert_non_null(strstr(why, "code32_start"));
}

static void bad_alignment(void **state)
{
	put32(img + HDR_KERNEL_ALIGNMENT, 0x300000);
	assert_false(bzimage_parse(img, FIX_LEN, &bi, why, sizeof(why)));
	assert_non_null(strstr(why, "power of two"));
}

static void footprint(void **state)
{
	assert_true(bzimage_parse(img, FIX_LEN, &bi, why, sizeof(why)));
	/* Relocatable, aligned 16 MiB, pref 16 MiB: runs at 16 MiB. */
	assert_int_equal(bzimage_footprint_end(&bi, 0x100000), 0x1000000 + 0x800000);
	/* Not relocatable: runs at pref_address. */
	bi.relocatable = false;
	bi.pref_address = 0x200000;
	assert_int_equal(bzimage_footprint_end(&bi, 0x100000), 0x200000 + 0x800000);
	/* No init_size (old protocol): just the image. */
	bi.init_size = 0;
	assert_int_equal(bzimage_footprint_end(&bi, 0x100000), 0x100000 + FIX_PM_SIZE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(good_image_parses, setup),
		cmocka_unit_test_setup(zero_setup_sects_means_four, setup),
		cmocka_unit_test_setup(empty_module, setup),
		cmocka_unit_test_setup(elf_file, setup),
		cmocka_unit_test_setup(random_bytes, setup),
		cmocka_unit_test_setup(too_small, setup),
		cmocka_unit_test_setup(no_hdrs, setup),
		cmocka_unit_test_setup(protocol_too_old, setup),
		cmocka_unit_test_setup(zimage_rejected, setup),
		cmocka_unit_test_setup(truncated, setup),
		cmocka_unit_test_setup(odd_code32_start, setup),
		cmocka_unit_test_setup(bad_alignment, setup),
		cmocka_unit_test_setup(footprint, setup),
	};
	return cmocka_run_group_tests_name("bzimage", tests, NULL, NULL);
}
