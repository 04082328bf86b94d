/* Unit tests for the page-frame allocator (hv/mm/frames.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "frames.h"

#define NFRAMES 1000
static uint32_t bitmap[FRAME_BITMAP_WORDS(NFRAMES)];
static struct frame_pool pool;

static int setup(void **state)
{
	frames_init(&pool, bitmap, NFRAMES);
	return 0;
}

static void starts_all_used(void **state)
{
	uint32_t pfn;

	assert_int_equal(pool.nfree, 0);
	assert_false(frames_alloc(&pool, &pfn));
	assert_false(frames_is_free(&pool, 0));
}

static void ram_rounds_inward(void **state)
{
	/* 0x1800-0x5800: only frames 2,3,4 are whole. */
	frames_add_ram(&pool, 0x1800, 0x5800);
	assert_int_equal(pool.nfree, 3);
	assert_false(frames_is_free(&pool, 1));
	assert_true(frames_is_free(&pool, 2));
	assert_true(frames_is_free(&pool, 4));
	assert_false(frames_is_free(&pool, 5));
}

static void reserve_rounds_outward(void **state)
{
	frames_add_ram(&pool, 0, 100 * 4096);
	/* 0x3001-0x4001 touches frames 3 and 4. */
	assert_int_equal(frames_reserve(&pool, 0x3001, 0x4001), 2);
	assert_false(frames_is_free(&pool, 3));
	assert_false(frames_is_free(&pool, 4));
	assert_true(frames_is_free(&pool, 5));
	assert_int_equal(pool.nfree, 98);
	/* Reserving again takes nothing more. */
	assert_int_equal(frames_reserve(&pool, 0x3000, 0x5000), 0);
	assert_int_equal(pool.nfree, 98);
}

static void ranges_beyond_pool_are_clipped(void **state)
{
	frames_add_ram(&pool, 990 * 4096ull, 0x100000000ull);
	assert_int_equal(pool.nfree, 10);
	frames_reserve(&pool, 995 * 4096ull, 0x200000000ull);
	assert_int_equal(pool.nfree, 5);
}

static void alloc_lowest_first_and_free(void **state)
{
	uint32_t a, b, c;

	frames_add_ram(&pool, 10 * 4096, 13 * 4096);
	assert_true(frames_alloc(&pool, &a));
	assert_true(frames_alloc(&pool, &b));
	assert_true(frames_alloc(&pool, &c));
	assert_int_equal(a, 10);
	assert_int_equal(b, 11);
	assert_int_equal(c, 12);
	assert_false(frames_alloc(&pool, &a));
	assert_true(frames_free(&pool, 11));
	assert_false(frames_free(&pool, 11));		/* double free refused */
	assert_false(frames_free(&pool, 5000));		/* out of range */
	assert_true(frames_alloc(&pool, &a));
	assert_int_equal(a, 11);
}

static void alloc_skips_full_words(void **state)
{
	uint32_t pfn;

	frames_add_ram(&pool, 0, NFRAMES * 4096ull);
	frames_reserve(&pool, 0, 700 * 4096);
	assert_true(frames_alloc(&pool, &pfn));
	assert_int_equal(pfn, 700);
}

static void contig_respects_alignment_and_holes(void **state)
{
	uint32_t pfn;

	frames_add_ram(&pool, 0, 64 * 4096);
	frames_reserve(&pool, 5 * 4096, 6 * 4096);	/* hole at 5 */
	assert_true(frames_alloc_contig(&pool, 8, 8, &pfn));
	assert_int_equal(pfn, 8);			/* 0-7 has the hole */
	assert_true(frames_alloc_contig(&pool, 4, 1, &pfn));
	assert_int_equal(pfn, 0);
	assert_true(frames_alloc_contig(&pool, 3, 1, &pfn));
	assert_int_equal(pfn, 16);			/* 4 and 6-7 too short */
	assert_false(frames_alloc_contig(&pool, 100, 1, &pfn));
	assert_false(frames_alloc_contig(&pool, 4, 3, &pfn));	/* not a power of 2 */
	assert_int_equal(pool.nfree, 64 - 1 - 8 - 4 - 3);
}

static void exhaustion_counts_match(void **state)
{
	uint32_t pfn, n = 0;

	frames_add_ram(&pool, 0, NFRAMES * 4096ull);
	while (frames_alloc(&pool, &pfn))
		n++;
	assert_int_equal(n, NFRAMES);
	assert_int_equal(pool.nfree, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(starts_all_used, setup),
		cmocka_unit_test_setup(ram_rounds_inward, setup),
		cmocka_unit_test_setup(reserve_rounds_outward, setup),
		cmocka_unit_test_setup(ranges_beyond_pool_are_clipped, setup),
		cmocka_unit_test_setup(alloc_lowest_first_and_free, setup),
		cmocka_unit_test_setup(alloc_skips_full_words, setup),
		cmocka_unit_test_setup(contig_respects_alignment_and_holes, setup),
		cmocka_unit_test_setup(exhaustion_counts_match, setup),
	};
	return cmocka_run_group_tests_name("frames", tests, NULL, NULL);
}
