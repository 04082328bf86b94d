/*
 * frame_budget.h - the machine frames one guest may hold on top of its
 * memory: shadow page tables and directories with their link frames, the
 * vTLB's tables, LDT copies, its vCPUs' pages (docs/MEMORY.md, "Frame
 * budgets").
 *
 * The frame pool is shared by every guest, so a guest that could take
 * frames without limit would starve the others (and the hypervisor).
 * Each guest's budget is backed: the loader keeps that many frames free
 * per guest (HV_RESERVED_FRAMES), so a take that the budget allows
 * always finds a frame.  A take the budget refuses is the guest's own
 * limit: its shadows are a cache and evict within the budget, and what
 * cannot be evicted stops that guest, never the hypervisor.
 *
 * Pure: used by vtlb.c and shadow_notify.c on the host for the cmocka tests too.
 */
#ifndef VMI_HV_FRAME_BUDGET_H
#define VMI_HV_FRAME_BUDGET_H

#include <stdint.h>
#include <stdbool.h>

struct frame_budget {
	uint32_t limit;		/* frames the guest may hold */
	uint32_t used;		/* frames it holds now */
	uint32_t peak;		/* the most it has held */
	uint64_t refused;	/* takes refused at the limit */
};

/* A budget of limit frames, of which `held` are charged already. */
static inline void frame_budget_init(struct frame_budget *b, uint32_t limit, uint32_t held)
{
	*b = (struct frame_budget){ .limit = limit, .used = held, .peak = held };
}

/* Charge n frames; false (and a refusal counted) if that passes the limit. */
static inline bool frame_budget_take(struct frame_budget *b, uint32_t n)
{
	if (n > b->limit - b->used) {
		b->refused++;
		return false;
	}
	b->used += n;
	if (b->used > b->peak)
		b->peak = b->used;
	return true;
}

/* n frames charged before are given back (more than were charged is a
 * bug of the caller's, and shows as a used count near 2^32). */
static inline void frame_budget_give(struct frame_budget *b, uint32_t n)
{
	b->used -= n;
}

#endif
