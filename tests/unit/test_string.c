/*
 * test_string.c - the hypervisor's memcpy and memset (hv/lib/string.c),
 * built here under the names hv_memcpy/hv_memset (see hv/Makefile), against
 * a byte-by-byte reference: every length from 0 to 100 at every source and
 * destination alignment, and nothing written outside [dst, dst + n).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

void *hv_memcpy(void *dst, const void *src, size_t n);
void *hv_memset(void *dst, int c, size_t n);

#define AREA 160
#define GUARD 0xa5

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed * 31 + i * 7 + 1);
}

static void copies_every_length_and_alignment(void **state)
{
	unsigned char src[AREA] __attribute__((aligned(8)));
	unsigned char dst[AREA] __attribute__((aligned(8)));
	unsigned char want[AREA];

	(void)state;
	for (unsigned so = 0; so < 8; so++)
		for (unsigned d0 = 0; d0 < 8; d0++)
			for (size_t n = 0; n <= 100; n++) {
				fill(src, AREA, so + d0 + (unsigned)n);
				memset(dst, GUARD, AREA);
				memset(want, GUARD, AREA);
				for (size_t i = 0; i < n; i++)
					want[d0 + i] = src[so + i];
				assert_ptr_equal(hv_memcpy(dst + d0, src + so, n), dst + d0);
				assert_memory_equal(dst, want, AREA);
			}
}

static void sets_every_length_and_alignment(void **state)
{
	unsigned char dst[AREA] __attribute__((aligned(8)));
	unsigned char want[AREA];
	static const int values[] = { 0, 0x5a, 0xff, 0x1234 };	/* only the low byte counts */

	(void)state;
	for (unsigned v = 0; v < 4; v++)
		for (unsigned d0 = 0; d0 < 8; d0++)
			for (size_t n = 0; n <= 100; n++) {
				memset(dst, GUARD, AREA);
				memset(want, GUARD, AREA);
				for (size_t i = 0; i < n; i++)
					want[d0 + i] = (unsigned char)values[v];
				assert_ptr_equal(hv_memset(dst + d0, values[v], n), dst + d0);
				assert_memory_equal(dst, want, AREA);
			}
}

/* A whole page, as the hypervisor zeroes shadow pages and guest frames. */
static void zeroes_a_page(void **state)
{
	static unsigned char page[4096 + 8] __attribute__((aligned(4096)));

	(void)state;
	memset(page, GUARD, sizeof(page));
	hv_memset(page, 0, 4096);
	for (size_t i = 0; i < 4096; i++)
		assert_int_equal(page[i], 0);
	for (size_t i = 4096; i < sizeof(page); i++)
		assert_int_equal(page[i], GUARD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(copies_every_length_and_alignment),
		cmocka_unit_test(sets_every_length_and_alignment),
		cmocka_unit_test(zeroes_a_page),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
