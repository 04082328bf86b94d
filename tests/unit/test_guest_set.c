/* Unit tests for the guest set: module pairing, names, weights and the
 * memory split between guests (hv/loader/guest_set.c), with the guestN.*
 * options of hv/loader/cmdline.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "guest_set.h"
#include "layout.h"

#define RESERVE 2048u			/* 8 MiB of frames per guest */
#define MIB_FRAMES(m) ((uint64_t)(m) * 256)

static struct hv_options o;
static struct guest_spec g[HV_MAX_GUESTS];
static unsigned n;
static char err[256];

static void parse(const char *cmdline)
{
	assert_true(hv_parse_cmdline(cmdline, false, &o, err, sizeof(err)));
}

static void one_guest_keeps_the_loaders_checks(void **state)
{
	parse("");
	for (unsigned mods = 0; mods <= 2; mods++) {
		assert_true(guest_set_plan(mods, &o, MIB_FRAMES(64), RESERVE, g, &n, err, sizeof(err)));
		assert_int_equal(n, 1);
		assert_int_equal(g[0].kernel_module, 0);
		assert_int_equal(g[0].mem, GUEST_MEM_DEFAULT);
		assert_false(g[0].mem_given);	/* the loader may shrink it */
		assert_string_equal(g[0].name, "guest1");
		assert_int_equal(g[0].weight, 1);
	}
}

static void pairs_in_module_order(void **state)
{
	parse("guest2.name=web guest2.weight=3 guest1.mem=64M");
	assert_true(guest_set_plan(4, &o, MIB_FRAMES(1024), RESERVE, g, &n, err, sizeof(err)));
	assert_int_equal(n, 2);
	assert_int_equal(g[0].number, 1);
	assert_int_equal(g[0].kernel_module, 0);
	assert_int_equal(g[1].number, 2);
	assert_int_equal(g[1].kernel_module, 2);
	assert_string_equal(g[0].name, "guest1");
	assert_string_equal(g[1].name, "web");
	assert_int_equal(g[0].weight, 1);
	assert_int_equal(g[1].weight, 3);
	assert_int_equal(g[0].mem, 64u << 20);
	assert_int_equal(g[1].mem, GUEST_MEM_DEFAULT);
	assert_true(g[0].mem_given && g[1].mem_given);
}

static void unpaired_module_names_the_guest(void **state)
{
	parse("guest2.name=db");
	assert_false(guest_set_plan(3, &o, MIB_FRAMES(1024), RESERVE, g, &n, err, sizeof(err)));
	assert_non_null(strstr(err, "guest 2 (db): no initrd: module 3"));
	parse("");
	assert_false(guest_set_plan(7, &o, MIB_FRAMES(1024), RESERVE, g, &n, err, sizeof(err)));
	assert_non_null(strstr(err, "guest 4 (guest4): no initrd"));
}

static void too_many_guests(void **state)
{
	parse("");
	assert_false(guest_set_plan(34, &o, MIB_FRAMES(4096), RESERVE, g, &n, err, sizeof(err)));
	assert_non_null(strstr(err, "34 modules given: that is 17 guests, at most 16"));
	assert_int_equal(n, 0);
}

static void options_for_a_missing_guest(void **state)
{
	parse("guest3.weight=2");
	assert_false(guest_set_plan(4, &o, MIB_FRAMES(1024), RESERVE, g, &n, err, sizeof(err)));
	assert_non_null(strstr(err, "options for guest 3 given, but the modules make 2 guests"));
}

static void duplicate_names(void **state)
{
	parse("guest1.name=a guest2.name=a");
	assert_false(guest_set_plan(4, &o, MIB_FRAMES(1024), RESERVE, g, &n, err, sizeof(err)));
	assert_non_null(strstr(err, "guest 2 (a): the name is guest 1's too"));
}

static void given_sizes_must_fit_together(void **state)
{
	/* 2 x (64M + p2m + 8M) fit in 160M, not a third guest of 64M. */
	parse("guest_mem=64M guest3.name=big");
	assert_false(guest_set_plan(6, &o, MIB_FRAMES(160), RESERVE, g, &n, err, sizeof(err)));
	assert_non_null(strstr(err, "guest 3 (big): 64M of memory does not fit"));
	parse("guest_mem=64M");
	assert_true(guest_set_plan(4, &o, MIB_FRAMES(160), RESERVE, g, &n, err, sizeof(err)));
	assert_int_equal(g[0].mem, 64u << 20);
	assert_int_equal(g[1].mem, 64u << 20);
}

static void default_sizes_share_what_is_left(void **state)
{
	uint64_t total = 0;

	/* 200 MiB free, guest 1 takes 64M: the other two share the rest. */
	parse("guest1.mem=64M");
	assert_true(guest_set_plan(6, &o, MIB_FRAMES(200), RESERVE, g, &n, err, sizeof(err)));
	assert_int_equal(n, 3);
	assert_int_equal(g[0].mem, 64u << 20);
	assert_true(g[1].mem < GUEST_MEM_DEFAULT && g[1].mem >= GUEST_MEM_MIN);
	assert_int_equal(g[1].mem, g[2].mem);
	assert_int_equal(g[1].mem % (4u << 20), 0);
	for (unsigned i = 0; i < n; i++)
		total += guest_frames_needed(g[i].mem, RESERVE);
	assert_true(total <= MIB_FRAMES(200));
	/* With plenty, the default stays the default. */
	assert_true(guest_set_plan(6, &o, MIB_FRAMES(2048), RESERVE, g, &n, err, sizeof(err)));
	assert_int_equal(g[2].mem, GUEST_MEM_DEFAULT);
}

static void too_little_for_the_default_guests(void **state)
{
	parse("");
	assert_false(guest_set_plan(4, &o, MIB_FRAMES(40), RESERVE, g, &n, err, sizeof(err)));
	assert_non_null(strstr(err, "guest 1 (guest1): not enough memory"));
	assert_non_null(strstr(err, "at least 16 MiB each"));
}

static void guest_option_syntax(void **state)
{
	const char *bad[] = {
		"guest0.mem=64M", "guest17.name=x", "guest01.name=x", "guest100.name=x", "guest1.mem=8M", "guest1.mem=64Q",
		"guest1.name=", "guest1.name=a/b", "guest1.name=abcdefghijklmnop",
		"guest1.weight=0", "guest1.weight=101", "guest1.weight=x", "guest1.color=red",
		"guest42.mem=64M", "slice=0", "slice=1001", "slice=5ms",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		assert_false(hv_parse_cmdline(bad[i], false, &o, err, sizeof(err)));
		assert_non_null(strstr(err, bad[i]));
	}
	parse("");
	assert_int_equal(o.slice_ms, 10);
	parse("slice=25");
	assert_int_equal(o.slice_ms, 25);
	parse("guest4.name=a-b_c.9 guest4.weight=100 guest4.mem=1G");
	assert_string_equal(o.guests[3].name, "a-b_c.9");
	assert_int_equal(o.guests[3].weight, 100);
	assert_int_equal(o.guests[3].mem, 1u << 30);
}

/* vcpus= is every guest's count, guestN.vcpus= one guest's; together
 * they must fit the scheduler (SCHED_MAX vCPUs). */
static void vcpus_per_guest(void **state)
{
	parse("vcpus=2 guest2.vcpus=4");
	assert_true(guest_set_plan(6, &o, MIB_FRAMES(1024), RESERVE, g, &n, err, sizeof(err)));
	assert_int_equal(n, 3);
	assert_int_equal(g[0].vcpus, 2);
	assert_int_equal(g[1].vcpus, 4);
	assert_int_equal(g[2].vcpus, 2);
	parse("");
	assert_true(guest_set_plan(2, &o, MIB_FRAMES(64), RESERVE, g, &n, err, sizeof(err)));
	assert_int_equal(g[0].vcpus, 1);
	parse("vcpus=8 guest3.vcpus=1");
	assert_false(guest_set_plan(6, &o, MIB_FRAMES(1024), RESERVE, g, &n, err, sizeof(err)));
	assert_string_equal(err, "the guests have 17 vCPUs together; the scheduler takes at most 16");
	parse("guest2.vcpus=2");
	assert_false(guest_set_plan(2, &o, MIB_FRAMES(64), RESERVE, g, &n, err, sizeof(err)));
	assert_non_null(strstr(err, "options for guest 2 given"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_guest_keeps_the_loaders_checks),
		cmocka_unit_test(pairs_in_module_order),
		cmocka_unit_test(unpaired_module_names_the_guest),
		cmocka_unit_test(too_many_guests),
		cmocka_unit_test(options_for_a_missing_guest),
		cmocka_unit_test(duplicate_names),
		cmocka_unit_test(given_sizes_must_fit_together),
		cmocka_unit_test(default_sizes_share_what_is_left),
		cmocka_unit_test(too_little_for_the_default_guests),
		cmocka_unit_test(guest_option_syntax),
		cmocka_unit_test(vcpus_per_guest),
	};
	return cmocka_run_group_tests(tests, 0, 0);
}
