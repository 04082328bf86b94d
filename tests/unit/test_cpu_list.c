/* Unit tests for the processor list parsers (hv/drivers/cpu_list.c):
 * the MADT's and the MP configuration table's processor entries, and
 * every way a table can lie about its own length. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <stdint.h>
#include <cmocka.h>
#include "cpu_list.h"

static uint8_t table[512];
static uint32_t len;

static void madt_start(void)
{
	memset(table, 0, sizeof(table));
	memcpy(table, "APIC", 4);
	len = 44;
}

static void madt_lapic(uint8_t acpi_id, uint8_t apic_id, uint32_t flags)
{
	uint8_t e[8] = { 0, 8, acpi_id, apic_id, flags, flags >> 8, flags >> 16, flags >> 24 };

	memcpy(table + len, e, 8);
	len += 8;
}

static void madt_other(uint8_t type, uint8_t size)
{
	table[len] = type;
	table[len + 1] = size;
	len += size;
}

static void madt_x2apic(uint32_t id, uint32_t flags)
{
	uint8_t *e = table + len;

	e[0] = 9;
	e[1] = 16;
	memcpy(e + 4, &id, 4);
	memcpy(e + 8, &flags, 4);
	len += 16;
}

static void test_madt_lists_enabled_and_disabled(void **state)
{
	struct cpu_list l;

	madt_start();
	madt_lapic(0, 0, 1);
	madt_other(1, 12);	/* an I/O APIC between them */
	madt_lapic(1, 1, 1);
	madt_lapic(2, 5, 0);	/* present but disabled */
	madt_other(2, 10);	/* an interrupt source override */
	assert_true(cpu_list_from_madt(table, len, &l));
	assert_string_equal(l.source, "ACPI MADT");
	assert_int_equal(l.n, 3);
	assert_int_equal(l.cpu[0].apic_id, 0);
	assert_true(l.cpu[0].enabled);
	assert_int_equal(l.cpu[1].apic_id, 1);
	assert_int_equal(l.cpu[2].apic_id, 5);
	assert_false(l.cpu[2].enabled);
	assert_int_equal(l.left_out, 0);
}

static void test_madt_x2apic_entries(void **state)
{
	struct cpu_list l;

	madt_start();
	madt_lapic(0, 0, 1);
	madt_x2apic(0, 1);	/* the same CPU again as x2APIC: listed once */
	madt_x2apic(3, 1);
	madt_x2apic(300, 1);	/* beyond 8-bit APIC IDs: left out, counted */
	assert_true(cpu_list_from_madt(table, len, &l));
	assert_int_equal(l.n, 2);
	assert_int_equal(l.cpu[1].apic_id, 3);
	assert_int_equal(l.left_out, 1);
}

static void test_madt_more_than_the_list_holds(void **state)
{
	struct cpu_list l;

	madt_start();
	for (unsigned i = 0; i < CPU_LIST_MAX + 3; i++)
		madt_lapic(i, i, 1);
	assert_true(cpu_list_from_madt(table, len, &l));
	assert_int_equal(l.n, CPU_LIST_MAX);
	assert_int_equal(l.left_out, 3);
}

static void test_madt_malformed(void **state)
{
	struct cpu_list l;

	madt_start();
	madt_lapic(0, 0, 1);
	assert_false(cpu_list_from_madt(table, len - 1, &l));	/* entry past the end */
	madt_start();
	madt_other(1, 0);	/* a zero-length entry would loop forever */
	assert_false(cpu_list_from_madt(table, len + 2, &l));
	madt_start();
	madt_other(1, 1);
	assert_false(cpu_list_from_madt(table, len + 2, &l));
	assert_false(cpu_list_from_madt(table, 40, &l));	/* shorter than its header */
	madt_start();
	madt_lapic(0, 0, 1);
	table[len] = 0;		/* a lone type byte at the very end */
	assert_false(cpu_list_from_madt(table, len + 1, &l));
}

static void mp_start(uint16_t count)
{
	memset(table, 0, sizeof(table));
	memcpy(table, "PCMP", 4);
	table[34] = count;
	table[35] = count >> 8;
	len = 44;
}

static void mp_processor(uint8_t apic_id, uint8_t flags)
{
	table[len] = 0;
	table[len + 1] = apic_id;
	table[len + 3] = flags;
	len += 20;
}

static void mp_bus(void)
{
	table[len] = 1;
	len += 8;
}

static void test_mp_lists_processors(void **state)
{
	struct cpu_list l;

	mp_start(4);
	mp_processor(0, 3);	/* enabled, BSP */
	mp_bus();
	mp_processor(1, 1);
	mp_processor(2, 0);
	assert_true(cpu_list_from_mp_config(table, len, &l));
	assert_string_equal(l.source, "MP table");
	assert_int_equal(l.n, 3);
	assert_true(l.cpu[1].enabled);
	assert_false(l.cpu[2].enabled);
}

static void test_mp_malformed(void **state)
{
	struct cpu_list l;

	mp_start(2);
	mp_processor(0, 1);
	assert_false(cpu_list_from_mp_config(table, len, &l));	/* count says 2, one there */
	mp_start(1);
	table[len] = 7;		/* unknown entry type: its size is unknown */
	len += 8;
	assert_false(cpu_list_from_mp_config(table, len, &l));
	mp_start(1);
	mp_processor(0, 1);
	assert_false(cpu_list_from_mp_config(table, len - 4, &l));
	mp_start(0);
	memcpy(table, "PCMQ", 4);
	assert_false(cpu_list_from_mp_config(table, len, &l));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_madt_lists_enabled_and_disabled),
		cmocka_unit_test(test_madt_x2apic_entries),
		cmocka_unit_test(test_madt_more_than_the_list_holds),
		cmocka_unit_test(test_madt_malformed),
		cmocka_unit_test(test_mp_lists_processors),
		cmocka_unit_test(test_mp_malformed),
	};

	return cmocka_run_group_tests(tests, 0, 0);
}
