/*
 * shadow_entry.c - one shadow entry: derived from its guest entry alone
 * (shadow_derive_pte), a narrowing noted for the other CPUs, a frame that
 * entries reached freed behind a remote flush, a table noted for the
 * audit.  The bottom of the shadow files: it calls none of them.
 */
#include "shadow.h"
#include "shadow_internal.h"
#include "hvlib.h"

/* Why a frame could not be had, for a refusal's reason: the guest's
 * budget at its limit, or (a pool that should back every budget) none. */
const char *shadow_frames_out(const struct shadow *s, char *buf, size_t len)
{
	const struct frame_budget *b = s->env.budget;

	if (b && b->used >= b->limit)
		fmt_snprintf(buf, len, "its frame budget is spent: %u of %u frames in use", b->used, b->limit);
	else
		fmt_snprintf(buf, len, "no machine frame free");
	return buf;
}

void shadow_sync_remote(struct shadow *s)
{
	if (!s->remote_stale)
		return;
	s->remote_stale = false;
	if (s->env.remote_flush) {
		s->env.remote_flush(s->env.ctx);
		s->remote_flushes++;
	}
}

/* A frame that shadow entries reached goes back to the pool: no other
 * CPU may still reach it through its TLB or paging-structure caches. */
void shadow_free_reached_frame(struct shadow *s, uint32_t mfn)
{
	if (s->nr_vcpus > 1)
		s->remote_stale = true;
	shadow_sync_remote(s);
	vtlb_env_free(&s->env, mfn);
}

/* shadow_touch's slow half: sp not noted yet, while tracking. */
bool shadow_strict_table(const struct shadow *s, uint32_t gfn)
{
	uint16_t idx;

	if (!s->strict || gfn >= s->gm->npages)
		return false;	/* strict_pt=off: the one test it costs */
	idx = s->by_gfn[gfn];
	return idx && s->pages[idx - 1].announced;
}

bool shadow_is_directory(const struct shadow *s, uint32_t gfn)
{
	const struct shadow_page *sp = lookup(s, gfn);

	return sp && sp->kind == SHADOW_PD;
}

uint32_t shadow_derive_pte(const struct shadow *s, uint32_t g)
{
	uint32_t e;

	if ((g & (PTE_P | PTE_A)) != (PTE_P | PTE_A) || pte_frame(g) >= s->gm->npages)
		return 0;
	e = make_pte(s->gm->p2m[pte_frame(g)], PTE_P | (g & PTE_U));
	if ((g & (PTE_W | PTE_D)) == (PTE_W | PTE_D) && !guest_gfn_is_rom(pte_frame(g)) &&
	    !shadow_strict_table(s, pte_frame(g)))
		e |= PTE_W;
	return e;
}

/*
 * strict_pt: gfn has just become, or stopped being, an announced page
 * table, which changes what every entry mapping it derives to (read-only
 * while announced).  Derive those entries again, so that every shadow
 * stays exactly what shadow_derive_pte() gives (the audits check it).
 * There is no reverse map, so every shadow table is scanned: the cost of
 * strict mode at each AllocatePage and ReleasePage of a table
 * (docs/HV.md).  The hardware TLB needs no flush here: the guest is in a
 * hypercall, and the way back into it loads the shadow CR3 (the
 * hypervisor runs in its own address space).
 */
void shadow_rederive_mappings(struct shadow *s, uint32_t gfn)
{
	uint32_t mfn = s->gm->p2m[gfn];

	for (unsigned i = 0; i < SHADOW_MAX_PAGES; i++) {
		struct shadow_page *pt = &s->pages[i];
		const uint32_t *g;
		uint32_t *spt;

		if (pt->kind != SHADOW_PT)
			continue;
		spt = shadow_table(s, pt);
		g = guest_table(s, pt->gfn);
		for (unsigned j = 0; j < PT_ENTRIES; j++)
			if ((spt[j] & PTE_P) && pte_frame(spt[j]) == mfn) {
				uint32_t e = shadow_derive_pte(s, g[j]);

				if ((spt[j] & PTE_W) && !(e & PTE_W))
					s->stats.strict_revoked++;
				shadow_narrowed(s, spt[j], e);
				spt[j] = e;
				shadow_touch(s, pt);
			}
	}
}
