/*
 * shadow_internal.h - the shadows' bookkeeping, shared by shadow.c (which
 * keeps it) and shadow_audit.c (which only reads it, and repairs through
 * shadow_rederive).  Not for the rest of the hypervisor: shadow.h is the
 * interface.
 */
#ifndef VMI_HV_SHADOW_INTERNAL_H
#define VMI_HV_SHADOW_INTERNAL_H

#include "shadow.h"

static inline uint16_t index_of(const struct shadow *s, const struct shadow_page *sp)
{
	return (uint16_t)(sp - s->pages + 1);
}

static inline struct shadow_page *record(struct shadow *s, uint16_t idx)
{
	return idx ? &s->pages[idx - 1] : 0;
}

/* The record shadowing guest frame gfn, or 0. */
static inline struct shadow_page *lookup(const struct shadow *s, uint32_t gfn)
{
	uint16_t idx;

	if (gfn >= s->gm->npages)
		return 0;
	idx = s->by_gfn[gfn];
	return idx ? (struct shadow_page *)&s->pages[idx - 1] : 0;
}

static inline uint32_t *guest_table(const struct shadow *s, uint32_t gfn)
{
	return s->env.map(s->gm->p2m[gfn]);
}

static inline uint32_t *shadow_table(const struct shadow *s, const struct shadow_page *sp)
{
	return s->env.map(sp->mfn);
}

static inline uint16_t *pd_links(const struct shadow *s, const struct shadow_page *pd)
{
	return s->env.map(pd->aux_mfn);
}

/* Derive a stale shadow page again from the guest's table. */
void shadow_rederive(struct shadow *s, struct shadow_page *sp);

#endif
