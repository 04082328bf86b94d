/* test_guest_mark.c - a guest's lines that start like the hypervisor's are marked. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>
#include "guest_mark.h"

static char printed[512];
static unsigned n;

static void out(void *ctx, char c)
{
	(void)ctx;
	assert_true(n < sizeof(printed) - 1);
	printed[n++] = c;
	printed[n] = 0;
}

/* What the console shows for the guest's bytes s, from a fresh stream. */
static const char *through(const char *s)
{
	struct guest_mark m = { 0 };

	n = 0;
	printed[0] = 0;
	for (; *s; s++)
		guest_mark_putc(&m, *s, out, NULL);
	return printed;
}

static void forged_lines_marked(void **state)
{
	assert_string_equal(through("vmi-hv: guest stopped: x\n"), "[guest] vmi-hv: guest stopped: x\n");
	assert_string_equal(through("ok\nvmi-hv: guest stopped\n"), "ok\n[guest] vmi-hv: guest stopped\n");
	assert_string_equal(through("ok\r\nvmi-hv 0.1: banner\r\n"), "ok\r\n[guest] vmi-hv 0.1: banner\r\n");
	/* A CR takes a terminal back to the start of the line. */
	assert_string_equal(through("xyz\rvmi-hv: guest stopped\n"), "xyz\r[guest] vmi-hv: guest stopped\n");
	/* Every line, not just the first. */
	assert_string_equal(through("vmi-hv\nvmi-hv\n"), "[guest] vmi-hv\n[guest] vmi-hv\n");
}

static void other_lines_unchanged(void **state)
{
	const char *plain[] = {
		"vmi-guest# ls\n", "vmi-h\n", "vm\n", "v\n", "x vmi-hv: in the middle\n",
		"vvmi-hv: not at the start\n", "VMI-HV uppercase\n", "\n\n", "",
	};

	for (unsigned i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		assert_string_equal(through(plain[i]), plain[i]);
}

static void held_bytes_wait_for_the_deciding_byte(void **state)
{
	struct guest_mark m = { 0 };

	n = 0;
	printed[0] = 0;
	guest_mark_putc(&m, 'v', out, NULL);
	guest_mark_putc(&m, 'm', out, NULL);
	guest_mark_putc(&m, 'i', out, NULL);
	assert_string_equal(printed, "");	/* could still be the word */
	guest_mark_putc(&m, '-', out, NULL);
	guest_mark_putc(&m, 'g', out, NULL);
	assert_string_equal(printed, "vmi-g");	/* decided: not the word, in order */
	guest_mark_putc(&m, 'v', out, NULL);	/* mid-line now: straight through */
	assert_string_equal(printed, "vmi-gv");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(forged_lines_marked),
		cmocka_unit_test(other_lines_unchanged),
		cmocka_unit_test(held_bytes_wait_for_the_deciding_byte),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
