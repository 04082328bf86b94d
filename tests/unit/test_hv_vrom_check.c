/* Unit tests for the hypervisor's check of the embedded VMI ROM
 * (hv/loader/vrom_check.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "vrom_check.h"

static uint8_t rom[2048];
static struct vrom_info info;
static char why[200];

static void seal(void)
{
	uint8_t sum = 0;

	rom[sizeof(rom) - 1] = 0;
	for (size_t i = 0; i < sizeof(rom); i++)
		sum = (uint8_t)(sum + rom[i]);
	rom[sizeof(rom) - 1] = (uint8_t)-sum;
}

static int setup(void **state)
{
	memset(rom, 0, sizeof(rom));
	rom[0] = 0x55;
	rom[1] = 0xaa;
	rom[2] = sizeof(rom) / 512;
	memcpy(rom + 8, "cVmi", 4);
	rom[0x0c] = 0;
	rom[0x0d] = 13;
	seal();
	return 0;
}

static void good_rom(void **state)
{
	assert_true(vrom_check(rom, sizeof(rom), 0x20000, &info, why, sizeof(why)));
	assert_int_equal(info.size, sizeof(rom));
	assert_int_equal(info.api_major, 13);
	assert_int_equal(info.api_minor, 0);
}

static void bad_checksum(void **state)
{
	rom[100] ^= 1;
	assert_false(vrom_check(rom, sizeof(rom), 0x20000, &info, why, sizeof(why)));
	assert_non_null(strstr(why, "checksum"));
}

static void bad_signatures(void **state)
{
	rom[0] = 0;
	seal();
	assert_false(vrom_check(rom, sizeof(rom), 0x20000, &info, why, sizeof(why)));
	assert_non_null(strstr(why, "0xAA55"));
	setup(state);
	rom[8] = 'x';
	seal();
	assert_false(vrom_check(rom, sizeof(rom), 0x20000, &info, why, sizeof(why)));
	assert_non_null(strstr(why, "cVmi"));
}

static void bad_length(void **state)
{
	rom[2] = 8;	/* 4 KiB claimed, 2 KiB present */
	seal();
	assert_false(vrom_check(rom, sizeof(rom), 0x20000, &info, why, sizeof(why)));
	setup(state);
	assert_false(vrom_check(rom, sizeof(rom), 1024, &info, why, sizeof(why)));
	assert_false(vrom_check(rom, 64, 0x20000, &info, why, sizeof(why)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(good_rom, setup),
		cmocka_unit_test_setup(bad_checksum, setup),
		cmocka_unit_test_setup(bad_signatures, setup),
		cmocka_unit_test_setup(bad_length, setup),
	};
	return cmocka_run_group_tests_name("vrom_check", tests, NULL, NULL);
}
