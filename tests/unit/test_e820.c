/* Unit tests for the guest e820 map (hv/loader/guest_layout.c: e820_build). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "guest_layout.h"
#include "layout.h"

static void map_for_128m(void **state)
{
	struct e820_entry e[GUEST_E820_MAX];
	unsigned n = e820_build(128ull << 20, e, GUEST_E820_MAX);

	assert_int_equal(n, 4);
	assert_int_equal(e[0].addr, 0);
	assert_int_equal(e[0].size, 0xa0000);
	assert_int_equal(e[0].type, E820_RAM);
	assert_int_equal(e[1].addr, 0xa0000);
	assert_int_equal(e[1].size, 0x20000);
	assert_int_equal(e[1].type, E820_RESERVED);
	/* The option-ROM area, where the VMI ROM goes, is reserved. */
	assert_int_equal(e[2].addr, GUEST_ROM_GPA);
	assert_int_equal(e[2].addr + e[2].size, 0x100000);
	assert_int_equal(e[2].type, E820_RESERVED);
	assert_int_equal(e[3].addr, 0x100000);
	assert_int_equal(e[3].addr + e[3].size, 128u << 20);
	assert_int_equal(e[3].type, E820_RAM);
}

static void entries_sorted_and_disjoint(void **state)
{
	struct e820_entry e[GUEST_E820_MAX];
	uint64_t sizes[] = { 16u << 20, 100u << 20, 1ull << 30, 3ull << 30 };

	for (unsigned s = 0; s < 4; s++) {
		unsigned n = e820_build(sizes[s], e, GUEST_E820_MAX);
		uint64_t ram = 0;

		assert_int_equal(n, 4);
		for (unsigned i = 0; i < n; i++) {
			assert_true(e[i].size > 0);
			if (i)
				assert_true(e[i].addr >= e[i - 1].addr + e[i - 1].size);
			if (e[i].type == E820_RAM)
				ram += e[i].size;
		}
		assert_int_equal(ram, sizes[s] - 0x60000);	/* all but the hole */
		assert_int_equal(e[n - 1].addr + e[n - 1].size, sizes[s]);
	}
}

static void too_small_or_no_room(void **state)
{
	struct e820_entry e[GUEST_E820_MAX];

	assert_int_equal(e820_build(0x100000, e, GUEST_E820_MAX), 0);
	assert_int_equal(e820_build(64u << 20, e, 3), 0);
}

static void type_names(void **state)
{
	assert_string_equal(e820_type_name(E820_RAM), "RAM");
	assert_string_equal(e820_type_name(E820_RESERVED), "reserved");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(map_for_128m),
		cmocka_unit_test(entries_sorted_and_disjoint),
		cmocka_unit_test(too_small_or_no_room),
		cmocka_unit_test(type_names),
	};
	return cmocka_run_group_tests_name("e820", tests, NULL, NULL);
}
