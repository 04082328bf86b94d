/*
 * Unit tests for the pre-activation virtual TLB (hv/mm/vtlb.c).
 *
 * Machine memory is the fake of fake_machine.h: 512 pages, of which the
 * guest's 256 are scattered through the first part.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "vtlb.h"

/* 256 guest pages (1 MiB): the option-ROM area 0xC0000-0xDFFFF is inside. */
#define MACHINE_PAGES 512u
#define GUEST_PAGES   256u
#include "fake_machine.h"

static struct vtlb v;
static struct guest_paging gp;
static struct vtlb_outcome out;

/* Guest page directory at gfn 1; page tables wherever tests put them. */
#define GPD 1u
static void set_pde(uint32_t lin, uint32_t val) { gpage(GPD)[pde_index(lin)] = val; }
static uint32_t get_pde(uint32_t lin) { return gpage(GPD)[pde_index(lin)]; }
static void set_pte(uint32_t ptgfn, uint32_t lin, uint32_t val) { gpage(ptgfn)[pte_index(lin)] = val; }
static uint32_t get_pte(uint32_t ptgfn, uint32_t lin) { return gpage(ptgfn)[pte_index(lin)]; }

/* The shadow PTE the CPU would use for lin, 0 if none. */
static uint32_t shadow_pte(uint32_t lin)
{
	uint32_t *pd = fake_map(vtlb_shadow_cr3(&v) >> 12);
	uint32_t pde = pd[pde_index(lin)];

	if (!(pde & P))
		return 0;
	return ((uint32_t *)fake_map(pde >> 12))[pte_index(lin)];
}

static int setup(void **state)
{
	fake_machine_reset();
	assert_true(vtlb_init(&v, &env, &gm));
	gp = (struct guest_paging){ .pg = true, .wp = true, .pse = false, .cr3 = GPD << 12 };
	memset(&out, 0, sizeof(out));
	return 0;
}

static int teardown(void **state)
{
	vtlb_destroy(&v);
	assert_int_equal(allocs, frees);
	return 0;
}

/* ---- the shadow page directory ------------------------------------- */

static void init_installs_only_the_switcher(void **state)
{
	uint32_t *pd = fake_map(vtlb_shadow_cr3(&v) >> 12);

	assert_int_equal(vtlb_shadow_cr3(&v) & 0xfff, 0);
	assert_int_equal(pd[1023], SWITCHER_PDE);
	for (int i = 0; i < 1023; i++)
		assert_int_equal(pd[i], 0);
	assert_int_equal(allocs, 1);
	assert_int_equal(v.stats.shadow_pages_in_use, 0);
}

static void init_fails_without_a_frame(void **state)
{
	struct vtlb v2;

	alloc_limit = allocs;
	assert_false(vtlb_init(&v2, &env, &gm));
}

/* ---- paging off ------------------------------------------------------ */

static void physical_mode_fills_identity_writable(void **state)
{
	gp.pg = false;
	assert_int_equal(vtlb_fault(&v, &gp, 0x5123, 0, 1, &out), VTLB_FILLED);
	assert_int_equal(shadow_pte(0x5123), (p2m[5] << 12) | P | W | U);
	assert_int_equal(v.stats.fills, 1);
	assert_int_equal(v.stats.shadow_pages_in_use, 1);
	/* The guest frame 5 is untouched: no A/D without paging. */
	assert_int_equal(gpage(5)[0], 0);
	/* The rest of the guest's memory in that 4 MiB came along (it has
	 * no A/D bits to get wrong), and nothing beyond it. */
	assert_int_equal(v.stats.prefetched, GUEST_PAGES - 1);
	assert_int_equal(shadow_pte(0x0000), (p2m[0] << 12) | P | W | U);
	assert_int_equal(shadow_pte(0xFF000), (p2m[0xFF] << 12) | P | W | U);
	assert_int_equal(shadow_pte(0x100000), 0);
	assert_int_equal(vtlb_fault(&v, &gp, 0xFF000, X86_PF_W, 1, &out), VTLB_FILLED);
	assert_int_equal(v.stats.prefetched, GUEST_PAGES - 1);
}

static void paging_on_fills_only_the_faulting_page(void **state)
{
	set_pde(0, (2 << 12) | P | W | U);
	set_pte(2, 0x0000, (7 << 12) | P | W | U | A | D);
	set_pte(2, 0x1000, (8 << 12) | P | W | U | A | D);
	assert_int_equal(vtlb_fault(&v, &gp, 0x0000, 0, 1, &out), VTLB_FILLED);
	assert_int_not_equal(shadow_pte(0x0000), 0);
	assert_int_equal(shadow_pte(0x1000), 0);
	assert_int_equal(v.stats.prefetched, 0);
}

static void physical_mode_outside_memory_is_a_violation(void **state)
{
	gp.pg = false;
	assert_int_equal(vtlb_fault(&v, &gp, GUEST_PAGES * 4096, X86_PF_W, 1, &out), VTLB_VIOLATION);
	assert_string_equal(out.brk.why, "paging off: guest-physical 0x00100000 is outside its 0x100 pages");
	assert_int_equal(vtlb_fault(&v, &gp, 0xFFC00010, 0, 1, &out), VTLB_VIOLATION);
	assert_non_null(strstr(out.brk.why, "reserved top"));
	assert_int_equal(((uint32_t *)fake_map(vtlb_shadow_cr3(&v) >> 12))[1023], SWITCHER_PDE);
	assert_int_equal(v.stats.violations, 2);
	assert_int_equal(v.stats.fills, 0);
}

/* ---- 4 KiB pages, accessed and dirty bits ---------------------------- */

static void read_sets_accessed_only_and_maps_read_only(void **state)
{
	const uint32_t lin = 0xC0003456;

	set_pde(lin, (2 << 12) | P | W | U);
	set_pte(2, lin, (7 << 12) | P | W | U);
	assert_int_equal(vtlb_fault(&v, &gp, lin, 0, 1, &out), VTLB_FILLED);
	assert_int_equal(get_pde(lin), (2 << 12) | P | W | U | A);
	assert_int_equal(get_pte(2, lin), (7 << 12) | P | W | U | A);
	/* Writable in the guest, but not dirty yet: read-only shadow. */
	assert_int_equal(shadow_pte(lin), (p2m[7] << 12) | P | U);

	/* The first write faults (protection, write), sets D, upgrades. */
	assert_int_equal(vtlb_fault(&v, &gp, lin, X86_PF_P | X86_PF_W, 1, &out), VTLB_FILLED);
	assert_int_equal(get_pte(2, lin), (7 << 12) | P | W | U | A | D);
	assert_int_equal(shadow_pte(lin), (p2m[7] << 12) | P | W | U);
	assert_int_equal(v.stats.fills, 2);
	assert_int_equal(v.stats.dirty_faults, 1);
	assert_int_equal(v.stats.guest_faults, 0);
}

static void write_sets_accessed_and_dirty(void **state)
{
	const uint32_t lin = 0x08048000;

	set_pde(lin, (3 << 12) | P | W | U);
	set_pte(3, lin, (9 << 12) | P | W | U);
	assert_int_equal(vtlb_fault(&v, &gp, lin, X86_PF_W | X86_PF_U, 3, &out), VTLB_FILLED);
	assert_int_equal(get_pte(3, lin), (9 << 12) | P | W | U | A | D);
	assert_int_equal(get_pde(lin) & (A | D), A);   /* D is a leaf bit only */
	assert_int_equal(shadow_pte(lin), (p2m[9] << 12) | P | W | U);
}

static void dirty_page_read_maps_writable(void **state)
{
	const uint32_t lin = 0x00400000;

	set_pde(lin, (3 << 12) | P | W);
	set_pte(3, lin, (9 << 12) | P | W | A | D);
	assert_int_equal(vtlb_fault(&v, &gp, lin, 0, 1, &out), VTLB_FILLED);
	assert_int_equal(shadow_pte(lin), (p2m[9] << 12) | P | W);
}

static void permissions_combine_pde_and_pte(void **state)
{
	const uint32_t lin = 0x00800000;

	/* Read-only PDE over a writable PTE: read-only; supervisor PDE over
	 * a user PTE: supervisor only. */
	set_pde(lin, (4 << 12) | P);
	set_pte(4, lin, (10 << 12) | P | W | U | D);
	assert_int_equal(vtlb_fault(&v, &gp, lin, 0, 1, &out), VTLB_FILLED);
	assert_int_equal(shadow_pte(lin), (p2m[10] << 12) | P);
	assert_int_equal(vtlb_fault(&v, &gp, lin, X86_PF_P | X86_PF_W, 1, &out), VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_P | X86_PF_W);
	assert_int_equal(vtlb_fault(&v, &gp, lin, X86_PF_P | X86_PF_U, 3, &out), VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_P | X86_PF_U);
}

static void pse_off_ignores_the_ps_bit(void **state)
{
	const uint32_t lin = 0x00C01000;

	set_pde(lin, (5 << 12) | P | W | PS);
	set_pte(5, lin, (12 << 12) | P | W | D);
	assert_int_equal(vtlb_fault(&v, &gp, lin, 0, 1, &out), VTLB_FILLED);
	assert_int_equal(shadow_pte(lin), (p2m[12] << 12) | P | W);
}

/* ---- 4 MiB pages ------------------------------------------------------ */

static void large_page_is_shadowed_as_4k_entries(void **state)
{
	const uint32_t lin = 0xC0005678;   /* guest frame 5 of the 4 MiB page at 0 */

	gp.pse = true;
	set_pde(lin, 0x00000000 | P | W | PS);
	assert_int_equal(vtlb_fault(&v, &gp, lin, 0, 1, &out), VTLB_FILLED);
	assert_int_equal(get_pde(lin), P | W | PS | A);
	assert_int_equal(shadow_pte(lin), (p2m[5] << 12) | P);
	assert_int_equal(vtlb_fault(&v, &gp, lin, X86_PF_P | X86_PF_W, 1, &out), VTLB_FILLED);
	assert_int_equal(get_pde(lin), P | W | PS | A | D);
	assert_int_equal(shadow_pte(lin), (p2m[5] << 12) | P | W);
	/* A second page of the same 4 MiB page, already dirty: writable. */
	assert_int_equal(vtlb_fault(&v, &gp, 0xC0006000, 0, 1, &out), VTLB_FILLED);
	assert_int_equal(shadow_pte(0xC0006000), (p2m[6] << 12) | P | W);
	assert_int_equal(v.stats.shadow_pages_in_use, 1);
}

static void large_page_translate_gives_the_offset(void **state)
{
	uint32_t gpa = 0;

	gp.pse = true;
	set_pde(0x80000000, P | W | U | PS);
	assert_int_equal(vtlb_translate(&v, &gp, 0x8003ABCD, false, 3, &gpa, &out), VTLB_FILLED);
	assert_int_equal(gpa, 0x0003ABCD);
}

static void large_page_beyond_guest_memory_is_a_violation(void **state)
{
	gp.pse = true;
	set_pde(0xC0000000, P | W | PS);
	/* Frame 0x100 of the 4 MiB page is the first one the guest lacks. */
	assert_int_equal(vtlb_fault(&v, &gp, 0xC0100000, 0, 1, &out), VTLB_VIOLATION);
	assert_string_equal(out.brk.why,
		"guest 4 MiB PDE 0x00000083 for linear 0xc0100000 maps frame 0x100 outside its 0x100 pages");
	assert_int_equal(v.stats.fills, 0);
}

static void large_page_high_bits_are_a_violation(void **state)
{
	gp.pse = true;
	set_pde(0xC0000000, 0x2000 | P | W | PS);   /* PSE-36 bit: frame above 4 GiB */
	assert_int_equal(vtlb_fault(&v, &gp, 0xC0000000, 0, 1, &out), VTLB_VIOLATION);
	assert_non_null(strstr(out.brk.why, "bits 13-21"));
}

static void invlpg_in_a_large_page_drops_all_of_it(void **state)
{
	gp.pse = true;
	set_pde(0xC0000000, P | W | PS | D);
	assert_int_equal(vtlb_fault(&v, &gp, 0xC0001000, 0, 1, &out), VTLB_FILLED);
	assert_int_equal(vtlb_fault(&v, &gp, 0xC0002000, 0, 1, &out), VTLB_FILLED);
	assert_int_equal(v.stats.shadow_pages_in_use, 1);
	vtlb_invlpg(&v, 0xC0002000);
	assert_int_equal(shadow_pte(0xC0001000), 0);
	assert_int_equal(shadow_pte(0xC0002000), 0);
	assert_int_equal(v.stats.shadow_pages_in_use, 0);
	assert_int_equal(allocs - frees, 1);   /* just the PD */
}

/* ---- faults reflected into the guest ----------------------------------- */

static void not_present_pde_and_pte(void **state)
{
	const uint32_t lin = 0xC0100000;

	assert_int_equal(vtlb_fault(&v, &gp, lin + 4, X86_PF_W, 1, &out), VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_W);
	assert_int_equal(out.cr2, lin + 4);
	set_pde(lin, (2 << 12) | P | W | U);
	assert_int_equal(vtlb_fault(&v, &gp, lin + 8, X86_PF_U, 3, &out), VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_U);
	assert_int_equal(out.cr2, lin + 8);
	/* No side effects on a fault: the PDE's A stays clear. */
	assert_int_equal(get_pde(lin), (2 << 12) | P | W | U);
	assert_int_equal(v.stats.guest_faults, 2);
	assert_int_equal(v.stats.fills, 0);
}

static void user_access_to_supervisor_page(void **state)
{
	const uint32_t lin = 0xC0000000;

	set_pde(lin, (2 << 12) | P | W | U);
	set_pte(2, lin, (7 << 12) | P | W);
	assert_int_equal(vtlb_fault(&v, &gp, lin, X86_PF_U, 3, &out), VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_P | X86_PF_U);
	assert_int_equal(vtlb_fault(&v, &gp, lin, X86_PF_U | X86_PF_W, 3, &out), VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_P | X86_PF_W | X86_PF_U);
	assert_int_equal(get_pte(2, lin), (7 << 12) | P | W);
	/* The same page from ring 1 is fine. */
	assert_int_equal(vtlb_fault(&v, &gp, lin, 0, 1, &out), VTLB_FILLED);
	assert_int_equal(shadow_pte(lin), (p2m[7] << 12) | P);
}

static void user_write_to_read_only_page(void **state)
{
	const uint32_t lin = 0x08049000;

	set_pde(lin, (2 << 12) | P | W | U);
	set_pte(2, lin, (7 << 12) | P | U);
	assert_int_equal(vtlb_fault(&v, &gp, lin, X86_PF_W | X86_PF_U, 3, &out), VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_P | X86_PF_W | X86_PF_U);
	/* User writes ignore CR0.WP = 0. */
	gp.wp = false;
	assert_int_equal(vtlb_fault(&v, &gp, lin, X86_PF_W | X86_PF_U, 3, &out), VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_P | X86_PF_W | X86_PF_U);
}

static void supervisor_write_to_read_only_with_wp(void **state)
{
	const uint32_t lin = 0xC0200000;

	set_pde(lin, (2 << 12) | P | W | U);
	set_pte(2, lin, (7 << 12) | P | U);
	assert_int_equal(vtlb_fault(&v, &gp, lin, X86_PF_W, 1, &out), VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_P | X86_PF_W);
	assert_int_equal(out.cr2, lin);
	assert_int_equal(get_pte(2, lin), (7 << 12) | P | U);
}

static void supervisor_write_to_read_only_without_wp(void **state)
{
	const uint32_t lin = 0xC0200000;

	gp.wp = false;
	set_pde(lin, (2 << 12) | P | W | U);
	set_pte(2, lin, (7 << 12) | P | U);
	assert_int_equal(vtlb_fault(&v, &gp, lin, X86_PF_W, 1, &out), VTLB_FILLED);
	assert_int_equal(get_pte(2, lin), (7 << 12) | P | U | A | D);
	/* Writable for ring 1, so hidden from ring 3 ... */
	assert_int_equal(shadow_pte(lin), (p2m[7] << 12) | P | W);
	/* ... whose read faults back and gets the read-only user view. */
	assert_int_equal(vtlb_fault(&v, &gp, lin, X86_PF_P | X86_PF_U, 3, &out), VTLB_FILLED);
	assert_int_equal(shadow_pte(lin), (p2m[7] << 12) | P | U);
	assert_int_equal(v.stats.guest_faults, 0);
}

static void guest_fault_drops_a_stale_shadow_entry(void **state)
{
	const uint32_t lin = 0xC0300000;

	set_pde(lin, (2 << 12) | P | W);
	set_pte(2, lin, (7 << 12) | P);
	assert_int_equal(vtlb_fault(&v, &gp, lin, 0, 1, &out), VTLB_FILLED);
	assert_int_not_equal(shadow_pte(lin), 0);
	/* The guest unmaps without INVLPG; a write faults on the stale
	 * read-only entry: the guest sees "not present", as on hardware,
	 * and the entry is gone. */
	set_pte(2, lin, 0);
	assert_int_equal(vtlb_fault(&v, &gp, lin, X86_PF_P | X86_PF_W, 1, &out), VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_W);
	assert_int_equal(shadow_pte(lin), 0);
}

/* ---- the guest's frames must be its own --------------------------------- */

static void pte_frame_outside_guest_memory(void **state)
{
	set_pde(0xC0000000, (2 << 12) | P | W);
	set_pte(2, 0xC0000000, (0x100 << 12) | P | W);
	assert_int_equal(vtlb_fault(&v, &gp, 0xC0000000, 0, 1, &out), VTLB_VIOLATION);
	assert_string_equal(out.brk.why,
		"guest PTE 0x00100003 for linear 0xc0000000 maps frame 0x100 outside its 0x100 pages");
	assert_int_equal(vtlb_translate(&v, &gp, 0xC0000000, false, 1, &(uint32_t){0}, &out), VTLB_VIOLATION);
	assert_int_equal(v.stats.violations, 2);
	assert_int_equal(shadow_pte(0xC0000000), 0);
	/* Not even a shadow page table was taken for it. */
	assert_int_equal(v.stats.shadow_pages_in_use, 0);
}

static void page_table_frame_outside_guest_memory(void **state)
{
	set_pde(0xC0000000, (0x12345 << 12) | P | W);
	assert_int_equal(vtlb_fault(&v, &gp, 0xC0000000, 0, 1, &out), VTLB_VIOLATION);
	assert_string_equal(out.brk.why,
		"guest PDE 0x12345003 for linear 0xc0000000: page table frame 0x12345 outside its 0x100 pages");
}

static void cr3_outside_guest_memory(void **state)
{
	gp.cr3 = 0x00400000;
	assert_int_equal(vtlb_fault(&v, &gp, 0x1000, 0, 1, &out), VTLB_VIOLATION);
	assert_string_equal(out.brk.why, "guest CR3 0x00400000 is outside its 0x100 pages");
}

/* ---- the hypervisor's reserved top ----------------------------------- */

static void mapping_in_the_reserved_top_is_a_violation(void **state)
{
	set_pde(0xFC000000, (2 << 12) | P | W);
	set_pte(2, 0xFC001000, (7 << 12) | P | W);
	assert_int_equal(vtlb_fault(&v, &gp, 0xFC001234, 0, 1, &out), VTLB_VIOLATION);
	assert_string_equal(out.brk.why,
		"guest maps linear 0xfc001234 in the reserved top: PDE 1008 = 0x00002003, PTE 0x00007003");
	gp.pse = true;
	set_pde(0xFFC00000, P | W | PS);
	assert_int_equal(vtlb_fault(&v, &gp, 0xFFC00010, X86_PF_W, 1, &out), VTLB_VIOLATION);
	assert_string_equal(out.brk.why,
		"guest maps linear 0xffc00010 in the reserved top: 4 MiB PDE 1023 = 0x00000083");
	assert_int_equal(((uint32_t *)fake_map(vtlb_shadow_cr3(&v) >> 12))[1023], SWITCHER_PDE);
	assert_int_equal(v.stats.shadow_pages_in_use, 0);
}

static void unmapped_reserved_top_is_a_plain_guest_fault(void **state)
{
	/* Nothing mapped there by the guest: what hardware would say. */
	assert_int_equal(vtlb_fault(&v, &gp, 0xFFC00010, X86_PF_P | X86_PF_W, 1, &out), VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_W);
	assert_int_equal(out.cr2, 0xFFC00010);
	assert_int_equal(((uint32_t *)fake_map(vtlb_shadow_cr3(&v) >> 12))[1023], SWITCHER_PDE);
	vtlb_invlpg(&v, 0xFFC00010);
	assert_int_equal(((uint32_t *)fake_map(vtlb_shadow_cr3(&v) >> 12))[1023], SWITCHER_PDE);
}

/* ---- flush and invlpg ---------------------------------------------------- */

static void fill_several(void)
{
	static const uint32_t lins[] = { 0x00000000, 0x00400000, 0x08048000, 0xC0000000, 0xC0400000, 0xFBFFF000 };

	for (unsigned i = 0; i < sizeof(lins) / sizeof(lins[0]); i++) {
		uint32_t lin = lins[i];

		set_pde(lin, ((2 + i) << 12) | P | W | U);
		set_pte(2 + i, lin, ((20 + i) << 12) | P | W | U);
		assert_int_equal(vtlb_fault(&v, &gp, lin, X86_PF_W, 1, &out), VTLB_FILLED);
		assert_int_equal(shadow_pte(lin), (p2m[20 + i] << 12) | P | W | U);
	}
	assert_int_equal(v.stats.shadow_pages_in_use, 6);
	assert_int_equal(allocs - frees, 7);
}

static void flush_frees_shadow_tables_and_keeps_the_switcher(void **state)
{
	uint32_t cr3 = vtlb_shadow_cr3(&v);
	uint32_t *pd = fake_map(cr3 >> 12);

	fill_several();
	vtlb_flush(&v);
	assert_int_equal(vtlb_shadow_cr3(&v), cr3);
	assert_int_equal(pd[1023], SWITCHER_PDE);
	for (int i = 0; i < 1023; i++)
		assert_int_equal(pd[i], 0);
	assert_int_equal(v.stats.shadow_pages_in_use, 0);
	assert_int_equal(v.stats.shadow_pages_peak, 6);
	assert_int_equal(v.stats.flushes, 1);
	assert_int_equal(allocs - frees, 1);
	/* Refills after a flush work, and a second flush leaks nothing. */
	fill_several();
	vtlb_flush(&v);
	assert_int_equal(allocs - frees, 1);
	assert_int_equal(pd[1023], SWITCHER_PDE);
}

static void invlpg_drops_one_entry(void **state)
{
	const uint32_t lin = 0xC0000000;

	set_pde(lin, (2 << 12) | P | W);
	set_pte(2, lin, (7 << 12) | P | W | D);
	set_pte(2, lin + 0x1000, (8 << 12) | P | W | D);
	assert_int_equal(vtlb_fault(&v, &gp, lin, 0, 1, &out), VTLB_FILLED);
	assert_int_equal(vtlb_fault(&v, &gp, lin + 0x1000, 0, 1, &out), VTLB_FILLED);
	/* The guest remaps lin; until INVLPG the shadow is a stale TLB entry. */
	set_pte(2, lin, (9 << 12) | P | W | D);
	assert_int_equal(shadow_pte(lin), (p2m[7] << 12) | P | W);
	vtlb_invlpg(&v, lin + 0x123);
	assert_int_equal(shadow_pte(lin), 0);
	assert_int_equal(shadow_pte(lin + 0x1000), (p2m[8] << 12) | P | W);
	assert_int_equal(v.stats.invlpgs, 1);
	assert_int_equal(vtlb_fault(&v, &gp, lin, 0, 1, &out), VTLB_FILLED);
	assert_int_equal(shadow_pte(lin), (p2m[9] << 12) | P | W);
	/* INVLPG where nothing is shadowed is harmless. */
	vtlb_invlpg(&v, 0x40000000);
	assert_int_equal(v.stats.invlpgs, 2);
}

static void running_out_of_frames_flushes_then_gives_up(void **state)
{
	set_pde(0x00000000, (2 << 12) | P | W);
	set_pte(2, 0x00000000, (7 << 12) | P | W | D);
	set_pde(0x00400000, (3 << 12) | P | W);
	set_pte(3, 0x00400000, (8 << 12) | P | W | D);
	alloc_limit = 2;   /* the PD and one shadow table */
	assert_int_equal(vtlb_fault(&v, &gp, 0x00000000, 0, 1, &out), VTLB_FILLED);
	/* The second table only fits once the first is dropped. */
	assert_int_equal(vtlb_fault(&v, &gp, 0x00400000, 0, 1, &out), VTLB_FILLED);
	assert_int_equal(shadow_pte(0x00000000), 0);
	assert_int_equal(shadow_pte(0x00400000), (p2m[8] << 12) | P | W);
	assert_int_equal(v.stats.shadow_pages_in_use, 1);
	alloc_limit = 1;
	assert_int_equal(vtlb_fault(&v, &gp, 0x00000000, 0, 1, &out), VTLB_VIOLATION);
	assert_non_null(strstr(out.brk.why, "no free machine frame"));
	alloc_limit = ~0u;
}

/* The guest's frame budget, not the pool, ends the shadow: a table
 * beyond it flushes the rest (a TLB is a cache), and a budget that holds
 * only the directory refuses the fill with the budget named. */
static void a_frame_budget_bounds_the_shadow_tables(void **state)
{
	static struct frame_budget b;

	b = (struct frame_budget){ .limit = 3, .used = 1 };	/* the PD, charged at init */

	v.env.budget = &b;
	for (uint32_t t = 0; t < 4; t++) {
		set_pde(t << 22, ((2 + t) << 12) | P | W);
		set_pte(2 + t, t << 22, ((7 + t) << 12) | P | W | D);
		assert_int_equal(vtlb_fault(&v, &gp, t << 22, 0, 1, &out), VTLB_FILLED);
		assert_true(b.used <= b.limit);
		assert_int_equal(b.used, 1 + v.stats.shadow_pages_in_use);
	}
	assert_true(v.stats.flushes > 0);
	assert_true(b.refused > 0);
	b.limit = 1;
	vtlb_flush(&v);
	assert_int_equal(b.used, 1);
	assert_int_equal(vtlb_fault(&v, &gp, 0, 0, 1, &out), VTLB_VIOLATION);
	assert_non_null(strstr(out.brk.why, "its frame budget is spent: 1 of 1 frames in use"));
	assert_int_equal(allocs - frees, 1);	/* the pool had frames: only the PD is held */
	vtlb_destroy(&v);
	assert_int_equal(b.used, 0);
	assert_true(vtlb_init(&v, &env, &gm));	/* for the teardown */
}

/* ---- translate ------------------------------------------------------------ */

static void translate_walks_and_sets_bits_without_filling(void **state)
{
	const uint32_t lin = 0xC0001ABC;
	uint32_t gpa = 0;

	set_pde(lin, (2 << 12) | P | W);
	set_pte(2, lin, (7 << 12) | P | W);
	assert_int_equal(vtlb_translate(&v, &gp, lin, false, 1, &gpa, &out), VTLB_FILLED);
	assert_int_equal(gpa, 0x7ABC);
	assert_int_equal(get_pte(2, lin), (7 << 12) | P | W | A);
	assert_int_equal(vtlb_translate(&v, &gp, lin, true, 1, &gpa, &out), VTLB_FILLED);
	assert_int_equal(get_pte(2, lin), (7 << 12) | P | W | A | D);
	assert_int_equal(v.stats.shadow_pages_in_use, 0);
	assert_int_equal(v.stats.fills, 0);
	assert_int_equal(v.stats.translates, 2);
	/* User access to this supervisor page: the #PF the guest gets. */
	assert_int_equal(vtlb_translate(&v, &gp, lin, true, 3, &gpa, &out), VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_P | X86_PF_W | X86_PF_U);
	assert_int_equal(out.cr2, lin);
}

static void translate_paging_off_is_identity(void **state)
{
	uint32_t gpa = 0;

	gp.pg = false;
	assert_int_equal(vtlb_translate(&v, &gp, 0xFFFFF, true, 1, &gpa, &out), VTLB_FILLED);
	assert_int_equal(gpa, 0xFFFFF);
	assert_int_equal(vtlb_translate(&v, &gp, 0x100000, false, 1, &gpa, &out), VTLB_VIOLATION);
}

/* ---- page tables in the read-only option-ROM area (docs/HV.md, "What the guest can reach") ---- */

/* The guest may not write 0xC0000-0xDFFFF, so the walker must not write
 * A or D bits there on its behalf: a page table or directory placed in
 * the area stops the guest as soon as one of its bits would change, and
 * the bytes stay as they were. */
static void accessed_and_dirty_never_written_into_the_rom_area(void **state)
{
	const uint32_t rom = GUEST_ROM_GPA >> 12, lin = 0xC0000000;

	/* A page table in the area, its entry not yet accessed. */
	set_pde(lin, (rom << 12) | P | W);
	set_pte(rom, lin, (5u << 12) | P | W);
	assert_int_equal(vtlb_fault(&v, &gp, lin, 0, 1, &out), VTLB_VIOLATION);
	assert_non_null(strstr(out.brk.why, "option-ROM area"));
	assert_int_equal(get_pte(rom, lin), (5u << 12) | P | W);
	assert_int_equal(get_pde(lin) & A, 0);	/* no half-done walk either */

	/* Accessed already: a read changes nothing and is fine; the first
	 * write would set D there: refused. */
	set_pte(rom, lin, (5u << 12) | P | W | A);
	set_pde(lin, (rom << 12) | P | W | A);
	assert_int_equal(vtlb_fault(&v, &gp, lin, 0, 1, &out), VTLB_FILLED);
	assert_int_equal(vtlb_fault(&v, &gp, lin, X86_PF_W, 1, &out), VTLB_VIOLATION);
	assert_int_equal(get_pte(rom, lin) & D, 0);

	/* A page directory in the area (the last page of it). */
	gp.cr3 = (rom + 0x1f) << 12;
	gpage(rom + 0x1f)[pde_index(0x1000)] = (6u << 12) | P | W;
	set_pte(6, 0x1000, (7u << 12) | P | W | A | D);
	assert_int_equal(vtlb_fault(&v, &gp, 0x1000, 0, 1, &out), VTLB_VIOLATION);
	assert_int_equal(gpage(rom + 0x1f)[pde_index(0x1000)], (6u << 12) | P | W);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(init_installs_only_the_switcher),
		T(init_fails_without_a_frame),
		T(physical_mode_fills_identity_writable),
		T(physical_mode_outside_memory_is_a_violation),
		T(paging_on_fills_only_the_faulting_page),
		T(read_sets_accessed_only_and_maps_read_only),
		T(write_sets_accessed_and_dirty),
		T(dirty_page_read_maps_writable),
		T(permissions_combine_pde_and_pte),
		T(pse_off_ignores_the_ps_bit),
		T(large_page_is_shadowed_as_4k_entries),
		T(large_page_translate_gives_the_offset),
		T(large_page_beyond_guest_memory_is_a_violation),
		T(large_page_high_bits_are_a_violation),
		T(invlpg_in_a_large_page_drops_all_of_it),
		T(not_present_pde_and_pte),
		T(user_access_to_supervisor_page),
		T(user_write_to_read_only_page),
		T(supervisor_write_to_read_only_with_wp),
		T(supervisor_write_to_read_only_without_wp),
		T(guest_fault_drops_a_stale_shadow_entry),
		T(pte_frame_outside_guest_memory),
		T(page_table_frame_outside_guest_memory),
		T(cr3_outside_guest_memory),
		T(mapping_in_the_reserved_top_is_a_violation),
		T(unmapped_reserved_top_is_a_plain_guest_fault),
		T(flush_frees_shadow_tables_and_keeps_the_switcher),
		T(invlpg_drops_one_entry),
		T(running_out_of_frames_flushes_then_gives_up),
		T(a_frame_budget_bounds_the_shadow_tables),
		T(translate_walks_and_sets_bits_without_filling),
		T(accessed_and_dirty_never_written_into_the_rom_area),
		T(translate_paging_off_is_identity),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
