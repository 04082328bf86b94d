/*
 * test_sysmap.c - guest EIPs named from a System.map (hv/lib/sysmap.c):
 * the nearest text symbol at or below, data symbols skipped, nothing
 * past 64 KiB or below the first symbol, the module name recognised.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sysmap.h"

static const char map_text[] =
	"c1000000 T _text\n"
	"c1000000 T startup_32\n"
	"c1001000 t early_idt\n"
	"c1002000 D some_data\n"
	"c1002100 T set_pte\n"
	"c1002180 W weak_thing\n"
	"c1002200 t vmi_selftest_unannounced_pte\n"
	"c1400000 B __bss_start\n";

static const struct sysmap map = { map_text, sizeof(map_text) - 1 };

static const char *describe(uint32_t addr)
{
	static char buf[80];

	sysmap_describe(&map, addr, buf, sizeof(buf));
	return buf;
}

static void nearest_text_symbol(void **state)
{
	(void)state;
	assert_string_equal(describe(0xc1002239), " (vmi_selftest_unannounced_pte+0x39)");
	assert_string_equal(describe(0xc1002100), " (set_pte+0x0)");
	assert_string_equal(describe(0xc1002106), " (set_pte+0x6)");
	/* D and W are not text: the T before them counts. */
	assert_string_equal(describe(0xc1002010), " (early_idt+0x1010)");
	assert_string_equal(describe(0xc10021a0), " (set_pte+0xa0)");
}

static void nothing_outside_the_kernel(void **state)
{
	(void)state;
	assert_string_equal(describe(0xc0ffffff), "");		/* below the first */
	assert_string_equal(describe(0xc1012201), "");		/* > 64 KiB past the last */
	assert_string_equal(describe(0xc00c0cb4), "");		/* the VMI ROM */
}

static void no_map_no_name(void **state)
{
	static const struct sysmap none = { 0, 0 };
	char buf[16] = "x";

	(void)state;
	sysmap_describe(&none, 0xc1002239, buf, sizeof(buf));
	assert_string_equal(buf, "");
}

static void module_names(void **state)
{
	(void)state;
	assert_true(sysmap_module_is("/work/build/guest/linux/System.map"));
	assert_true(sysmap_module_is("System.map"));
	assert_true(sysmap_module_is("/boot/System.map some args"));
	assert_false(sysmap_module_is("/boot/initrd.img"));
	assert_false(sysmap_module_is("/boot/NotSystem.map"));
	assert_false(sysmap_module_is("/boot/bzImage console=ttyS0 System.map"));
	assert_false(sysmap_module_is(""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(nearest_text_symbol),
		cmocka_unit_test(nothing_outside_the_kernel),
		cmocka_unit_test(no_map_no_name),
		cmocka_unit_test(module_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
