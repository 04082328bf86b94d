/*
 * Unit tests for the paravirtual shadow page tables (hv/mm/shadow_notify.c),
 * written against the specification in hv/mm/shadow.h.
 *
 * Machine memory is the fake of fake_machine.h: 512 pages, of which the
 * guest's 128 are scattered through the first part; the rest is the pool
 * for shadow pages, with a limit to make the shadow cache run out.
 *
 * The walker (the vCPU's vTLB) takes one frame from the same pool for its
 * own page directory; every test records that as the baseline.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "shadow.h"

#define MACHINE_PAGES 512u
#define GUEST_PAGES   128u
#include "fake_machine.h"

/* The bits of a shadow entry the specification pins down: frame, P, RW,
 * US and G (never set: shadows are per directory).  A, D, PWT/PCD and the
 * available bits are the implementation's business. */
#define SPEC_BITS 0xFFFFF107u

static unsigned baseline;	/* frames held by the walker */
static uint16_t by_gfn[GUEST_PAGES];
static struct vtlb walker;
static struct shadow s;
static struct guest_paging gp;
static struct vtlb_outcome out;

/* Poke an entry straight into guest memory (no notification). */
static void poke_pde(uint32_t pd, uint32_t lin, uint32_t val) { gpage(pd)[pde_index(lin)] = val; }
static void poke_pte(uint32_t pt, uint32_t lin, uint32_t val) { gpage(pt)[pte_index(lin)] = val; }
static uint32_t get_pde(uint32_t pd, uint32_t lin) { return gpage(pd)[pde_index(lin)]; }
static uint32_t get_pte(uint32_t pt, uint32_t lin) { return gpage(pt)[pte_index(lin)]; }

/* The guest's SetPxE: write the entry, then tell the shadow. */
static void set_pde(uint32_t pd, uint32_t lin, uint32_t val)
{
	poke_pde(pd, lin, val);
	assert_int_equal(shadow_entry_written(&s, (pd << 12) + pde_index(lin) * 4, &out), VTLB_FILLED);
}

static void set_pte(uint32_t pt, uint32_t lin, uint32_t val)
{
	poke_pte(pt, lin, val);
	assert_int_equal(shadow_entry_written(&s, (pt << 12) + pte_index(lin) * 4, &out), VTLB_FILLED);
}

/* ---- looking at the shadow ------------------------------------------- */

/* The shadow record of a guest table, NULL if it has none. */
static const struct shadow_page *rec(uint32_t gfn)
{
	assert_true(gfn < GUEST_PAGES);
	if (!s.by_gfn[gfn])
		return NULL;
	assert_true(s.by_gfn[gfn] <= SHADOW_MAX_PAGES);
	return &s.pages[s.by_gfn[gfn] - 1];
}

static const uint32_t *rec_page(uint32_t gfn)
{
	const struct shadow_page *r = rec(gfn);

	assert_non_null(r);
	return fake_map(r->mfn);
}

static const uint32_t *loaded_pd(void)
{
	uint32_t cr3 = shadow_cr3(&s, 0);

	assert_int_equal(cr3 & 0xfff, 0);
	return fake_map(cr3 >> 12);
}

/* The shadow PTE the CPU would use for lin now, 0 if none. */
static uint32_t shadow_pte(uint32_t lin)
{
	uint32_t pde = loaded_pd()[pde_index(lin)];

	if (!(pde & P))
		return 0;
	return ((const uint32_t *)fake_map(pde >> 12))[pte_index(lin)];
}

/* A shadow PDE that grants nothing: not present, or linking an empty
 * table (a table released while linked, emptied rather than unlinked
 * from every directory). */
static bool grants_nothing(uint32_t spde)
{
	const uint32_t *t;

	if (!(spde & P))
		return true;
	t = fake_map(spde >> 12);
	for (unsigned i = 0; i < 1024; i++)
		if (t[i] & P)
			return false;
	return true;
}

/* What the specification says a shadow PTE is (in SPEC_BITS). */
static uint32_t expect_pte(uint32_t g)
{
	uint32_t e;

	if ((g & (P | A)) != (P | A) || (g >> 12) >= GUEST_PAGES)
		return 0;
	e = (p2m[g >> 12] << 12) | P | (g & U);
	if ((g & W) && (g & D))
		e |= W;
	return e;
}

/* Shadow PDE linking the guest table ptgfn with guest PDE g. */
static void assert_linked(uint32_t spde, uint32_t g)
{
	const struct shadow_page *r = rec(g >> 12);

	assert_non_null(r);
	assert_int_equal(r->kind, SHADOW_PT);
	assert_int_equal(r->gfn, g >> 12);
	assert_int_equal(spde & 0xFFFFF007u, (r->mfn << 12) | (g & (P | W | U)));
	assert_int_equal(spde & (A | PS | G), A);
}

static void assert_pte_is(uint32_t lin, uint32_t g)
{
	uint32_t e = shadow_pte(lin);

	assert_int_equal(e & SPEC_BITS, expect_pte(g));
	assert_int_equal(e, shadow_derive_pte(&s, g));
}

static uint32_t checksum_guest(void)
{
	uint32_t sum = 0;

	for (uint32_t g = 0; g < GUEST_PAGES; g++)
		for (unsigned i = 0; i < 1024; i++)
			sum = sum * 31 + gpage(g)[i] + i;
	return sum;
}

/* Frames taken from the pool (beyond the walker's) == one per shadow page
 * plus each directory's aux frame (struct shadow_page.aux_mfn). */
static void assert_frames_consistent(void)
{
	unsigned tops = 0;

	for (unsigned k = 0; k < SHADOW_MAX_VCPUS; k++)
		tops += s.top_mfn[k] != 0;
	assert_int_equal(allocs - frees, baseline + s.stats.pages_in_use + s.stats.pds_in_use + tops);
}

static int setup(void **state)
{
	fake_machine_reset();
	memset(by_gfn, 0xEE, sizeof(by_gfn));	/* shadow_init must clear it */
	assert_true(vtlb_init(&walker, &env, &gm));
	baseline = allocs - frees;
	shadow_init(&s, &env, &gm, &walker, by_gfn);
	shadow_vcpu_init(&s, 0, SWITCHER_PDE);
	gp = (struct guest_paging){ .pg = true, .wp = true, .pse = false, .cr3 = 0 };
	memset(&out, 0, sizeof(out));
	return 0;
}

static int teardown(void **state)
{
	assert_frames_consistent();
	shadow_destroy(&s);
	assert_int_equal(allocs - frees, baseline);
	vtlb_destroy(&walker);
	assert_int_equal(allocs, frees);
	return 0;
}

/*
 * A small guest world used by most tests:
 *   PD 1: PDE 0 (user, 0x00000000) -> PT 2, PDE 768 (kernel, 0xC0000000) -> PT 3
 *   data pages from 10 up.
 */
#define PD1    1u
#define UPT    2u
#define KPT    3u
#define ULIN   0x00001000u
#define KLIN   0xC0002000u
#define UPDE   ((UPT << 12) | P | W | U | A)
#define KPDE   ((KPT << 12) | P | W | A)

static void build_world(void)
{
	poke_pde(PD1, ULIN, UPDE);
	poke_pde(PD1, KLIN, KPDE);
	poke_pte(UPT, ULIN, (10 << 12) | P | W | U | A | D);
	poke_pte(UPT, ULIN + 0x1000, (11 << 12) | P | U | A);
	poke_pte(KPT, KLIN, (12 << 12) | P | W | A | D);
	poke_pte(KPT, KLIN + 0x1000, (13 << 12) | P | W | A);
}

static void load_world(void)
{
	build_world();
	assert_int_equal(shadow_load_cr3(&s, 0, PD1 << 12, &out), VTLB_FILLED);
	gp.cr3 = PD1 << 12;
}

/* ---- init ------------------------------------------------------------- */

static void init_is_empty(void **state)
{
	assert_int_equal(s.stats.pages_in_use, 0);
	assert_int_equal(s.stats.pds_in_use, 0);
	assert_int_equal(s.loaded[0], 0);
	for (uint32_t g = 0; g < GUEST_PAGES; g++)
		assert_int_equal(s.by_gfn[g], 0);
	assert_int_equal(allocs - frees, baseline);
}

static void loaded_empty_pd_has_only_the_switcher(void **state)
{
	const uint32_t *pd;

	assert_int_equal(shadow_load_cr3(&s, 0, PD1 << 12, &out), VTLB_FILLED);
	pd = loaded_pd();
	assert_int_equal(pd[1023], SWITCHER_PDE);
	for (int i = 0; i < 1023; i++)
		assert_int_equal(pd[i], 0);
	assert_non_null(rec(PD1));
	assert_int_equal(rec(PD1)->kind, SHADOW_PD);
	assert_int_equal(shadow_cr3(&s, 0) >> 12, rec(PD1)->mfn);
	assert_int_equal(s.stats.pages_in_use, 1);
	assert_int_equal(s.stats.pds_in_use, 1);
	assert_int_equal(s.stats.cr3_loads, 1);
	assert_frames_consistent();
}

/* ---- derive ----------------------------------------------------------- */

static void derive_not_present_or_not_accessed_is_zero(void **state)
{
	assert_int_equal(shadow_derive_pte(&s, 0), 0);
	assert_int_equal(shadow_derive_pte(&s, (7 << 12) | W | U | A | D), 0);
	assert_int_equal(shadow_derive_pte(&s, (7 << 12) | P), 0);
	assert_int_equal(shadow_derive_pte(&s, (7 << 12) | P | W | U | D), 0);
}

static void derive_accessed_read_only(void **state)
{
	uint32_t e = shadow_derive_pte(&s, (7 << 12) | P | A);

	assert_int_equal(e & SPEC_BITS, (p2m[7] << 12) | P);
	/* Read-only and dirty is still read-only. */
	e = shadow_derive_pte(&s, (7 << 12) | P | A | D);
	assert_int_equal(e & SPEC_BITS, (p2m[7] << 12) | P);
}

static void derive_writable_needs_dirty(void **state)
{
	uint32_t clean = shadow_derive_pte(&s, (7 << 12) | P | W | A);
	uint32_t dirty = shadow_derive_pte(&s, (7 << 12) | P | W | A | D);

	assert_int_equal(clean & SPEC_BITS, (p2m[7] << 12) | P);
	assert_int_equal(dirty & SPEC_BITS, (p2m[7] << 12) | P | W);
}

static void derive_keeps_user_and_uses_the_p2m(void **state)
{
	for (uint32_t g = 0; g < GUEST_PAGES; g++) {
		uint32_t e = shadow_derive_pte(&s, (g << 12) | P | U | A);

		assert_int_not_equal(p2m[g], g);
		assert_int_equal(e & SPEC_BITS, (p2m[g] << 12) | P | U);
		e = shadow_derive_pte(&s, (g << 12) | P | W | U | A | D);
		assert_int_equal(e & SPEC_BITS, (p2m[g] << 12) | P | W | U);
	}
	/* A guest global page is not a global shadow page. */
	assert_int_equal(shadow_derive_pte(&s, (9 << 12) | P | W | A | D | G) & SPEC_BITS,
			 (p2m[9] << 12) | P | W);
}

static void derive_frame_outside_guest_memory_is_zero(void **state)
{
	assert_int_equal(shadow_derive_pte(&s, (GUEST_PAGES << 12) | P | A), 0);
	assert_int_equal(shadow_derive_pte(&s, 0xFFFFF000u | P | W | U | A | D), 0);
	assert_int_equal(shadow_derive_pte(&s, 0x12345000u | P | W | U | A | D), 0);
}

/* ---- CR3 loads -------------------------------------------------------- */

static void load_cr3_adopts_the_pd_and_its_tables(void **state)
{
	const uint32_t *pd;
	uint32_t sum;
	unsigned before;

	build_world();
	/* The guest maps its own PD 1023 and 1008 too: never linked. */
	poke_pde(PD1, 0xFC000000, (4 << 12) | P | W | A);
	poke_pde(PD1, 0xFFC00000, (4 << 12) | P | W | A);
	poke_pte(4, 0xFC000000, (14 << 12) | P | W | A | D);
	/* Present but not accessed: not linked (yet). */
	poke_pde(PD1, 0x40000000, (5 << 12) | P | W | U);
	sum = checksum_guest();

	assert_int_equal(shadow_load_cr3(&s, 0, PD1 << 12, &out), VTLB_FILLED);
	assert_int_equal(checksum_guest(), sum);	/* the guest's tables untouched */
	pd = loaded_pd();
	assert_int_equal(shadow_cr3(&s, 0) >> 12, rec(PD1)->mfn);
	assert_linked(pd[pde_index(ULIN)], UPDE);
	assert_linked(pd[pde_index(KLIN)], KPDE);
	assert_int_equal(pd[pde_index(0x40000000)], 0);
	assert_int_equal(pd[pde_index(0xFC000000)], 0);
	assert_int_equal(pd[1023], SWITCHER_PDE);
	for (int i = 0; i < 1023; i++)
		if (i != (int)pde_index(ULIN) && i != (int)pde_index(KLIN))
			assert_int_equal(pd[i], 0);
	/* The shadow tables came from the guest's content. */
	assert_pte_is(ULIN, get_pte(UPT, ULIN));
	assert_pte_is(ULIN + 0x1000, get_pte(UPT, ULIN + 0x1000));
	assert_pte_is(ULIN + 0x2000, 0);
	assert_pte_is(KLIN, get_pte(KPT, KLIN));
	assert_pte_is(KLIN + 0x1000, get_pte(KPT, KLIN + 0x1000));
	assert_int_equal(shadow_pte(KLIN) & SPEC_BITS, (p2m[12] << 12) | P | W);
	assert_int_equal(shadow_pte(KLIN + 0x1000) & SPEC_BITS, (p2m[13] << 12) | P);
	assert_int_equal(rec(UPT)->links, 1);
	assert_int_equal(rec(KPT)->links, 1);
	/* The PD and its two linked tables were never announced. */
	assert_int_equal(s.stats.adopted, 3);
	assert_int_equal(s.stats.pds_in_use, 1);
	assert_int_equal(s.stats.pages_in_use, 3);
	assert_int_equal(s.stats.cr3_loads, 1);
	assert_int_equal(s.stats.cr3_hits, 0);
	assert_frames_consistent();

	/* Loading it again is a lookup. */
	before = allocs;
	assert_int_equal(shadow_load_cr3(&s, 0, PD1 << 12, &out), VTLB_FILLED);
	assert_int_equal(s.stats.cr3_loads, 2);
	assert_int_equal(s.stats.cr3_hits, 1);
	assert_int_equal(s.stats.adopted, 3);
	assert_int_equal(s.stats.pages_in_use, 3);
	assert_int_equal(allocs, before);
	assert_int_equal(shadow_cr3(&s, 0) >> 12, rec(PD1)->mfn);
}

static void switching_back_to_a_known_pd_is_a_hit(void **state)
{
	uint32_t cr3_1, cr3_2;
	unsigned before;

	load_world();
	cr3_1 = shadow_cr3(&s, 0);
	/* PD 6 shares the kernel table. */
	poke_pde(6, KLIN, KPDE);
	assert_int_equal(shadow_load_cr3(&s, 0, 6 << 12, &out), VTLB_FILLED);
	cr3_2 = shadow_cr3(&s, 0);
	assert_int_not_equal(cr3_1, cr3_2);
	assert_int_equal(s.stats.adopted, 4);
	before = allocs;
	assert_int_equal(shadow_load_cr3(&s, 0, PD1 << 12, &out), VTLB_FILLED);
	assert_int_equal(shadow_cr3(&s, 0), cr3_1);
	assert_int_equal(shadow_load_cr3(&s, 0, 6 << 12, &out), VTLB_FILLED);
	assert_int_equal(shadow_cr3(&s, 0), cr3_2);
	assert_int_equal(allocs, before);
	assert_int_equal(s.stats.cr3_loads, 4);
	assert_int_equal(s.stats.cr3_hits, 2);
	assert_int_equal(s.stats.adopted, 4);
	assert_int_equal(s.stats.pds_in_use, 2);
}

static void load_cr3_outside_guest_memory_is_a_violation(void **state)
{
	assert_int_equal(shadow_load_cr3(&s, 0, GUEST_PAGES << 12, &out), VTLB_VIOLATION);
	assert_int_equal(shadow_load_cr3(&s, 0, 0xFFFFF000u, &out), VTLB_VIOLATION);
	assert_int_equal(s.stats.pages_in_use, 0);
}

static void pde_pointing_outside_guest_memory_is_not_linked(void **state)
{
	poke_pde(PD1, 0x00400000, (0x12345 << 12) | P | W | U | A);
	poke_pde(PD1, KLIN, KPDE);
	/* Whether the load itself objects is the implementation's choice;
	 * it must not link (or map) anything outside the guest. */
	if (shadow_load_cr3(&s, 0, PD1 << 12, &out) == VTLB_FILLED) {
		assert_int_equal(loaded_pd()[pde_index(0x00400000)], 0);
		assert_linked(loaded_pd()[pde_index(KLIN)], KPDE);
	}
}

/* ---- notified entry writes -------------------------------------------- */

static void pte_write_updates_the_shadow_pte(void **state)
{
	load_world();
	set_pte(UPT, ULIN + 0x5000, (20 << 12) | P | W | U | A | D);
	assert_pte_is(ULIN + 0x5000, (20 << 12) | P | W | U | A | D);
	assert_int_equal(shadow_pte(ULIN + 0x5000) & SPEC_BITS, (p2m[20] << 12) | P | W | U);
	/* Remap, downgrade, clear. */
	set_pte(UPT, ULIN + 0x5000, (21 << 12) | P | W | U | A);
	assert_int_equal(shadow_pte(ULIN + 0x5000) & SPEC_BITS, (p2m[21] << 12) | P | U);
	set_pte(UPT, ULIN + 0x5000, (21 << 12) | P | U);
	assert_int_equal(shadow_pte(ULIN + 0x5000), 0);
	set_pte(KPT, KLIN, 0);
	assert_int_equal(shadow_pte(KLIN), 0);
	/* The neighbours are unchanged. */
	assert_pte_is(KLIN + 0x1000, get_pte(KPT, KLIN + 0x1000));
	assert_pte_is(ULIN, get_pte(UPT, ULIN));
	assert_int_equal(s.stats.entry_writes, 4);
	assert_int_equal(s.stats.pde_writes, 0);
	assert_int_equal(s.stats.untracked_writes, 0);
}

static void pte_write_to_an_unlinked_known_table(void **state)
{
	/* Announced, linked by no directory: its shadow is kept up to date
	 * all the same. */
	assert_int_equal(shadow_announce(&s, 7, SHADOW_PT, 0, 0, 0, &out), VTLB_FILLED);
	assert_int_equal(s.stats.announced, 1);
	assert_int_equal(rec(7)->kind, SHADOW_PT);
	assert_int_equal(rec(7)->links, 0);
	set_pte(7, 0x3000, (22 << 12) | P | W | A | D);
	assert_int_equal(rec_page(7)[3] & SPEC_BITS, (p2m[22] << 12) | P | W);
	set_pte(7, 0x3000, 0);
	assert_int_equal(rec_page(7)[3], 0);
	assert_int_equal(s.stats.entry_writes, 2);
	assert_frames_consistent();
}

static void pde_write_links_and_unlinks(void **state)
{
	const uint32_t lin = 0x08000000;
	const uint32_t pde = (7 << 12) | P | W | U | A;
	uint32_t adopted;

	load_world();
	/* The guest's pte_alloc: AllocatePage, fill, then SetPDE. */
	assert_int_equal(shadow_announce(&s, 7, SHADOW_PT, 0, 0, 0, &out), VTLB_FILLED);
	set_pte(7, lin, (23 << 12) | P | W | U | A | D);
	adopted = s.stats.adopted;
	set_pde(PD1, lin, pde);
	assert_linked(loaded_pd()[pde_index(lin)], pde);
	assert_int_equal(rec(7)->links, 1);
	assert_int_equal(shadow_pte(lin) & SPEC_BITS, (p2m[23] << 12) | P | W | U);
	assert_int_equal(s.stats.adopted, adopted);
	assert_int_equal(s.stats.pde_writes, 1);

	/* Read-only and supervisor PDE: the link carries the guest's bits. */
	set_pde(PD1, lin, (7 << 12) | P | A);
	assert_linked(loaded_pd()[pde_index(lin)], (7 << 12) | P | A);
	assert_int_equal(rec(7)->links, 1);

	/* Unlink. */
	set_pde(PD1, lin, 0);
	assert_int_equal(loaded_pd()[pde_index(lin)], 0);
	assert_int_equal(rec(7)->links, 0);
	assert_int_equal(shadow_pte(lin), 0);

	/* A table nobody announced is adopted when linked. */
	poke_pte(8, lin + 0x400000, (24 << 12) | P | U | A);
	set_pde(PD1, lin + 0x400000, (8 << 12) | P | W | U | A);
	assert_linked(loaded_pd()[pde_index(lin + 0x400000)], (8 << 12) | P | W | U | A);
	assert_int_equal(s.stats.adopted, adopted + 1);
	assert_int_equal(shadow_pte(lin + 0x400000) & SPEC_BITS, (p2m[24] << 12) | P | U);

	/* Present but not accessed: no link. */
	set_pde(PD1, lin + 0x800000, (7 << 12) | P | W | U);
	assert_int_equal(loaded_pd()[pde_index(lin + 0x800000)], 0);

	/* The reserved top and the switcher slot are never the guest's. */
	set_pde(PD1, 0xFC000000, (7 << 12) | P | W | U | A);
	set_pde(PD1, 0xFFC00000, (7 << 12) | P | W | U | A);
	assert_int_equal(loaded_pd()[pde_index(0xFC000000)], 0);
	assert_int_equal(loaded_pd()[1023], SWITCHER_PDE);
	assert_int_equal(s.stats.pde_writes, 7);
	assert_frames_consistent();
}

static void write_to_an_untracked_page_changes_nothing(void **state)
{
	uint32_t pd_copy[1024];
	unsigned before;

	load_world();
	memcpy(pd_copy, loaded_pd(), sizeof(pd_copy));
	before = allocs;
	poke_pte(30, 0x5000, (12 << 12) | P | W | A | D);
	assert_int_not_equal(shadow_entry_written(&s, (30 << 12) + 5 * 4, &out), VTLB_VIOLATION);
	assert_int_equal(s.stats.untracked_writes, 1);
	assert_int_equal(s.stats.entry_writes, 0);
	assert_int_equal(s.stats.pde_writes, 0);
	assert_null(rec(30));
	assert_int_equal(allocs, before);
	assert_memory_equal(loaded_pd(), pd_copy, sizeof(pd_copy));
	assert_pte_is(ULIN, get_pte(UPT, ULIN));
	assert_pte_is(KLIN, get_pte(KPT, KLIN));
}

/* ---- announce --------------------------------------------------------- */

static void announced_clone_takes_kernel_pdes_from_orig(void **state)
{
	const uint32_t *spd;
	uint32_t cr3_1;

	load_world();
	cr3_1 = shadow_cr3(&s, 0);
	/* Linux's pgd_alloc: the new directory is announced as a clone of
	 * the kernel's; its kernel half is still empty (copied right after). */
	memset(gpage(6), 0, 4096);
	assert_int_equal(shadow_announce(&s, 6, SHADOW_PD, PD1, 768, 256, &out), VTLB_FILLED);
	assert_int_equal(s.stats.announced, 1);
	assert_int_equal(s.stats.adopted, 3);	/* the world's, not the clone */
	assert_int_equal(s.stats.pds_in_use, 2);
	assert_int_equal(shadow_cr3(&s, 0), cr3_1);	/* still the loaded one */
	assert_non_null(rec(6));
	assert_int_equal(rec(6)->kind, SHADOW_PD);
	spd = rec_page(6);
	assert_linked(spd[pde_index(KLIN)], KPDE);
	assert_int_equal(spd[pde_index(ULIN)], 0);	/* user half is the new PD's own */
	assert_int_equal(spd[1023], SWITCHER_PDE);
	assert_int_equal(rec(KPT)->links, 2);
	assert_int_equal(rec(UPT)->links, 1);

	/* clone_pgd_range, a plain copy; then the switch is a lookup. */
	memcpy(&gpage(6)[768], &gpage(PD1)[768], 256 * 4);
	assert_int_equal(shadow_load_cr3(&s, 0, 6 << 12, &out), VTLB_FILLED);
	assert_int_equal(s.stats.cr3_hits, 1);
	assert_int_equal(shadow_cr3(&s, 0) >> 12, rec(6)->mfn);
	assert_linked(loaded_pd()[pde_index(KLIN)], KPDE);
	assert_pte_is(KLIN, get_pte(KPT, KLIN));
	assert_int_equal(shadow_pte(ULIN), 0);
	assert_frames_consistent();
}

/* A directory built in pieces (shadow_announce_from): with a work limit
 * of about three tables, each call stops after a few PDEs with the ones
 * after it not present (the audit counts them unfilled, not stale), and
 * the calls that go on from *next end with every PDE linked. */
static void a_directory_is_built_in_pieces_under_a_work_limit(void **state)
{
	const uint32_t pd = 100, first = 101, n = 20;
	struct shadow_audit a;
	uint32_t next = 0, calls = 0;

	memset(gpage(pd), 0, 4096);
	for (uint32_t i = 0; i < n; i++) {
		memset(gpage(first + i), 0, 4096);
		gpage(pd)[i] = (first + i) << 12 | 0x27;	/* P, W, U, A */
	}
	do {
		shadow_work_begin(&s, 3 * 2048);
		assert_int_equal(shadow_announce_from(&s, pd, SHADOW_PD, 0, 0, 0, &next, &out), VTLB_FILLED);
		calls++;
		assert_true(next < 1008);
		for (uint32_t i = next ? next : n; i < n; i++)
			assert_int_equal(rec_page(pd)[i], 0);	/* not yet: not present */
		shadow_audit(&s, &a);
		assert_int_equal(a.mismatches, 0);
	} while (next);
	assert_true(calls >= 5);
	assert_int_equal(s.stats.announced, 1);
	assert_int_equal(s.stats.builds_split, calls - 1);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(rec_page(pd)[i] >> 12, rec(first + i)->mfn);
	/* Without *next the limit does not apply: one call builds it all. */
	shadow_work_begin(&s, 3 * 2048);
	assert_int_equal(shadow_release(&s, pd, &out), VTLB_FILLED);
	assert_int_equal(shadow_announce(&s, pd, SHADOW_PD, 0, 0, 0, &out), VTLB_FILLED);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(rec_page(pd)[i] >> 12, rec(first + i)->mfn);
	assert_frames_consistent();
}

static void announce_outside_guest_memory_is_a_violation(void **state)
{
	assert_int_equal(shadow_announce(&s, GUEST_PAGES, SHADOW_PT, 0, 0, 0, &out), VTLB_VIOLATION);
	assert_int_equal(shadow_announce(&s, 6, SHADOW_PD, GUEST_PAGES, 768, 256, &out), VTLB_VIOLATION);
	assert_int_equal(s.stats.pages_in_use, 0);
	assert_frames_consistent();
}

/* ---- a kernel table shared by directories ------------------------------ */

static void two_pds_share_one_kernel_shadow_pt(void **state)
{
	uint32_t spde1, spde6;

	load_world();
	poke_pde(6, KLIN, KPDE);
	poke_pde(6, 0x08000000, (7 << 12) | P | W | U | A);
	assert_int_equal(shadow_load_cr3(&s, 0, 6 << 12, &out), VTLB_FILLED);
	spde1 = rec_page(PD1)[pde_index(KLIN)];
	spde6 = loaded_pd()[pde_index(KLIN)];
	assert_linked(spde1, KPDE);
	assert_linked(spde6, KPDE);
	assert_int_equal(spde1 >> 12, spde6 >> 12);
	assert_int_equal(rec(KPT)->links, 2);
	assert_int_equal(rec(UPT)->links, 1);
	assert_int_equal(rec(7)->links, 1);
	/* One table shadow for KPT: PD1, PD6, UPT, KPT, 7. */
	assert_int_equal(s.stats.pages_in_use, 5);
	/* A write through one is seen through both. */
	set_pte(KPT, KLIN + 0x7000, (25 << 12) | P | W | A | D);
	assert_int_equal(shadow_pte(KLIN + 0x7000) & SPEC_BITS, (p2m[25] << 12) | P | W);
	assert_int_equal(((const uint32_t *)fake_map(spde1 >> 12))[pte_index(KLIN + 0x7000)],
			 shadow_pte(KLIN + 0x7000));
	assert_frames_consistent();
}

/* ---- release ---------------------------------------------------------- */

static void release_pt_frees_it_and_unlinks(void **state)
{
	const uint32_t lin = 0x08000000;
	uint32_t in_use;

	load_world();
	poke_pde(6, KLIN, KPDE);
	assert_int_equal(shadow_announce(&s, 7, SHADOW_PT, 0, 0, 0, &out), VTLB_FILLED);
	set_pte(7, lin, (23 << 12) | P | W | U | A | D);
	set_pde(PD1, lin, (7 << 12) | P | W | U | A);
	assert_int_equal(shadow_load_cr3(&s, 0, 6 << 12, &out), VTLB_FILLED);
	set_pde(6, lin, (7 << 12) | P | W | U | A);
	assert_int_equal(rec(7)->links, 2);
	in_use = s.stats.pages_in_use;

	/* Released while both directories still point at it: the frame is
	 * kept, empty, while they link it (no scan of every directory). */
	assert_int_equal(shadow_release(&s, 7, &out), VTLB_FILLED);
	assert_null(rec(7));
	assert_int_equal(s.stats.pages_in_use, in_use);
	assert_int_equal(s.stats.released, 1);
	assert_int_equal(s.stats.orphaned, 1);
	assert_true(grants_nothing(loaded_pd()[pde_index(lin)]));
	assert_true(grants_nothing(rec_page(PD1)[pde_index(lin)]));
	assert_int_equal(shadow_pte(lin), 0);
	/* The rest is intact. */
	assert_linked(loaded_pd()[pde_index(KLIN)], KPDE);
	assert_linked(rec_page(PD1)[pde_index(ULIN)], UPDE);
	/* Both directories' PDEs change: the empty table goes with the last. */
	set_pde(6, lin, 0);
	assert_int_equal(s.stats.pages_in_use, in_use);
	set_pde(PD1, lin, 0);
	assert_int_equal(s.stats.pages_in_use, in_use - 1);
	assert_frames_consistent();
}

/* strict_pt: a page announced as a page table is read-only in every
 * shadow that maps it (made so at AllocatePage), writable again after
 * ReleasePage; tables the guest never announced are left alone. */
static void strict_announced_pt_is_read_only_until_released(void **state)
{
	const uint32_t data = (12 << 12) | P | W | A | D;	/* KLIN's page, writable and dirty */

	shadow_strict(&s, true);
	load_world();
	assert_true(shadow_pte(KLIN) & W);
	assert_false(shadow_strict_table(&s, KPT));	/* adopted, not announced */

	assert_int_equal(shadow_announce(&s, 12, SHADOW_PT, 0, 0, 0, &out), VTLB_FILLED);
	assert_true(shadow_strict_table(&s, 12));
	assert_int_equal(shadow_pte(KLIN), ((uint32_t)p2m[12] << 12) | P);
	assert_int_equal(shadow_pte(KLIN), shadow_derive_pte(&s, data));
	assert_int_equal(s.stats.strict_revoked, 1);

	assert_int_equal(shadow_release(&s, 12, &out), VTLB_FILLED);
	assert_false(shadow_strict_table(&s, 12));
	assert_pte_is(KLIN, data);
	assert_true(shadow_pte(KLIN) & W);
	assert_frames_consistent();
}

/* strict_pt: a directory is announced once between its ReleasePages, and
 * a clone with its kernel half already copied (Linux announces after
 * pgd_ctor(), under pgd_lock); it is then read-only like a table. */
static void strict_directory_announced_once_and_copied(void **state)
{
	shadow_strict(&s, true);
	load_world();
	memset(gpage(6), 0, 4096);
	assert_int_equal(shadow_announce(&s, 6, SHADOW_PD, PD1, 768, 256, &out), VTLB_VIOLATION);
	assert_non_null(strstr(out.brk.why, "announced before the copy was made"));
	assert_null(rec(6));
	assert_false(shadow_strict_table(&s, 6));

	memcpy(&gpage(6)[768], &gpage(PD1)[768], 256 * 4);
	assert_int_equal(shadow_announce(&s, 6, SHADOW_PD, PD1, 768, 256, &out), VTLB_FILLED);
	assert_true(shadow_strict_table(&s, 6));
	assert_int_equal(shadow_announce(&s, 6, SHADOW_PD, PD1, 768, 256, &out), VTLB_VIOLATION);
	assert_non_null(strstr(out.brk.why, "announced again without a ReleasePage"));

	assert_int_equal(shadow_release(&s, 6, &out), VTLB_FILLED);
	assert_false(shadow_strict_table(&s, 6));
	assert_int_equal(shadow_announce(&s, 6, SHADOW_PD, PD1, 768, 256, &out), VTLB_FILLED);
	assert_frames_consistent();
}

/* Without strict_pt an announced table stays writable where it is mapped. */
static void announced_pt_stays_writable_without_strict(void **state)
{
	load_world();
	assert_int_equal(shadow_announce(&s, 12, SHADOW_PT, 0, 0, 0, &out), VTLB_FILLED);
	assert_false(shadow_strict_table(&s, 12));
	assert_pte_is(KLIN, (12 << 12) | P | W | A | D);
	assert_true(shadow_pte(KLIN) & W);
}

static void release_pd_frees_it_and_drops_its_links(void **state)
{
	uint32_t in_use, pds;

	load_world();
	poke_pde(6, KLIN, KPDE);
	assert_int_equal(shadow_load_cr3(&s, 0, 6 << 12, &out), VTLB_FILLED);
	assert_int_equal(rec(KPT)->links, 2);
	in_use = s.stats.pages_in_use;
	pds = s.stats.pds_in_use;
	assert_int_equal(shadow_release(&s, PD1, &out), VTLB_FILLED);
	assert_null(rec(PD1));
	assert_int_equal(s.stats.pds_in_use, pds - 1);
	assert_int_equal(s.stats.released, 1);
	assert_int_equal(rec(KPT)->links, 1);
	/* PD1's own user table may stay as an unlinked cache entry or go. */
	if (rec(UPT)) {
		assert_int_equal(rec(UPT)->links, 0);
		assert_int_equal(s.stats.pages_in_use, in_use - 1);
	} else {
		assert_int_equal(s.stats.pages_in_use, in_use - 2);
	}
	assert_linked(loaded_pd()[pde_index(KLIN)], KPDE);
	assert_pte_is(KLIN, get_pte(KPT, KLIN));
	assert_frames_consistent();
}

static void release_of_the_loaded_pd_is_a_violation(void **state)
{
	uint32_t cr3;

	load_world();
	cr3 = shadow_cr3(&s, 0);
	assert_int_equal(shadow_release(&s, PD1, &out), VTLB_VIOLATION);
	assert_true(out.brk.why[0] != 0);
	assert_int_equal(s.stats.violations, 1);
	assert_int_equal(s.stats.released, 0);
	assert_non_null(rec(PD1));
	assert_int_equal(shadow_cr3(&s, 0), cr3);
	assert_int_equal(s.stats.pages_in_use, 3);
	assert_linked(loaded_pd()[pde_index(KLIN)], KPDE);
	assert_pte_is(KLIN, get_pte(KPT, KLIN));
}

static void release_of_an_unknown_page_is_harmless(void **state)
{
	unsigned before;

	load_world();
	before = allocs;
	assert_int_not_equal(shadow_release(&s, 30, &out), VTLB_VIOLATION);
	assert_int_equal(s.stats.released, 0);
	assert_int_equal(s.stats.pages_in_use, 3);
	assert_int_equal(allocs, before);
	assert_frames_consistent();
	assert_linked(loaded_pd()[pde_index(ULIN)], UPDE);
	assert_linked(loaded_pd()[pde_index(KLIN)], KPDE);
}

/* ---- back to the baseline --------------------------------------------- */

static void process_lifetime_returns_to_the_baseline(void **state)
{
	uint32_t in_use, held;

	load_world();	/* the kernel's directory, loaded */
	in_use = s.stats.pages_in_use;
	held = allocs - frees;

	for (int round = 0; round < 3; round++) {
		/* fork: a new directory, cloned kernel half, two user tables */
		memset(gpage(6), 0, 4096);
		assert_int_equal(shadow_announce(&s, 6, SHADOW_PD, PD1, 768, 256, &out), VTLB_FILLED);
		memcpy(&gpage(6)[768], &gpage(PD1)[768], 256 * 4);
		for (uint32_t pt = 7; pt <= 8; pt++) {
			uint32_t lin = (pt - 7) << 22;

			memset(gpage(pt), 0, 4096);
			assert_int_equal(shadow_announce(&s, pt, SHADOW_PT, 0, 0, 0, &out), VTLB_FILLED);
			set_pte(pt, lin, ((20 + pt) << 12) | P | W | U | A | D);
			set_pde(6, lin, (pt << 12) | P | W | U | A);
		}
		assert_int_equal(shadow_load_cr3(&s, 0, 6 << 12, &out), VTLB_FILLED);
		assert_int_equal(shadow_pte(0x00000000) & SPEC_BITS, (p2m[27] << 12) | P | W | U);
		assert_int_equal(shadow_pte(0x00400000) & SPEC_BITS, (p2m[28] << 12) | P | W | U);
		assert_linked(loaded_pd()[pde_index(KLIN)], KPDE);
		/* exit: tables torn down, switch away, directory freed */
		for (uint32_t pt = 7; pt <= 8; pt++) {
			set_pde(6, (pt - 7) << 22, 0);
			assert_int_equal(shadow_release(&s, pt, &out), VTLB_FILLED);
		}
		assert_int_equal(shadow_load_cr3(&s, 0, PD1 << 12, &out), VTLB_FILLED);
		assert_int_equal(shadow_release(&s, 6, &out), VTLB_FILLED);
		assert_int_equal(s.stats.pages_in_use, in_use);
		assert_int_equal(allocs - frees, held);
		assert_int_equal(rec(KPT)->links, 1);
		assert_frames_consistent();
	}
	assert_int_equal(s.stats.released, 9);
	assert_int_equal(s.stats.announced, 9);
	assert_true(s.stats.pages_peak >= in_use + 3);
}

/* ---- faults ----------------------------------------------------------- */

static void fault_on_not_present_is_reflected(void **state)
{
	load_world();
	/* No PTE. */
	assert_int_equal(shadow_fault(&s, 0, &gp, ULIN + 0x3004, X86_PF_W | X86_PF_U, 3, &out),
			 VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_W | X86_PF_U);
	assert_int_equal(out.cr2, ULIN + 0x3004);
	/* No PDE. */
	assert_int_equal(shadow_fault(&s, 0, &gp, 0x40000010, 0, 1, &out), VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, 0);
	assert_int_equal(out.cr2, 0x40000010);
	assert_int_equal(s.stats.guest_faults, 2);
	assert_int_equal(s.stats.fills, 0);
}

static void fault_on_unaccessed_pte_sets_a_and_fills(void **state)
{
	const uint32_t lin = ULIN + 0x4000;

	load_world();
	set_pte(UPT, lin, (26 << 12) | P | W | U);
	assert_int_equal(shadow_pte(lin), 0);
	assert_int_equal(shadow_fault(&s, 0, &gp, lin + 0x10, X86_PF_U, 3, &out), VTLB_FILLED);
	assert_int_equal(get_pte(UPT, lin), (26 << 12) | P | W | U | A);
	/* Writable in the guest, not dirty: read-only shadow. */
	assert_int_equal(shadow_pte(lin) & SPEC_BITS, (p2m[26] << 12) | P | U);
	assert_pte_is(lin, get_pte(UPT, lin));
	assert_int_equal(s.stats.fills, 1);
	assert_int_equal(s.stats.dirty_faults, 0);
	assert_int_equal(s.stats.guest_faults, 0);
}

static void fault_on_unaccessed_pde_links_and_fills(void **state)
{
	const uint32_t lin = 0x08000000;

	load_world();
	assert_int_equal(shadow_announce(&s, 7, SHADOW_PT, 0, 0, 0, &out), VTLB_FILLED);
	set_pte(7, lin, (27 << 12) | P | W | U);
	set_pde(PD1, lin, (7 << 12) | P | W | U);	/* no A: not linked yet */
	assert_int_equal(loaded_pd()[pde_index(lin)], 0);
	assert_int_equal(shadow_fault(&s, 0, &gp, lin, X86_PF_U, 3, &out), VTLB_FILLED);
	assert_int_equal(get_pde(PD1, lin), (7 << 12) | P | W | U | A);
	assert_int_equal(get_pte(7, lin), (27 << 12) | P | W | U | A);
	assert_linked(loaded_pd()[pde_index(lin)], (7 << 12) | P | W | U | A);
	assert_int_equal(shadow_pte(lin) & SPEC_BITS, (p2m[27] << 12) | P | U);
	assert_int_equal(rec(7)->links, 1);
}

static void write_fault_on_clean_page_sets_d_and_upgrades(void **state)
{
	const uint32_t lin = ULIN + 0x4000;

	load_world();
	set_pte(UPT, lin, (26 << 12) | P | W | U | A);
	assert_int_equal(shadow_pte(lin) & SPEC_BITS, (p2m[26] << 12) | P | U);
	assert_int_equal(shadow_fault(&s, 0, &gp, lin, X86_PF_P | X86_PF_W | X86_PF_U, 3, &out),
			 VTLB_FILLED);
	assert_int_equal(get_pte(UPT, lin), (26 << 12) | P | W | U | A | D);
	assert_int_equal(shadow_pte(lin) & SPEC_BITS, (p2m[26] << 12) | P | W | U);
	assert_int_equal(s.stats.fills, 1);
	assert_int_equal(s.stats.dirty_faults, 1);
	/* Same from ring 1 on a never-touched kernel page: A and D at once. */
	set_pte(KPT, KLIN + 0x9000, (28 << 12) | P | W);
	assert_int_equal(shadow_fault(&s, 0, &gp, KLIN + 0x9000, X86_PF_W, 1, &out), VTLB_FILLED);
	assert_int_equal(get_pte(KPT, KLIN + 0x9000), (28 << 12) | P | W | A | D);
	assert_int_equal(shadow_pte(KLIN + 0x9000) & SPEC_BITS, (p2m[28] << 12) | P | W);
	assert_int_equal(s.stats.dirty_faults, 2);
}

/*
 * Hidden faults by cause, and the prefetch measurement (shadow.h,
 * prefetchable): a fill counts as "set A", "set D" or "found the entry
 * already derived" (the retry after a queued write, drained at this very
 * exit); at each fill, the neighbours within SHADOW_PREFETCH_WINDOW whose
 * guest entry grants more than their shadow entry are counted, not
 * filled.  With every write notified there are none; only entries the
 * guest wrote without telling show up.
 */
static void hidden_faults_by_cause_and_what_a_prefetch_could_fill(void **state)
{
	const uint32_t old = ULIN + 0x3000;	/* index 4 */

	load_world();
	set_pte(UPT, old, (26 << 12) | P | W | U);		/* no A: as fork leaves a child's */
	assert_int_equal(shadow_fault(&s, 0, &gp, old, X86_PF_U, 3, &out), VTLB_FILLED);
	assert_int_equal(s.stats.accessed_faults, 1);
	assert_int_equal(s.stats.prefetchable, 0);

	/* Two neighbours written behind the shadow's back, one far away. */
	poke_pte(UPT, ULIN + 0x4000, (27 << 12) | P | U | A);
	poke_pte(UPT, ULIN + 0x5000, (28 << 12) | P | W | U | A | D);
	poke_pte(UPT, ULIN + 0x30000, (29 << 12) | P | U | A);	/* index 49 */
	/* Already derived (as the drain would have): no progress, the
	 * retry's cause. */
	set_pte(UPT, ULIN + 0x6000, (30 << 12) | P | U | A);	/* index 7 */
	assert_int_equal(shadow_fault(&s, 0, &gp, ULIN + 0x6000, X86_PF_U, 3, &out), VTLB_FILLED);
	assert_int_equal(s.stats.drained_faults, 1);
	assert_int_equal(s.stats.prefetchable, 2);
	/* Counted, not filled: the shadow stays what the notifications made. */
	assert_int_equal(shadow_pte(ULIN + 0x4000), 0);
	assert_int_equal(shadow_pte(ULIN + 0x5000), 0);

	/* A write to a clean page: the D cause. */
	set_pte(UPT, old, (26 << 12) | P | W | U | A);
	assert_int_equal(shadow_fault(&s, 0, &gp, old, X86_PF_P | X86_PF_W | X86_PF_U, 3, &out), VTLB_FILLED);
	assert_int_equal(s.stats.dirty_faults, 1);
	assert_int_equal(s.stats.fills, 3);
	assert_int_equal(s.stats.accessed_faults + s.stats.drained_faults + s.stats.dirty_faults, 3);
}

/*
 * An old entry accessed (the set-A cause: fork marks a child's copies
 * old): its present, old neighbours within SHADOW_PREFETCH_WINDOW get A
 * too, as a CPU may set A for a translation it uses speculatively (never
 * D), and are derived at once, so the child's next touches nearby need no
 * hidden fault each.  A not-present entry (a swap entry's bits) and one
 * beyond the window are left alone; switched off (fastpaths=off),
 * nothing is.
 */
static void an_accessed_fault_gives_old_neighbours_a(void **state)
{
	const uint32_t old = ULIN + 0x3000;			/* index 4 */
	const uint32_t near = ULIN + 0x4000, inside = ULIN + 0x13000;	/* 5, 20 */
	const uint32_t swap = ULIN + 0x5000, beyond = ULIN + 0x15000;	/* 6, 22 */
	const uint32_t swap_entry = (0x1234u << 12) | 0x40;	/* P clear */

	load_world();
	shadow_prefetch_accessed(&s, true);
	set_pte(UPT, old, (26 << 12) | P | W | U);
	set_pte(UPT, near, (27 << 12) | P | W | U);
	set_pte(UPT, inside, (28 << 12) | P | U);
	set_pte(UPT, swap, swap_entry);
	set_pte(UPT, beyond, (29 << 12) | P | U);
	assert_int_equal(shadow_fault(&s, 0, &gp, old, X86_PF_U, 3, &out), VTLB_FILLED);
	assert_int_equal(s.stats.accessed_faults, 1);
	assert_int_equal(s.stats.accessed_prefetched, 2);
	/* A, never D: the writable neighbour stays read-only in the shadow. */
	assert_int_equal(get_pte(UPT, near), (27 << 12) | P | W | U | A);
	assert_int_equal(shadow_pte(near) & SPEC_BITS, shadow_derive_pte(&s, get_pte(UPT, near)));
	assert_true(shadow_pte(near) & P);
	assert_false(shadow_pte(near) & W);
	assert_int_equal(get_pte(UPT, inside), (28 << 12) | P | U | A);
	assert_true(shadow_pte(inside) & P);
	assert_int_equal(get_pte(UPT, swap), swap_entry);
	assert_int_equal(shadow_pte(swap), 0);
	assert_int_equal(get_pte(UPT, beyond), (29 << 12) | P | U);
	assert_int_equal(shadow_pte(beyond), 0);
	/* The world's entries had A already: untouched. */
	assert_int_equal(get_pte(UPT, ULIN + 0x1000), (11 << 12) | P | U | A);

	/* Off: the next old entry's fault sets A in it alone. */
	shadow_prefetch_accessed(&s, false);
	assert_int_equal(shadow_fault(&s, 0, &gp, beyond, X86_PF_U, 3, &out), VTLB_FILLED);
	assert_int_equal(s.stats.accessed_faults, 2);
	assert_int_equal(s.stats.accessed_prefetched, 2);
	set_pte(UPT, near, (27 << 12) | P | W | U);
	assert_int_equal(shadow_fault(&s, 0, &gp, old + 0x2000, X86_PF_U, 3, &out), VTLB_GUEST_FAULT);
	assert_int_equal(get_pte(UPT, near), (27 << 12) | P | W | U);
}

static void user_write_to_read_only_page_is_reflected(void **state)
{
	load_world();
	/* ULIN + 0x1000 is the world's read-only user page (gfn 11). */
	assert_int_equal(shadow_fault(&s, 0, &gp, ULIN + 0x1008, X86_PF_P | X86_PF_W | X86_PF_U, 3, &out),
			 VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_P | X86_PF_W | X86_PF_U);
	assert_int_equal(out.cr2, ULIN + 0x1008);
	assert_int_equal(get_pte(UPT, ULIN + 0x1000), (11 << 12) | P | U | A);
	/* User access to a supervisor page, too. */
	assert_int_equal(shadow_fault(&s, 0, &gp, KLIN, X86_PF_P | X86_PF_U, 3, &out), VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_P | X86_PF_U);
	assert_int_equal(s.stats.guest_faults, 2);
	assert_int_equal(s.stats.fills, 0);
}

static void fault_on_frame_outside_memory_is_a_violation(void **state)
{
	load_world();
	poke_pte(UPT, ULIN + 0x6000, (GUEST_PAGES << 12) | P | W | U);
	assert_int_equal(shadow_fault(&s, 0, &gp, ULIN + 0x6000, X86_PF_U, 3, &out), VTLB_VIOLATION);
	assert_true(out.brk.why[0] != 0);
	assert_int_equal(shadow_pte(ULIN + 0x6000), 0);
	assert_true(s.stats.violations >= 1 || walker.stats.violations >= 1);
}

static void large_pde_with_guest_pse_is_a_violation(void **state)
{
	load_world();
	gp.pse = true;
	poke_pde(PD1, 0x80000000, P | W | U | A | D | PS);
	assert_int_equal(shadow_fault(&s, 0, &gp, 0x80001000, X86_PF_U, 3, &out), VTLB_VIOLATION);
	assert_int_equal(loaded_pd()[pde_index(0x80000000)], 0);
}

static void mapping_in_the_reserved_top_is_a_violation(void **state)
{
	load_world();
	poke_pde(PD1, 0xFC000000, (4 << 12) | P | W | A);
	poke_pte(4, 0xFC001000, (14 << 12) | P | W | A | D);
	assert_int_equal(shadow_fault(&s, 0, &gp, 0xFC001234, 0, 1, &out), VTLB_VIOLATION);
	assert_true(out.brk.why[0] != 0);
	poke_pde(PD1, 0xFFC00000, (4 << 12) | P | W | A);
	poke_pte(4, 0xFFC00000, (14 << 12) | P | W | A | D);
	assert_int_equal(shadow_fault(&s, 0, &gp, 0xFFC00010, X86_PF_W, 1, &out), VTLB_VIOLATION);
	assert_int_equal(loaded_pd()[pde_index(0xFC000000)], 0);
	assert_int_equal(loaded_pd()[1023], SWITCHER_PDE);
}

/* A user access in the reserved top where the guest maps nothing is the
 * guest's own #PF (natively the kernel's address space), without P even
 * in the switcher, which the CPU's tables map supervisor-only; the guest
 * kernel's access, or a guest mapping there, stays a violation. */
static void user_access_in_the_reserved_top_is_the_guests_fault(void **state)
{
	load_world();
	assert_int_equal(shadow_fault(&s, 0, &gp, 0xFC000000, X86_PF_U, 3, &out), VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_U);
	assert_int_equal(out.cr2, 0xFC000000);
	assert_int_equal(shadow_fault(&s, 0, &gp, 0xFFC00010, X86_PF_P | X86_PF_W | X86_PF_U, 3, &out),
			 VTLB_GUEST_FAULT);
	assert_int_equal(out.guest_error, X86_PF_W | X86_PF_U);
	assert_int_equal(s.stats.guest_faults, 2);
	assert_int_equal(shadow_fault(&s, 0, &gp, 0xFC000000, 0, 1, &out), VTLB_VIOLATION);
	poke_pde(PD1, 0xFC000000, (4 << 12) | P | W | U | A);
	assert_int_equal(shadow_fault(&s, 0, &gp, 0xFC000000, X86_PF_U, 3, &out), VTLB_VIOLATION);
	assert_int_equal(loaded_pd()[pde_index(0xFC000000)], 0);
	assert_int_equal(loaded_pd()[1023], SWITCHER_PDE);
}

/* fork: each child's copied entry is not accessed, so its first fetch
 * is the same hidden fault at the same address, again and again; every
 * fill makes the entry present: progress, never "keeps recurring". */
static void identical_faults_that_fill_never_stop(void **state)
{
	const uint32_t lin = ULIN + 0x4000;

	load_world();
	for (unsigned i = 0; i < 50; i++) {
		set_pte(UPT, lin, (26 << 12) | P | W | U);	/* the next child's: old */
		assert_int_equal(shadow_pte(lin), 0);
		assert_int_equal(shadow_fault(&s, 0, &gp, lin + 0xe, X86_PF_U, 3, &out), VTLB_FILLED);
		assert_int_equal(shadow_pte(lin) & SPEC_BITS, (p2m[26] << 12) | P | U);
	}
	assert_int_equal(s.stats.fills, 50);
}

/* A fault the fill cannot change (the shadow entry already is what the
 * guest's tables say): one is a stale TLB entry; nine more in a row are
 * no progress, and stop the guest. */
static void identical_faults_without_progress_stop(void **state)
{
	const uint32_t lin = ULIN + 0x10;	/* the world's user page, present and accessed */

	load_world();
	for (unsigned i = 0; i < 9; i++)
		assert_int_equal(shadow_fault(&s, 0, &gp, lin, X86_PF_P | X86_PF_U, 3, &out), VTLB_FILLED);
	assert_int_equal(shadow_fault(&s, 0, &gp, lin, X86_PF_P | X86_PF_U, 3, &out), VTLB_VIOLATION);
	assert_non_null(strstr(out.brk.why, "keeps recurring"));
}

/* ---- invlpg ------------------------------------------------------------ */

static void invlpg_rederives_an_edited_entry(void **state)
{
	load_world();
	/* The guest remaps KLIN without telling us. */
	poke_pte(KPT, KLIN, (29 << 12) | P | A);
	assert_int_equal(shadow_pte(KLIN) & SPEC_BITS, (p2m[12] << 12) | P | W);
	shadow_invlpg(&s, 0, KLIN + 0x123);
	assert_pte_is(KLIN, (29 << 12) | P | A);
	assert_int_equal(shadow_pte(KLIN) & SPEC_BITS, (p2m[29] << 12) | P);
	assert_int_equal(s.stats.invlpgs, 1);
	/* ... and unmaps it. */
	poke_pte(KPT, KLIN, 0);
	shadow_invlpg(&s, 0, KLIN);
	assert_int_equal(shadow_pte(KLIN), 0);
	/* The neighbours are untouched. */
	assert_pte_is(KLIN + 0x1000, get_pte(KPT, KLIN + 0x1000));
	/* Nothing there, or the reserved top: harmless. */
	shadow_invlpg(&s, 0, 0x40000000);
	shadow_invlpg(&s, 0, 0xFFC00000);
	assert_int_equal(loaded_pd()[1023], SWITCHER_PDE);
	assert_int_equal(s.stats.invlpgs, 4);
}

/* ---- audit ------------------------------------------------------------- */

static void audit_of_a_coherent_shadow_is_clean(void **state)
{
	struct shadow_audit a;

	load_world();
	poke_pde(6, KLIN, KPDE);
	assert_int_equal(shadow_load_cr3(&s, 0, 6 << 12, &out), VTLB_FILLED);
	memset(&a, 0xCC, sizeof(a));
	shadow_audit(&s, &a);
	assert_int_equal(a.mismatches, 0);
	assert_int_equal(a.pds, 2);
	assert_int_equal(a.pts, 2);
	assert_true(a.entries > 0);
}

/* A table released while linked leaves the guest's PDEs naming it and the
 * shadow PDEs granting nothing (a fault links the table
 * again), so the audit counts no mismatch (the hostile suite, docs/HV.md "Tests", found
 * it did, "shadow 00000000, expected 00000000"). */
static void audit_after_releasing_a_linked_table_is_clean(void **state)
{
	const uint32_t lin = 0x08000000;
	struct shadow_audit a;

	load_world();
	poke_pde(6, KLIN, KPDE);
	assert_int_equal(shadow_announce(&s, 7, SHADOW_PT, 0, 0, 0, &out), VTLB_FILLED);
	set_pte(7, lin, (23 << 12) | P | W | U | A | D);
	set_pde(PD1, lin, (7 << 12) | P | W | U | A);
	assert_int_equal(shadow_release(&s, 7, &out), VTLB_FILLED);
	assert_true(grants_nothing(rec_page(PD1)[pde_index(lin)]));
	shadow_audit(&s, &a);
	assert_int_equal(a.mismatches, 0);
}

static void audit_finds_an_unnotified_guest_edit(void **state)
{
	struct shadow_audit a;
	char pte_hex[16], lin_hex[16];

	load_world();
	poke_pte(UPT, ULIN, (31 << 12) | P | W | U | A | D);
	shadow_audit(&s, &a);
	assert_true(a.mismatches >= 1);
	assert_true(a.first[0] != 0);
	/* It names the entry: by its linear address, or the guest PTE. */
	snprintf(pte_hex, sizeof(pte_hex), "%08x", (31u << 12) | P | W | U | A | D);
	snprintf(lin_hex, sizeof(lin_hex), "%08x", ULIN);
	assert_true(strstr(a.first, pte_hex) || strstr(a.first, lin_hex));
	/* Once told, it is clean again. */
	assert_int_equal(shadow_entry_written(&s, (UPT << 12) + pte_index(ULIN) * 4, &out), VTLB_FILLED);
	shadow_audit(&s, &a);
	assert_int_equal(a.mismatches, 0);
}

/* ---- running out ------------------------------------------------------- */

/* Process i: directory 10 + i, user table 30 + i mapping data page 50 + i
 * at 0x08000000; kernel half cloned from PD1.  Announced, built and loaded: */
static void load_process(uint32_t i)
{
	uint32_t pd = 10 + i, pt = 30 + i;

	memset(gpage(pd), 0, 4096);
	assert_int_equal(shadow_announce(&s, pd, SHADOW_PD, PD1, 768, 256, &out), VTLB_FILLED);
	memcpy(&gpage(pd)[768], &gpage(PD1)[768], 256 * 4);
	assert_int_equal(shadow_announce(&s, pt, SHADOW_PT, 0, 0, 0, &out), VTLB_FILLED);
	set_pte(pt, 0x08000000, ((50 + i) << 12) | P | W | U | A | D);
	set_pde(pd, 0x08000000, (pt << 12) | P | W | U | A);
	assert_int_equal(shadow_load_cr3(&s, 0, pd << 12, &out), VTLB_FILLED);
}

/* and as the CPU then sees it. */
static void check_process_loaded(uint32_t i)
{
	const uint32_t *pd = loaded_pd();
	struct shadow_audit a;

	assert_int_equal(shadow_cr3(&s, 0) >> 12, rec(10 + i)->mfn);
	assert_int_equal(pd[1023], SWITCHER_PDE);
	assert_linked(pd[pde_index(0x08000000)], ((30 + i) << 12) | P | W | U | A);
	assert_linked(pd[pde_index(KLIN)], KPDE);
	assert_int_equal(shadow_pte(0x08000000) & SPEC_BITS, (p2m[50 + i] << 12) | P | W | U);
	assert_pte_is(KLIN, get_pte(KPT, KLIN));
	shadow_audit(&s, &a);
	assert_int_equal(a.mismatches, 0);
	assert_frames_consistent();
}

static void running_out_of_frames_evicts_old_directories(void **state)
{
	const uint32_t n = 12;

	load_world();
	/* Room for the loaded directory and its three tables, and one more
	 * directory and table, and not much else. */
	alloc_limit = baseline + 7;
	for (uint32_t i = 0; i < n; i++) {
		load_process(i);
		check_process_loaded(i);
		assert_true(s.stats.pages_in_use <= 7);
	}
	assert_true(s.stats.evictions > 0);
	/* Switch back through all of them: rebuilt on demand. */
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(shadow_load_cr3(&s, 0, (10 + i) << 12, &out), VTLB_FILLED);
		check_process_loaded(i);
	}
	/* And a fault in the loaded one still fills. */
	set_pte(30 + n - 1, 0x08001000, (62 << 12) | P | W | U);
	gp.cr3 = (10 + n - 1) << 12;
	assert_int_equal(shadow_fault(&s, 0, &gp, 0x08001000, X86_PF_W | X86_PF_U, 3, &out), VTLB_FILLED);
	assert_int_equal(shadow_pte(0x08001000) & SPEC_BITS, (p2m[62] << 12) | P | W | U);
	alloc_limit = ~0u;
}

/* ---- link counts: a count that wrapped would free a linked shadow ----- */

/*
 * A hostile guest can link one page table from as many shadow PDEs as it
 * likes: each directory it announces may clone up to 1008 PDEs that all
 * name the same table.  The count of those links decides when the
 * table's shadow frame may be freed, so it must never wrap; if it did,
 * ReleasePage would free a frame that stale shadow PDEs (including the
 * loaded directory's) still point at, and the frame's next life as a
 * shadow directory maps the switcher's page table writable through them.
 */
#define HOT_PT    2u				/* the table everything links */
#define HOT_PDE   ((HOT_PT << 12) | P | W | U | A)
#define CLONE_PD0 10u				/* clones: guest frames 10, 11, ... */

/* Shadow PDEs in every shadow directory that point at machine frame mfn. */
static uint32_t links_to(uint32_t mfn)
{
	uint32_t n = 0;

	for (unsigned r = 0; r < SHADOW_MAX_PAGES; r++) {
		const uint32_t *spd;

		if (s.pages[r].kind != SHADOW_PD)
			continue;
		spd = fake_map(s.pages[r].mfn);
		for (unsigned i = 0; i < VTLB_GUEST_PDES; i++)
			n += (spd[i] & P) && spd[i] >> 12 == mfn;
	}
	return n;
}

/* Present shadow PDEs whose frame is not a shadow page table (or a
 * released one kept, empty, while linked): each one is a guest mapping of
 * hypervisor memory. */
static uint32_t stray_pdes(void)
{
	uint32_t n = 0;

	for (unsigned r = 0; r < SHADOW_MAX_PAGES; r++) {
		const uint32_t *spd;

		if (s.pages[r].kind != SHADOW_PD)
			continue;
		spd = fake_map(s.pages[r].mfn);
		for (unsigned i = 0; i < VTLB_GUEST_PDES; i++) {
			bool ok = false;

			if (!(spd[i] & P))
				continue;
			for (unsigned t = 0; t < SHADOW_MAX_PAGES && !ok; t++)
				ok = (s.pages[t].kind == SHADOW_PT || s.pages[t].kind == SHADOW_ORPHAN) &&
				     s.pages[t].mfn == spd[i] >> 12;
			n += !ok;
		}
	}
	return n;
}

/* PD1 loaded with all 1008 guest PDEs naming HOT_PT: 1008 links. */
static void load_hot_directory(void)
{
	for (unsigned i = 0; i < VTLB_GUEST_PDES; i++)
		gpage(PD1)[i] = HOT_PDE;
	poke_pte(HOT_PT, 0, (20 << 12) | P | W | U | A | D);
	assert_int_equal(shadow_load_cr3(&s, 0, PD1 << 12, &out), VTLB_FILLED);
	gp.cr3 = PD1 << 12;
	assert_int_equal(rec(HOT_PT)->links, VTLB_GUEST_PDES);
}

/* Announce directory gfn as a clone of count PDEs of PD1 (and copy them,
 * as Linux does after the call). */
static enum vtlb_result announce_clone(uint32_t gfn, uint32_t count)
{
	enum vtlb_result r;

	memset(gpage(gfn), 0, 4096);
	r = shadow_announce(&s, gfn, SHADOW_PD, PD1, 0, count, &out);
	memcpy(gpage(gfn), gpage(PD1), count * 4);
	return r;
}

/* ---- the frame budget (frame_budget.h) ---------------------------------- */

/* Frames the shadows hold: one per shadow page, one more per directory. */
static uint32_t shadow_frames(void)
{
	return s.stats.pages_in_use + s.stats.pds_in_use;
}

/* The pool has frames to spare throughout: the guest's budget, not the
 * machine, is what ends here.  Directory after directory is announced and
 * loaded (a process each, as in the eviction test above): the shadows
 * evict within the budget and never hold more than it allows. */
static void a_frame_budget_bounds_the_shadows(void **state)
{
	static struct frame_budget b;

	b = (struct frame_budget){ .limit = 9 };
	const uint32_t n = 20;

	s.env.budget = &b;
	load_world();		/* PD1 + 2 tables: 4 frames */
	assert_int_equal(b.used, shadow_frames());
	for (uint32_t i = 0; i < n; i++) {
		load_process(i);
		check_process_loaded(i);
		assert_true(b.used <= b.limit);
		assert_int_equal(b.used, shadow_frames());
	}
	assert_true(s.stats.evictions > 0);
	assert_true(b.refused > 0);
	assert_int_equal(b.peak, b.limit);
	/* Every process still runs: rebuilt on demand, within the budget. */
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(shadow_load_cr3(&s, 0, (10 + i) << 12, &out), VTLB_FILLED);
		check_process_loaded(i);
		assert_true(b.used <= b.limit);
	}
	assert_true(allocs - frees < MACHINE_PAGES - GUEST_PAGES);	/* the pool never ran out */
	assert_frames_consistent();
	shadow_destroy(&s);
	assert_int_equal(b.used, 0);
}

/* A directory that links more tables than the budget holds: the loaded
 * directories' tables are a cache too, so the load unlinks the tables it
 * linked first to link the later ones, the budget is never passed, and a
 * fault links any of them again.  Only a budget that cannot hold the
 * directory and one table refuses the load, with the budget named,
 * nothing charged that is not held. */
static void a_directory_beyond_the_budget_unlinks_its_tables(void **state)
{
	static struct frame_budget b;

	b = (struct frame_budget){ .limit = 12 };
	const uint32_t big = 20, small = 21;

	s.env.budget = &b;
	for (uint32_t i = 0; i < 16; i++) {
		gpage(big)[i] = ((30 + i) << 12) | P | W | U | A;	/* 16 tables */
		gpage(30 + i)[0] = ((60 + i) << 12) | P | W | U | A;
	}
	assert_int_equal(shadow_load_cr3(&s, 0, big << 12, &out), VTLB_FILLED);
	assert_true(s.stats.unlinked > 0);
	assert_true(b.used <= b.limit);
	assert_int_equal(b.used, shadow_frames());
	gp.cr3 = big << 12;
	for (uint32_t i = 0; i < 16; i++) {
		assert_int_equal(shadow_fault(&s, 0, &gp, i << 22, X86_PF_U, 3, &out), VTLB_FILLED);
		assert_int_equal(shadow_pte(i << 22) >> 12, p2m[60 + i]);
		assert_true(b.used <= b.limit);
	}
	assert_true(allocs - frees < MACHINE_PAGES - GUEST_PAGES);	/* the pool had frames */
	assert_frames_consistent();
	shadow_destroy(&s);
	assert_int_equal(b.used, 0);

	/* Room for the directory (and its link frame) alone. */
	b = (struct frame_budget){ .limit = 2 };
	gpage(small)[0] = (30 << 12) | P | W | U | A;
	assert_int_equal(shadow_load_cr3(&s, 0, small << 12, &out), VTLB_VIOLATION);
	assert_non_null(strstr(out.brk.why, "its frame budget is spent: 2 of 2 frames in use"));
	assert_int_equal(b.used, shadow_frames());
	b.limit = 3;
	assert_int_equal(shadow_load_cr3(&s, 0, small << 12, &out), VTLB_FILLED);
	assert_int_equal(b.used, shadow_frames());
	assert_frames_consistent();
	shadow_destroy(&s);
	assert_int_equal(b.used, 0);
}

static void link_count_never_wraps(void **state)
{
	const uint32_t tries = 70;	/* 70 * 1008 links: past 65,536 */
	uint32_t i, hot_mfn;
	struct shadow_audit a;

	load_hot_directory();
	hot_mfn = rec(HOT_PT)->mfn;
	for (i = 0; i < tries; i++) {
		if (announce_clone(CLONE_PD0 + i, VTLB_GUEST_PDES) != VTLB_FILLED)
			break;
		/* The count is the number of links, whatever it is. */
		assert_int_equal(rec(HOT_PT)->links, links_to(hot_mfn));
	}
	/* A guest that links one table this often is attacking the count:
	 * refused with a diagnostic, before the count could overflow. */
	assert_true(i < tries);
	assert_non_null(strstr(out.brk.why, "linked from"));
	print_message("refused: %s\n", out.brk.why);
	assert_true(links_to(hot_mfn) <= SHADOW_MAX_LINKS);
	assert_int_equal(rec(HOT_PT)->links, links_to(hot_mfn));
	/* The refused directory keeps no half-built shadow, so the audit
	 * (which the stopped guest's statistics show) stays clean. */
	assert_null(rec(CLONE_PD0 + i));
	shadow_audit(&s, &a);
	assert_int_equal(a.mismatches, 0);
	assert_frames_consistent();
}

static void release_of_a_heavily_linked_table_leaves_no_stale_link(void **state)
{
	/* 1008 (loaded) + 64 * 1008 + 16 = 65,536 links: a 16-bit count
	 * reads 0 here. */
	const uint32_t full = 64, rest = 65536 - (full + 1) * VTLB_GUEST_PDES;
	enum vtlb_result last;
	uint32_t hot_mfn;

	load_hot_directory();
	hot_mfn = rec(HOT_PT)->mfn;
	for (uint32_t i = 0; i < full; i++)
		assert_int_equal(announce_clone(CLONE_PD0 + i, VTLB_GUEST_PDES), VTLB_FILLED);
	last = announce_clone(CLONE_PD0 + full, rest);
	/* The guest frees the table (it cannot be in use, says the guest),
	 * then announces a directory, whose shadow may get the freed frame. */
	assert_int_equal(shadow_release(&s, HOT_PT, &out), VTLB_FILLED);
	/* Its PDEs link an empty table whose frame stays the shadow's. */
	assert_true(links_to(hot_mfn) > 0);
	assert_true(grants_nothing((hot_mfn << 12) | P));
	assert_true(frame_used[hot_mfn - MFN_BASE]);
	assert_int_equal(announce_clone(CLONE_PD0 + full + 1, 0), VTLB_FILLED);
	assert_int_equal(stray_pdes(), 0);
	/* The 65,536th link was refused. */
	assert_int_equal(last, VTLB_VIOLATION);
	assert_frames_consistent();
}

/* Machine frames mapped, to measure work: the shadow code reaches every
 * table through env.map. */
static unsigned maps;

static void *counting_map(uint32_t mfn)
{
	maps++;
	return fake_map(mfn);
}

/* Releasing a table that 100 directories link (the kernel half, cloned)
 * costs the same as releasing an unlinked one: no scan of every directory
 * (up to 4096 x 1008 entries, with interrupts off on hardware).  The
 * directories' PDEs grant nothing until a fault links the table again;
 * its frame goes with the last link. */
static void releasing_a_linked_table_does_not_scan_the_directories(void **state)
{
	const uint32_t n = 100;
	uint32_t kpt_mfn;
	struct shadow_audit a;

	load_world();
	for (uint32_t i = 0; i < n; i++) {
		memcpy(gpage(10 + i), gpage(PD1), 4096);
		assert_int_equal(shadow_announce(&s, 10 + i, SHADOW_PD, PD1, 768, 256, &out), VTLB_FILLED);
	}
	kpt_mfn = rec(KPT)->mfn;
	assert_int_equal(rec(KPT)->links, n + 1);
	s.env.map = counting_map;
	maps = 0;
	assert_int_equal(shadow_release(&s, KPT, &out), VTLB_FILLED);
	assert_true(maps <= 4);
	s.env.map = fake_map;
	assert_null(rec(KPT));
	assert_int_equal(s.stats.orphaned, 1);
	assert_true(grants_nothing(loaded_pd()[pde_index(KLIN)]));
	shadow_audit(&s, &a);
	assert_int_equal(a.mismatches, 0);
	assert_frames_consistent();
	/* The guest's PDE still names the table: a fault links it again. */
	assert_int_equal(shadow_fault(&s, 0, &gp, KLIN, 0, 1, &out), VTLB_FILLED);
	assert_pte_is(KLIN, get_pte(KPT, KLIN));
	/* The empty table goes with its last link: the directories' own. */
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(shadow_release(&s, 10 + i, &out), VTLB_FILLED);
	assert_false(frame_used[kpt_mfn - MFN_BASE]);
	shadow_audit(&s, &a);
	assert_int_equal(a.mismatches, 0);
	assert_frames_consistent();
}

/* ---- continuous audit (shadow_track / shadow_audit_touched) ----------- */

#define CALLER_EIP 0xC0123456u

/* The world loaded with tracking on and nothing touched yet. */
static void load_tracked_world(void)
{
	struct shadow_audit a;

	shadow_track(&s, true);
	load_world();
	shadow_audit_touched(&s, false, &a);
	assert_int_equal(a.mismatches, 0);
	assert_int_equal(s.ntouched, 0);
}

static void continuous_audit_finds_and_describes_a_stale_pte(void **state)
{
	struct shadow_audit a;
	uint32_t old_shadow;

	load_tracked_world();
	old_shadow = rec_page(UPT)[pte_index(ULIN)];
	assert_true(old_shadow & P);
	/* The guest cleared the entry and queued it; the hypervisor noted
	 * the queued write but never derived it (the planted bug). */
	poke_pte(UPT, ULIN, 0);
	shadow_note(&s, UPT, SHADOW_OP_QUEUED_SET_PXE, CALLER_EIP);
	assert_true(shadow_entry_stale(&s, (UPT << 12) + pte_index(ULIN) * 4));
	shadow_audit_touched(&s, false, &a);
	print_message("report: %s\n", a.first);
	assert_int_equal(a.mismatches, 1);
	assert_int_equal(a.pts, 1);
	assert_int_equal(a.pds, 0);
	assert_true(a.have_entry);
	assert_int_equal(a.m.gfn, UPT);
	assert_int_equal(a.m.kind, SHADOW_PT);
	assert_int_equal(a.m.index, pte_index(ULIN));
	assert_true(a.m.linked);
	assert_int_equal(a.m.lin, ULIN);
	assert_int_equal(a.m.lin_size, 0x1000);
	assert_int_equal(a.m.guest, 0);
	assert_int_equal(a.m.shadow, old_shadow);
	assert_int_equal(a.m.expect, 0);
	assert_int_equal(a.m.expected_op, SHADOW_OP_SWAP_PXE);
	assert_int_equal(a.m.last_op, SHADOW_OP_QUEUED_SET_PXE);
	assert_int_equal(a.m.last_eip, CALLER_EIP);
	assert_non_null(strstr(a.first, "PT 0x2 entry 1 "));
	assert_non_null(strstr(a.first, "linear 00001000-00001fff"));
	assert_non_null(strstr(a.first, "missed SwapPxE"));
	assert_non_null(strstr(a.first, "at EIP c0123456"));
	/* Audited pages are forgotten: the next audit checks nothing. */
	assert_int_equal(s.ntouched, 0);
	shadow_audit_touched(&s, false, &a);
	assert_int_equal(a.pts + a.pds, 0);
}

static void continuous_audit_checks_only_touched_pages(void **state)
{
	struct shadow_audit a;

	load_tracked_world();
	/* Stale, but in a table no notification named. */
	poke_pte(KPT, KLIN, 0);
	set_pte(UPT, ULIN + 0x1000, (14 << 12) | P | U | A);
	shadow_audit_touched(&s, false, &a);
	assert_int_equal(a.mismatches, 0);
	assert_int_equal(a.pts, 1);
	/* The full audit sees it, and so does an audit of that page. */
	shadow_audit(&s, &a);
	assert_int_equal(a.mismatches, 1);
	memset(&a, 0, sizeof(a));
	shadow_audit_page(&s, KPT, &a);
	assert_int_equal(a.mismatches, 1);
	assert_int_equal(a.m.lin, KLIN);
}

static void continuous_audit_resyncs_when_asked(void **state)
{
	struct shadow_audit a;

	load_tracked_world();
	/* Write-protected without being told: the shadow is still writable. */
	poke_pte(UPT, ULIN, (10 << 12) | P | U | A | D);
	shadow_note(&s, UPT, SHADOW_OP_SET_PXE, CALLER_EIP);
	shadow_audit_touched(&s, true, &a);
	assert_int_equal(a.mismatches, 1);
	assert_int_equal(a.m.expected_op, SHADOW_OP_TEST_AND_CLEAR);
	assert_pte_is(ULIN, get_pte(UPT, ULIN));
	shadow_audit(&s, &a);
	assert_int_equal(a.mismatches, 0);
}

static void continuous_audit_names_a_missed_set_and_a_stale_pde(void **state)
{
	struct shadow_audit a;

	load_tracked_world();
	/* A new entry the shadow never got: only unfilled (the access
	 * faults and the fault fills it), not a mismatch. */
	poke_pte(UPT, ULIN + 0x2000, (15 << 12) | P | U | A);
	shadow_note(&s, UPT, SHADOW_OP_QUEUED_SET_PXE, CALLER_EIP);
	shadow_audit_touched(&s, false, &a);
	assert_int_equal(a.mismatches, 0);
	assert_int_equal(a.unfilled, 1);
	/* An entry moved to another page: stale. */
	poke_pte(UPT, ULIN, (16 << 12) | P | W | U | A | D);
	shadow_note(&s, UPT, SHADOW_OP_QUEUED_SET_PXE, CALLER_EIP);
	shadow_audit_touched(&s, true, &a);
	assert_int_equal(a.mismatches, 1);
	assert_int_equal(a.m.expected_op, SHADOW_OP_SET_PXE);
	assert_int_equal(a.m.guest, get_pte(UPT, ULIN));
	/* A directory entry cleared without a notification. */
	poke_pde(PD1, ULIN, 0);
	shadow_note(&s, PD1, SHADOW_OP_SWAP_PXE, CALLER_EIP);
	shadow_audit_touched(&s, false, &a);
	assert_int_equal(a.mismatches, 1);
	assert_int_equal(a.m.kind, SHADOW_PD);
	assert_int_equal(a.m.gfn, PD1);
	assert_int_equal(a.m.index, 0);
	assert_int_equal(a.m.lin_size, 1u << 22);
	assert_int_equal(a.m.expected_op, SHADOW_OP_SWAP_PXE);
	assert_non_null(strstr(a.first, "PD 0x1 entry 0 (linear 00000000-003fffff)"));
}

static void continuous_audit_off_notes_nothing(void **state)
{
	struct shadow_audit a;

	load_world();
	shadow_note(&s, UPT, SHADOW_OP_SET_PXE, CALLER_EIP);
	set_pte(UPT, ULIN, 0);
	assert_int_equal(s.ntouched, 0);
	assert_int_equal(rec(UPT)->last_op, SHADOW_OP_NONE);
	assert_int_equal(rec(UPT)->last_eip, 0);
	shadow_audit_touched(&s, false, &a);
	assert_int_equal(a.pts + a.pds, 0);
}

static void continuous_audit_of_a_released_table_checks_its_directories(void **state)
{
	struct shadow_audit a;

	load_tracked_world();
	assert_int_equal(shadow_release(&s, UPT, &out), VTLB_FILLED);
	/* The released record (emptied, kept while linked) is skipped; the
	 * directory that links it did not change; the full audit counts its
	 * PDE unfilled, not stale. */
	shadow_audit_touched(&s, false, &a);
	assert_int_equal(a.pts, 0);
	assert_int_equal(a.mismatches, 0);
	shadow_audit(&s, &a);
	assert_int_equal(a.mismatches, 0);
	assert_int_equal(a.unfilled, 1);
	/* The guest clears the PDE as Linux does before ReleasePage: clean. */
	set_pde(PD1, ULIN, 0);
	shadow_audit_touched(&s, false, &a);
	assert_int_equal(a.mismatches + a.unfilled, 0);
}

static void continuous_audit_waits_for_the_clone_copy(void **state)
{
	struct shadow_audit a;

	load_tracked_world();
	memset(gpage(6), 0, 4096);
	assert_int_equal(shadow_announce(&s, 6, SHADOW_PD, PD1, 768, 256, &out), VTLB_FILLED);
	shadow_note(&s, 6, SHADOW_OP_ALLOCATE, CALLER_EIP);
	/* Before clone_pgd_range: the shadow's kernel half is ahead of the
	 * guest's, which is no stale entry. */
	shadow_audit_touched(&s, false, &a);
	assert_int_equal(a.mismatches, 0);
	assert_true(a.unfilled > 0);
	memcpy(&gpage(6)[768], &gpage(PD1)[768], 256 * 4);
	assert_int_equal(shadow_load_cr3(&s, 0, 6 << 12, &out), VTLB_FILLED);
	assert_int_equal(rec(6)->clone_count, 0);
	/* Loaded, the directory is the guest's: a kernel PDE it clears
	 * without telling is stale. */
	poke_pde(6, KLIN, 0);
	shadow_note(&s, 6, SHADOW_OP_SET_PXE, CALLER_EIP);
	shadow_audit_touched(&s, false, &a);
	assert_int_equal(a.mismatches, 1);
	assert_int_equal(a.m.index, pde_index(KLIN));
}

static void describe_an_unlinked_table(void **state)
{
	struct shadow_mismatch m = {
		.gfn = 0x1234, .kind = SHADOW_PT, .index = 7, .linked = false,
		.guest = 0x5067, .shadow = 0, .expect = 0x9065,
		.expected_op = SHADOW_OP_SET_PXE, .last_op = SHADOW_OP_ALLOCATE, .last_eip = 0xc1000000,
	};
	char buf[256];

	shadow_describe(&m, buf, sizeof(buf));
	assert_string_equal(buf, "PT 0x1234 entry 7 (linked from no PDE): guest 00005067, shadow 00000000, "
				 "expected 00009065; missed SetPxE; last notified: AllocatePage at EIP c1000000");
	assert_string_equal(shadow_op_name(SHADOW_OP_COUNT), "?");
}

/* ---- several vCPUs: a loaded directory per slot ------------------------ */

#define SWITCHER_PDE_1 0x0beef003u
#define PD2   6u
#define UPT2  7u

/* What slot k's CR3 maps: its top-level page. */
static const uint32_t *top_of(unsigned k)
{
	uint32_t cr3 = shadow_cr3(&s, k);

	assert_int_not_equal(cr3, 0);
	return fake_map(cr3 >> 12);
}

/* The shadow PTE the CPU running slot k would use for lin, 0 if none. */
static uint32_t slot_pte(unsigned k, uint32_t lin)
{
	uint32_t pde = top_of(k)[pde_index(lin)];

	if (!(pde & P))
		return 0;
	return ((const uint32_t *)fake_map(pde >> 12))[pte_index(lin)];
}

/* PD1 as build_world makes it, and PD2: ULIN through its own table to
 * page 20, the kernel's table shared. */
static void two_slots_two_worlds(void)
{
	build_world();
	poke_pde(PD2, ULIN, (UPT2 << 12) | P | W | U | A);
	poke_pde(PD2, KLIN, KPDE);
	poke_pte(UPT2, ULIN, (20 << 12) | P | W | U | A | D);
	shadow_vcpu_init(&s, 1, SWITCHER_PDE_1);
	assert_int_equal(shadow_load_cr3(&s, 0, PD1 << 12, &out), VTLB_FILLED);
	assert_int_equal(shadow_load_cr3(&s, 1, PD2 << 12, &out), VTLB_FILLED);
}

/* Each slot enters with its own directory and its own switcher; the
 * same linear address reads its own page. */
static void each_vcpu_has_its_own_directory(void **state)
{
	two_slots_two_worlds();
	assert_int_not_equal(shadow_cr3(&s, 0), shadow_cr3(&s, 1));
	assert_int_equal(top_of(0)[1023], SWITCHER_PDE);
	assert_int_equal(top_of(1)[1023], SWITCHER_PDE_1);
	assert_int_equal(slot_pte(0, ULIN) >> 12, p2m[10]);
	assert_int_equal(slot_pte(1, ULIN) >> 12, p2m[20]);
	assert_int_equal(slot_pte(0, KLIN) >> 12, p2m[12]);
	assert_int_equal(slot_pte(1, KLIN) >> 12, p2m[12]);	/* the shared kernel table */
	/* Switching back and forth: each finds its directory again. */
	assert_int_equal(shadow_load_cr3(&s, 0, PD2 << 12, &out), VTLB_FILLED);
	assert_int_equal(slot_pte(0, ULIN) >> 12, p2m[20]);
	assert_int_equal(shadow_load_cr3(&s, 0, PD1 << 12, &out), VTLB_FILLED);
	assert_int_equal(slot_pte(0, ULIN) >> 12, p2m[10]);
	assert_int_equal(slot_pte(1, ULIN) >> 12, p2m[20]);
	assert_frames_consistent();
}

/* Two slots on one directory: two top-level pages, each with its own
 * switcher, and a PDE change reaches both. */
static void same_directory_two_switchers(void **state)
{
	two_slots_two_worlds();
	assert_int_equal(shadow_load_cr3(&s, 1, PD1 << 12, &out), VTLB_FILLED);
	assert_int_not_equal(shadow_cr3(&s, 0), shadow_cr3(&s, 1));
	assert_int_equal(top_of(0)[1023], SWITCHER_PDE);
	assert_int_equal(top_of(1)[1023], SWITCHER_PDE_1);
	set_pde(PD1, ULIN, (UPT2 << 12) | P | W | U | A);
	assert_int_equal(slot_pte(0, ULIN) >> 12, p2m[20]);
	assert_int_equal(slot_pte(1, ULIN) >> 12, p2m[20]);
	set_pde(PD1, ULIN, 0);
	assert_int_equal(slot_pte(0, ULIN), 0);
	assert_int_equal(slot_pte(1, ULIN), 0);
	assert_frames_consistent();
	/* The audit compares each top-level page with its directory. */
	{
		struct shadow_audit au;
		uint32_t *top1 = (uint32_t *)top_of(1), saved = top1[pde_index(KLIN)];

		shadow_audit(&s, &au);
		assert_int_equal(au.mismatches, 0);
		top1[pde_index(KLIN)] = 0;
		shadow_audit(&s, &au);
		assert_int_equal(au.mismatches, 1);
		assert_non_null(strstr(au.first, "vCPU 1's top-level page"));
		top1[pde_index(KLIN)] = saved;
	}
}

/* ReleasePage of a directory another vCPU has loaded is the violation it
 * is for the caller's own; once no slot has it, it goes. */
static void release_of_a_directory_loaded_by_another_vcpu(void **state)
{
	two_slots_two_worlds();
	assert_int_equal(shadow_release(&s, PD2, &out), VTLB_VIOLATION);
	assert_non_null(strstr(out.brk.why, "is loaded in CR3"));
	assert_int_equal(shadow_release(&s, PD1, &out), VTLB_VIOLATION);
	assert_int_equal(shadow_load_cr3(&s, 1, PD1 << 12, &out), VTLB_FILLED);
	assert_int_equal(shadow_release(&s, PD2, &out), VTLB_FILLED);
	assert_null(rec(PD2));
	/* Announcing another vCPU's loaded directory as a table: refused. */
	assert_int_equal(shadow_announce(&s, PD1, SHADOW_PT, 0, 0, 0, &out), VTLB_VIOLATION);
	assert_frames_consistent();
}

/* Reclaim keeps every slot's loaded directory, drops the others; the
 * tables the loaded ones link go too (unlinked in every top-level page),
 * and a fault links each again. */
static void reclaim_keeps_every_loaded_directory(void **state)
{
	uint32_t cr3_0, cr3_1;

	two_slots_two_worlds();
	poke_pde(8, KLIN, KPDE);
	assert_int_equal(shadow_announce(&s, 8, SHADOW_PD, 0, 0, 0, &out), VTLB_FILLED);
	cr3_0 = shadow_cr3(&s, 0);
	cr3_1 = shadow_cr3(&s, 1);
	shadow_trim(&s);
	assert_non_null(rec(PD1));
	assert_non_null(rec(PD2));
	assert_null(rec(8));
	assert_null(rec(UPT));
	assert_int_equal(shadow_cr3(&s, 0), cr3_0);
	assert_int_equal(shadow_cr3(&s, 1), cr3_1);
	assert_int_equal(slot_pte(0, ULIN), 0);
	assert_int_equal(slot_pte(1, KLIN), 0);
	assert_int_equal(s.stats.unlinked, 1);
	gp.cr3 = PD1 << 12;
	assert_int_equal(shadow_fault(&s, 0, &gp, ULIN, X86_PF_U, 3, &out), VTLB_FILLED);
	gp.cr3 = PD2 << 12;
	assert_int_equal(shadow_fault(&s, 1, &gp, ULIN, X86_PF_U, 3, &out), VTLB_FILLED);
	assert_int_equal(slot_pte(0, ULIN) >> 12, p2m[10]);
	assert_int_equal(slot_pte(1, ULIN) >> 12, p2m[20]);
	assert_frames_consistent();
}

/* A fault of slot 1 fills through slot 1's directory, not slot 0's. */
static void fault_fills_the_faulting_vcpus_directory(void **state)
{
	two_slots_two_worlds();
	poke_pte(UPT2, ULIN + 0x1000, (21 << 12) | P | U);	/* not accessed: not derived */
	assert_int_equal(slot_pte(1, ULIN + 0x1000), 0);
	gp.cr3 = PD2 << 12;
	assert_int_equal(shadow_fault(&s, 1, &gp, ULIN + 0x1000, X86_PF_U, 3, &out), VTLB_FILLED);
	assert_int_equal(slot_pte(1, ULIN + 0x1000) >> 12, p2m[21]);
	assert_int_equal(slot_pte(0, ULIN + 0x1000) >> 12, p2m[11]);
	/* A slot the shadows were not told of. */
	assert_int_equal(shadow_load_cr3(&s, 2, PD1 << 12, &out), VTLB_VIOLATION);
	assert_int_equal(shadow_cr3(&s, 2), 0);
	assert_frames_consistent();
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(init_is_empty),
		T(each_vcpu_has_its_own_directory),
		T(same_directory_two_switchers),
		T(release_of_a_directory_loaded_by_another_vcpu),
		T(reclaim_keeps_every_loaded_directory),
		T(fault_fills_the_faulting_vcpus_directory),
		T(loaded_empty_pd_has_only_the_switcher),
		T(derive_not_present_or_not_accessed_is_zero),
		T(derive_accessed_read_only),
		T(derive_writable_needs_dirty),
		T(derive_keeps_user_and_uses_the_p2m),
		T(derive_frame_outside_guest_memory_is_zero),
		T(load_cr3_adopts_the_pd_and_its_tables),
		T(switching_back_to_a_known_pd_is_a_hit),
		T(load_cr3_outside_guest_memory_is_a_violation),
		T(pde_pointing_outside_guest_memory_is_not_linked),
		T(pte_write_updates_the_shadow_pte),
		T(pte_write_to_an_unlinked_known_table),
		T(pde_write_links_and_unlinks),
		T(write_to_an_untracked_page_changes_nothing),
		T(announced_clone_takes_kernel_pdes_from_orig),
		T(a_directory_is_built_in_pieces_under_a_work_limit),
		T(announce_outside_guest_memory_is_a_violation),
		T(two_pds_share_one_kernel_shadow_pt),
		T(release_pt_frees_it_and_unlinks),
		T(strict_announced_pt_is_read_only_until_released),
		T(announced_pt_stays_writable_without_strict),
		T(strict_directory_announced_once_and_copied),
		T(release_pd_frees_it_and_drops_its_links),
		T(release_of_the_loaded_pd_is_a_violation),
		T(release_of_an_unknown_page_is_harmless),
		T(process_lifetime_returns_to_the_baseline),
		T(fault_on_not_present_is_reflected),
		T(fault_on_unaccessed_pte_sets_a_and_fills),
		T(fault_on_unaccessed_pde_links_and_fills),
		T(write_fault_on_clean_page_sets_d_and_upgrades),
		T(hidden_faults_by_cause_and_what_a_prefetch_could_fill),
		T(an_accessed_fault_gives_old_neighbours_a),
		T(user_write_to_read_only_page_is_reflected),
		T(fault_on_frame_outside_memory_is_a_violation),
		T(large_pde_with_guest_pse_is_a_violation),
		T(mapping_in_the_reserved_top_is_a_violation),
		T(user_access_in_the_reserved_top_is_the_guests_fault),
		T(identical_faults_that_fill_never_stop),
		T(identical_faults_without_progress_stop),
		T(invlpg_rederives_an_edited_entry),
		T(audit_of_a_coherent_shadow_is_clean),
		T(audit_after_releasing_a_linked_table_is_clean),
		T(audit_finds_an_unnotified_guest_edit),
		T(running_out_of_frames_evicts_old_directories),
		T(a_frame_budget_bounds_the_shadows),
		T(a_directory_beyond_the_budget_unlinks_its_tables),
		T(link_count_never_wraps),
		T(release_of_a_heavily_linked_table_leaves_no_stale_link),
		T(releasing_a_linked_table_does_not_scan_the_directories),
		T(continuous_audit_finds_and_describes_a_stale_pte),
		T(continuous_audit_checks_only_touched_pages),
		T(continuous_audit_resyncs_when_asked),
		T(continuous_audit_names_a_missed_set_and_a_stale_pde),
		T(continuous_audit_off_notes_nothing),
		T(continuous_audit_of_a_released_table_checks_its_directories),
		T(continuous_audit_waits_for_the_clone_copy),
		T(describe_an_unlinked_table),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
