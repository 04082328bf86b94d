/*
 * Unit tests: the guest page-table walker (hv/mm/vtlb.c) against another
 * vCPU writing the same entry at the same moment.
 *
 * With several vCPUs in guest mode at once, another vCPU changes its page
 * table entries without an exit (the ROM's SwapPxE is an xchg) while the
 * walker, on an exit of this vCPU, is between reading an entry and setting
 * A/D in it.  The walker must set the bits as the CPU does, with a locked
 * update of the value it read: a cleared entry stays cleared (a write-back
 * of the stale value would give a process back a page its kernel has
 * freed), and the walk then sees what the other vCPU wrote.
 *
 * The other vCPU's write is made through the walker's test seam
 * (vtlb_env.after_entry_read, built only with VTLB_TEST_SEAMS): right
 * after the walker reads the entry under test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "shadow.h"

#define MACHINE_PAGES 512u
#define GUEST_PAGES   128u
#include "fake_machine.h"

#define AVL 0x200u	/* a bit available to software: the guest's own */

static struct vtlb v;
static struct guest_paging gp;
static struct vtlb_outcome out;

/* The other vCPU: when the walker has read race_at, write there what
 * race_write makes of the entry, races_left times (then reads go by). */
static uint32_t *race_at;
static uint32_t (*race_write)(uint32_t old);
static unsigned races_left, reads_of_race_at;

static void other_vcpu(uint32_t *entry)
{
	if (entry != race_at)
		return;
	reads_of_race_at++;
	if (races_left) {
		races_left--;
		__atomic_store_n(entry, race_write(*entry), __ATOMIC_SEQ_CST);
	}
}

static uint32_t cleared(uint32_t old) { return 0; }		/* SwapPxE(ptep, 0) */
static uint32_t remapped(uint32_t old) { return (21u << 12) | P | W | U; }
static uint32_t avl_flipped(uint32_t old) { return old ^ AVL; }

static void race(uint32_t *entry, uint32_t (*write)(uint32_t), unsigned times)
{
	race_at = entry;
	race_write = write;
	races_left = times;
	reads_of_race_at = 0;
}

/* Guest directory at gfn 1, its table for lin at gfn 2, the page at 10. */
#define GPD 1u
#define GPT 2u
#define LIN 0x08049000u
static uint32_t *pde(void) { return &gpage(GPD)[pde_index(LIN)]; }
static uint32_t *pte(void) { return &gpage(GPT)[pte_index(LIN)]; }

/* The shadow PTE the CPU would use for LIN, 0 if none. */
static uint32_t shadow_pte(void)
{
	uint32_t spde = ((uint32_t *)fake_map(vtlb_shadow_cr3(&v) >> 12))[pde_index(LIN)];

	return (spde & P) ? ((uint32_t *)fake_map(spde >> 12))[pte_index(LIN)] : 0;
}

static int setup(void **state)
{
	fake_machine_reset();
	assert_true(vtlb_init(&v, &env, &gm));
	v.env.after_entry_read = other_vcpu;
	gp = (struct guest_paging){ .pg = true, .wp = true, .pse = false, .cr3 = GPD << 12 };
	memset(&out, 0, sizeof(out));
	race(0, cleared, 0);
	*pde() = (GPT << 12) | P | W | U | A;
	*pte() = (10u << 12) | P | W | U;	/* present, not yet accessed */
	return 0;
}

static int teardown(void **state)
{
	vtlb_destroy(&v);
	assert_int_equal(allocs, frees);
	return 0;
}

/* ---- the pre-activation virtual TLB's fill --------------------------- */

/* A read of a page not yet accessed, while the other vCPU clears its PTE:
 * the PTE stays clear and the access faults as not present. */
static void a_pte_cleared_during_the_walk_stays_cleared(void **state)
{
	enum vtlb_result r;

	race(pte(), cleared, 1);
	r = vtlb_fault(&v, &gp, LIN, X86_PF_U, 3, &out);
	assert_int_equal(*pte(), 0);
	assert_int_equal(r, VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_U);
	assert_int_equal(out.cr2, LIN);
	assert_int_equal(shadow_pte(), 0);
}

/* A write to a clean page while the other vCPU takes the PTE away
 * (get-and-clear: it saw D clear and believes the page clean). */
static void a_write_racing_a_clear_sets_no_dirty_bit(void **state)
{
	enum vtlb_result r;

	*pte() = (10u << 12) | P | W | U | A;
	race(pte(), cleared, 1);
	r = vtlb_fault(&v, &gp, LIN, X86_PF_P | X86_PF_W | X86_PF_U, 3, &out);
	assert_int_equal(*pte(), 0);
	assert_int_equal(r, VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_W | X86_PF_U);
	assert_int_equal(shadow_pte(), 0);
}

/* The PDE, not yet accessed, cleared under the walk. */
static void a_pde_cleared_during_the_walk_stays_cleared(void **state)
{
	enum vtlb_result r;

	*pde() = (GPT << 12) | P | W | U;
	race(pde(), cleared, 1);
	r = vtlb_fault(&v, &gp, LIN, X86_PF_U, 3, &out);
	assert_int_equal(*pde(), 0);
	assert_int_equal(*pte(), (10u << 12) | P | W | U);	/* never reached */
	assert_int_equal(r, VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_U);
}

/* A 4 MiB page (CR4.PSE): its PDE is the leaf. */
static void a_large_page_cleared_during_the_walk_stays_cleared(void **state)
{
	enum vtlb_result r;

	gp.pse = true;
	*pde() = P | W | U | PS;	/* guest frames 0-1023: LIN's page is 0x49 */
	race(pde(), cleared, 1);
	r = vtlb_fault(&v, &gp, LIN, X86_PF_W | X86_PF_U, 3, &out);
	assert_int_equal(*pde(), 0);
	assert_int_equal(r, VTLB_GUEST_FAULT);
}

/* Changed to another page: the walk is made again and maps that one. */
static void a_pte_remapped_during_the_walk_maps_the_new_page(void **state)
{
	race(pte(), remapped, 1);
	assert_int_equal(vtlb_fault(&v, &gp, LIN, X86_PF_U, 3, &out), VTLB_FILLED);
	assert_int_equal(*pte(), (21u << 12) | P | W | U | A);
	assert_int_equal(shadow_pte() >> 12, p2m[21]);
	assert_int_equal(reads_of_race_at, 2);
	assert_int_equal(v.stats.walks_again, 1);
}

/* An entry rewritten at every read (only a guest that hammers its own
 * entry can do this): the walk gives up after a few rounds with a fault
 * the guest retries, rather than loop in the hypervisor. */
static void an_entry_that_keeps_changing_ends_the_walk(void **state)
{
	enum vtlb_result r;

	race(pte(), avl_flipped, ~0u);
	r = vtlb_fault(&v, &gp, LIN, X86_PF_U, 3, &out);
	assert_int_equal(*pte() & ~AVL, (10u << 12) | P | W | U);	/* no A written over it */
	assert_int_equal(r, VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_U);
	assert_int_equal(reads_of_race_at, VTLB_WALK_ROUNDS);
	assert_int_equal(v.stats.walks_again, VTLB_WALK_ROUNDS);
	assert_int_equal(shadow_pte(), 0);
	/* The other vCPU stops: the next walk goes through. */
	race(pte(), avl_flipped, 0);
	assert_int_equal(vtlb_fault(&v, &gp, LIN, X86_PF_U, 3, &out), VTLB_FILLED);
	assert_int_equal(*pte() & A, A);
}

/* The emulator's and hypercalls' translations take the same walk. */
static void a_translate_racing_a_clear_faults(void **state)
{
	uint32_t gpa = 0;
	enum vtlb_result r;

	race(pte(), cleared, 1);
	r = vtlb_translate(&v, &gp, LIN, true, 1, &gpa, &out);
	assert_int_equal(*pte(), 0);
	assert_int_equal(r, VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_W);
}

/* ---- the paravirtual shadows' fill (shadow_fault walks with the vTLB) -- */

/* The review's sequence: a process reads an old page on one vCPU while
 * another unmaps it with SwapPxE(ptep, 0) and drains that write at its
 * flush.  Neither the guest's PTE nor the shadow may come back. */
static void a_shadow_fill_racing_swap_pxe_keeps_the_page_unmapped(void **state)
{
	static uint16_t by_gfn[GUEST_PAGES];
	static struct shadow s;
	enum vtlb_result r;

	shadow_init(&s, &env, &gm, &v, by_gfn);
	shadow_vcpu_init(&s, 0, SWITCHER_PDE);
	assert_int_equal(shadow_load_cr3(&s, 0, GPD << 12, &out), VTLB_FILLED);
	race(pte(), cleared, 1);
	r = shadow_fault(&s, 0, &gp, LIN, X86_PF_U, 3, &out);
	/* The other vCPU's flush drains its queued SwapPxE. */
	assert_int_equal(shadow_entry_written(&s, (GPT << 12) + pte_index(LIN) * 4, &out), VTLB_FILLED);
	assert_int_equal(*pte(), 0);
	assert_int_equal(r, VTLB_GUEST_FAULT);
	{
		const uint32_t *spd = fake_map(shadow_cr3(&s, 0) >> 12);
		uint32_t spde = spd[pde_index(LIN)];

		assert_true(!(spde & P) || !(((uint32_t *)fake_map(spde >> 12))[pte_index(LIN)] & P));
	}
	shadow_destroy(&s);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(a_pte_cleared_during_the_walk_stays_cleared),
		T(a_write_racing_a_clear_sets_no_dirty_bit),
		T(a_pde_cleared_during_the_walk_stays_cleared),
		T(a_large_page_cleared_during_the_walk_stays_cleared),
		T(a_pte_remapped_during_the_walk_maps_the_new_page),
		T(an_entry_that_keeps_changing_ends_the_walk),
		T(a_translate_racing_a_clear_faults),
		T(a_shadow_fill_racing_swap_pxe_keeps_the_page_unmapped),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
