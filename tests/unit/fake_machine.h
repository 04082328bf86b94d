/*
 * fake_machine.h - machine memory for the unit tests of the shadow
 * paging (test_vtlb.c, test_shadow.c), one copy for both.
 *
 * An array of pages whose machine frame numbers are offset by MFN_BASE,
 * so that a guest frame number used where a machine one belongs shows up
 * as a bad map().  The guest owns GUEST_PAGES frames scattered through
 * the first part of it by a p2m that is a permutation (gfn != mfn
 * everywhere); the rest is the frame pool for shadow pages, with
 * allocation counts (and a limit) to catch leaks and to make the pool
 * run out.  A frame handed out is dirty (the hypervisor's allocator does
 * not zero either) and a frame given back is poisoned, so that a shadow
 * still in use after its free shows up as garbage.
 *
 * The including test defines MACHINE_PAGES and GUEST_PAGES first; it
 * calls fake_machine_reset() in its setup.
 */
#ifndef VMI_HV_TEST_FAKE_MACHINE_H
#define VMI_HV_TEST_FAKE_MACHINE_H

#include <stdint.h>
#include <string.h>
#include "vtlb.h"

#if !defined(MACHINE_PAGES) || !defined(GUEST_PAGES)
#error "define MACHINE_PAGES and GUEST_PAGES before including fake_machine.h"
#endif

#define MFN_BASE      0x500u
#define SWITCHER_PDE  0x0badc003u

/* Entry bits, short: the tests spell out many entries. */
#define P  PTE_P
#define W  PTE_W
#define U  PTE_U
#define A  PTE_A
#define D  PTE_D
#define PS PTE_PS
#define G  PTE_G

static uint8_t machine[MACHINE_PAGES][HV_PAGE_SIZE] __attribute__((aligned(HV_PAGE_SIZE)));
static uint8_t frame_used[MACHINE_PAGES];
static unsigned allocs, frees, alloc_limit;
static uint32_t p2m[GUEST_PAGES];
static struct guest_mem gm;

static void *fake_map(uint32_t mfn)
{
	assert_true(mfn >= MFN_BASE && mfn < MFN_BASE + MACHINE_PAGES);
	return machine[mfn - MFN_BASE];
}

static bool fake_alloc(uint32_t *mfn)
{
	if (allocs - frees >= alloc_limit)
		return false;
	for (uint32_t i = GUEST_PAGES; i < MACHINE_PAGES; i++) {
		if (!frame_used[i]) {
			frame_used[i] = 1;
			/* Dirty it: the code under test must zero what it needs. */
			memset(machine[i], 0xA5, HV_PAGE_SIZE);
			*mfn = MFN_BASE + i;
			allocs++;
			return true;
		}
	}
	return false;
}

static void fake_free(uint32_t mfn)
{
	assert_true(mfn >= MFN_BASE + GUEST_PAGES && mfn < MFN_BASE + MACHINE_PAGES);
	assert_true(frame_used[mfn - MFN_BASE]);
	frame_used[mfn - MFN_BASE] = 0;
	/* Poison it: a freed shadow still in use shows up as garbage. */
	memset(machine[mfn - MFN_BASE], 0x5A, HV_PAGE_SIZE);
	frees++;
}

static const struct vtlb_env env = {
	.map = fake_map, .alloc_frame = fake_alloc, .free_frame = fake_free,
	.switcher_pde = SWITCHER_PDE,
};

/* A guest frame's page, through the p2m like the hypervisor. */
static uint32_t *gpage(uint32_t gfn)
{
	assert_true(gfn < GUEST_PAGES);
	return (uint32_t *)machine[p2m[gfn] - MFN_BASE];
}

/* Empty machine, pool full and unlimited, the guest's frames scattered:
 * guest frame g lives at machine frame (g * 37 + 11) % GUEST_PAGES. */
static void fake_machine_reset(void)
{
	memset(machine, 0, sizeof(machine));
	memset(frame_used, 0, sizeof(frame_used));
	allocs = frees = 0;
	alloc_limit = ~0u;
	for (uint32_t g = 0; g < GUEST_PAGES; g++) {
		p2m[g] = MFN_BASE + (g * 37 + 11) % GUEST_PAGES;
		frame_used[p2m[g] - MFN_BASE] = 1;
	}
	gm.size = GUEST_PAGES * (uint64_t)HV_PAGE_SIZE;
	gm.npages = GUEST_PAGES;
	gm.p2m = p2m;
	gm.p2m_pages = 1;
	gm.extents = GUEST_PAGES;
}

#endif
