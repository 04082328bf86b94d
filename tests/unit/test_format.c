/* Unit tests for the hypervisor's printf engine (hv/lib/format.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "hvlib.h"

static char buf[128];

#define CHECK(want, ...) do { \
	int n = fmt_snprintf(buf, sizeof(buf), __VA_ARGS__); \
	assert_string_equal(buf, want); \
	assert_int_equal(n, (int)strlen(want)); \
} while (0)

static void integers(void **state)
{
	CHECK("42 -7 0", "%d %i %u", 42, -7, 0u);
	CHECK("ff FF 0000beef", "%x %X %08x", 255u, 255u, 0xbeefu);
	CHECK("-2147483648", "%d", (int)0x80000000);
	CHECK("4294967295", "%u", 0xffffffffu);
	CHECK("17", "%o", 15u);
}

static void long_long(void **state)
{
	CHECK("18446744073709551615", "%llu", 0xffffffffffffffffull);
	CHECK("-9223372036854775808", "%lld", (long long)0x8000000000000000ull);
	CHECK("123456789abc", "%llx", 0x123456789abcull);
	CHECK("00000000deadbeef", "%016llx", 0xdeadbeefull);
	CHECK("4096", "%zu", (size_t)4096);
}

static void widths(void **state)
{
	CHECK("[   5]", "[%4d]", 5);
	CHECK("[5   ]", "[%-4d]", 5);
	CHECK("[-005]", "[%04d]", -5);
	CHECK("[  -5]", "[%4d]", -5);
	CHECK("[ab  ]", "[%-4s]", "ab");
	CHECK("[  ab]", "[%4s]", "ab");
	CHECK("[abc]", "[%.3s]", "abcdef");
	CHECK("[ab]", "[%.*s]", 2, "abcdef");
	CHECK("[x]", "[%c]", 'x');
}

/* Deliberately odd formats: keep gcc's format checker out of it. */
#pragma GCC diagnostic ignored "-Wformat"
#pragma GCC diagnostic ignored "-Wformat-overflow"
static void specials(void **state)
{
	CHECK("100%", "100%%");
	CHECK("(null)", "%s", (char *)NULL);
	CHECK("%q", "%q");
}

static void truncation(void **state)
{
	char small[5];
	int n = fmt_snprintf(small, sizeof(small), "%s", "abcdefgh");

	assert_int_equal(n, 8);
	assert_string_equal(small, "abcd");
	n = fmt_snprintf(NULL, 0, "%d", 12345);
	assert_int_equal(n, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(integers),
		cmocka_unit_test(long_long),
		cmocka_unit_test(widths),
		cmocka_unit_test(specials),
		cmocka_unit_test(truncation),
	};
	return cmocka_run_group_tests_name("format", tests, NULL, NULL);
}
