/* Unit tests for the ACPI power-off tables' readers (hv/drivers/acpi_sleep.c):
 * the FADT's PM1 control blocks (32-bit and Generic Address forms) and the
 * \_S5 package's sleep types in AML, in the encodings firmware uses, and
 * the packages that lie about their length. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <stdint.h>
#include <cmocka.h>
#include "acpi_sleep.h"

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = v; p[1] = v >> 8; p[2] = v >> 16; p[3] = v >> 24;
}

static void fadt_v1(void **state)
{
	uint8_t f[116] = { 'F', 'A', 'C', 'P' };
	struct acpi_fadt_power pw;
	const char *why = 0;

	put32(f + 40, 0x7fe0040);	/* DSDT */
	put32(f + 48, 0xb2);		/* SMI_CMD */
	f[52] = 0xf1;			/* ACPI_ENABLE */
	put32(f + 64, 0x604);		/* PM1a_CNT_BLK */
	assert_true(acpi_fadt_power(f, sizeof(f), &pw, &why));
	assert_int_equal(pw.dsdt, 0x7fe0040);
	assert_int_equal(pw.pm1a_cnt, 0x604);
	assert_int_equal(pw.pm1b_cnt, 0);
	assert_int_equal(pw.smi_cmd, 0xb2);
	assert_int_equal(pw.acpi_enable, 0xf1);
}

static void fadt_x_fields_preferred(void **state)
{
	uint8_t f[244] = { 'F', 'A', 'C', 'P' };
	struct acpi_fadt_power pw;
	const char *why = 0;

	put32(f + 40, 0x1000);
	put32(f + 64, 0x604);
	put32(f + 68, 0x704);
	put32(f + 140, 0x2000);		/* X_DSDT */
	f[172] = 1;			/* X_PM1a_CNT_BLK: system I/O */
	put32(f + 176, 0x1804);
	f[184] = 0;			/* X_PM1b_CNT_BLK: memory space: not ours, the 32-bit one */
	put32(f + 188, 0xfed00000);
	assert_true(acpi_fadt_power(f, sizeof(f), &pw, &why));
	assert_int_equal(pw.dsdt, 0x2000);
	assert_int_equal(pw.pm1a_cnt, 0x1804);
	assert_int_equal(pw.pm1b_cnt, 0x704);
}

static void fadt_without_pm1a_or_short(void **state)
{
	uint8_t f[116] = { 'F', 'A', 'C', 'P' };
	struct acpi_fadt_power pw;
	const char *why = 0;

	assert_false(acpi_fadt_power(f, sizeof(f), &pw, &why));
	assert_non_null(strstr(why, "PM1a"));
	put32(f + 64, 0x604);
	why = 0;
	assert_false(acpi_fadt_power(f, 71, &pw, &why));
	assert_non_null(strstr(why, "too short"));
}

/* QEMU's i440fx DSDT: Name (\_S5, Package (0x04) { Zero, Zero, Zero, Zero }). */
static void s5_qemu(void **state)
{
	const uint8_t aml[] = { 0x10, 0x05, 0x5c, 0x00, 0x08, '_', 'S', '5', '_', 0x12, 0x06, 0x04,
				0x00, 0x00, 0x00, 0x00, 0xa4, 0x00 };
	uint8_t a = 9, b = 9;

	assert_true(acpi_s5_sleep_types(aml, sizeof(aml), &a, &b));
	assert_int_equal(a, 0);
	assert_int_equal(b, 0);
}

/* Root-prefixed name, byte constants, and a name "_S5_" used elsewhere
 * first (a method call, not a NameOp): the declaration is the one read. */
static void s5_byte_constants(void **state)
{
	const uint8_t aml[] = { 0x70, '_', 'S', '5', '_', 0x60,		/* Store (_S5, Local0) */
				0x08, '\\', '_', 'S', '5', '_', 0x12, 0x06, 0x02, 0x0a, 0x07, 0x0a, 0x05, 0x00 };
	uint8_t a = 9, b = 9;

	assert_true(acpi_s5_sleep_types(aml, sizeof(aml), &a, &b));
	assert_int_equal(a, 7);
	assert_int_equal(b, 5);
}

/* A two-byte PkgLength, One and a word constant. */
static void s5_long_pkglength(void **state)
{
	uint8_t aml[80] = { 0x08, '_', 'S', '5', '_', 0x12, 0x40 | 0x06, 0x01, 0x02, 0x01, 0x0b, 0x03, 0x00 };
	uint8_t a = 9, b = 9;

	/* PkgLength 0x16 = 22 bytes from its lead byte: within the 80. */
	assert_true(acpi_s5_sleep_types(aml, sizeof(aml), &a, &b));
	assert_int_equal(a, 1);
	assert_int_equal(b, 3);
}

static void s5_missing_or_malformed(void **state)
{
	const uint8_t none[] = { 0x08, '_', 'S', '3', '_', 0x12, 0x06, 0x04, 0, 0, 0, 0 };
	const uint8_t not_pkg[] = { 0x08, '_', 'S', '5', '_', 0x0a, 0x05 };
	const uint8_t beyond[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x3f, 0x04, 0, 0 };
	const uint8_t one_elem[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x04, 0x01, 0x00, 0x00 };
	const uint8_t cut[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x05, 0x02, 0x0a, 0x05 };
	const uint8_t not_int[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x06, 0x02, 0x0d, 'x', 0, 0 };
	const uint8_t truncated[] = { 0x08, '_', 'S', '5', '_', 0x12 };
	uint8_t a, b;

	assert_false(acpi_s5_sleep_types(none, sizeof(none), &a, &b));
	assert_false(acpi_s5_sleep_types(not_pkg, sizeof(not_pkg), &a, &b));
	assert_false(acpi_s5_sleep_types(beyond, sizeof(beyond), &a, &b));
	assert_false(acpi_s5_sleep_types(one_elem, sizeof(one_elem), &a, &b));
	assert_false(acpi_s5_sleep_types(cut, sizeof(cut), &a, &b));
	assert_false(acpi_s5_sleep_types(not_int, sizeof(not_int), &a, &b));
	assert_false(acpi_s5_sleep_types(truncated, sizeof(truncated), &a, &b));
	assert_false(acpi_s5_sleep_types(none, 0, &a, &b));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fadt_v1),
		cmocka_unit_test(fadt_x_fields_preferred),
		cmocka_unit_test(fadt_without_pm1a_or_short),
		cmocka_unit_test(s5_qemu),
		cmocka_unit_test(s5_byte_constants),
		cmocka_unit_test(s5_long_pkglength),
		cmocka_unit_test(s5_missing_or_malformed),
	};

	return cmocka_run_group_tests(tests, 0, 0);
}
