/* Unit tests for the hypervisor's check of the embedded VMI ROM
 * (hv/loader/vrom_check.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "vrom_check.h"
#include "vmi_abi.h"

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

/* vrom_refuse_call on the real ROM (build/vrom/vmi.rom): the slot becomes
 * what the generator makes of an unsupported call, romtool's verdict on
 * it says so, and the sum stays zero. */
static uint8_t real[65536];

static size_t load_real(void)
{
	FILE *f = fopen(VROM_IMAGE, "rb");
	size_t n;

	assert_non_null(f);
	n = fread(real, 1, sizeof(real), f);
	fclose(f);
	assert_true(n > 0 && n < sizeof(real));
	return n;
}

/* romtool dump's line for slot n of the image in path. */
static void dump_line(const char *path, unsigned n, char *line, size_t len)
{
	char cmd[600], want[16];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s dump %s 2>/dev/null", VROM_ROMTOOL, path);	/* its verify verdict: the slot is not what the definition says */
	snprintf(want, sizeof(want), "  %u ", n);
	p = popen(cmd, "r");
	assert_non_null(p);
	line[0] = 0;
	while (fgets(line, (int)len, p))
		if (!strncmp(line, want, strlen(want)))
			break;
	pclose(p);
	assert_int_equal(strncmp(line, want, strlen(want)), 0);
}

static void refuse_rewrites_slot(void **state)
{
	size_t len = load_real();
	char path[] = "/tmp/refused-rom-XXXXXX", line[300], model[300], *jmp, *mjmp;
	uint8_t sum = 0;
	int fd;

	assert_true(vrom_refuse_call(real, len, VMI_CALL_GetWallclockTime, why, sizeof(why)));
	assert_true(vrom_refuse_call(real, len, VMI_CALL_GetCR2, why, sizeof(why)));	/* a fast slot */
	for (size_t i = 0; i < len; i++)
		sum = (uint8_t)(sum + real[i]);
	assert_int_equal(sum, 0);
	assert_true(vrom_check(real, len, 0x20000, &info, why, sizeof(why)));
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, real, len), (ssize_t)len);
	close(fd);
	dump_line(path, VMI_CALL_GetWallclockTime, line, sizeof(line));
	dump_line(path, VMI_CALL_SetPxELong, model, sizeof(model));
	unlink(path);
	/* "unsupported (report, return error): mov $N,%eax; jmp X", X where
	 * the model jumps. */
	snprintf(model + 200, 100, "unsupported (report, return error): mov $0x%x,%%eax; jmp ",
		 VMI_CALL_GetWallclockTime);
	assert_non_null(strstr(line, model + 200));
	jmp = strstr(line, "jmp ");
	mjmp = strstr(model, "jmp ");
	assert_non_null(mjmp);
	assert_int_equal(strtoul(jmp + 4, NULL, 16), strtoul(mjmp + 4, NULL, 16));
	/* padded with int3 */
	for (unsigned i = 10; i < VROM_CALL_LEN; i++)
		assert_int_equal(real[VMI_CALL_GetWallclockTime * VROM_CALL_LEN + i], 0xcc);
	/* no slot beyond the table */
	assert_false(vrom_refuse_call(real, len, NUM_VMI_CALLS, why, sizeof(why)));
	assert_non_null(strstr(why, "no slot"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(good_rom, setup),
		cmocka_unit_test(refuse_rewrites_slot),
		cmocka_unit_test_setup(bad_checksum, setup),
		cmocka_unit_test_setup(bad_signatures, setup),
		cmocka_unit_test_setup(bad_length, setup),
	};
	return cmocka_run_group_tests_name("vrom_check", tests, NULL, NULL);
}
