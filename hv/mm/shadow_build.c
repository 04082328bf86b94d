/*
 * shadow_build.c - deriving shadows from the guest's tables: a page table's
 * shadow, and a directory's, PDE by PDE under the exit's work limit.
 */
#include "shadow.h"
#include "shadow_internal.h"
#include "hvlib.h"

/* Fill a page table's shadow from the guest's table. */
void shadow_derive_table(struct shadow *s, struct shadow_page *pt)
{
	const uint32_t *g = guest_table(s, pt->gfn);
	uint32_t *spt = shadow_table(s, pt);

	s->work += PT_ENTRIES;
	for (unsigned i = 0; i < PT_ENTRIES; i++) {
		uint32_t e = shadow_derive_pte(s, g[i]);

		shadow_narrowed(s, spt[i], e);
		spt[i] = e;
	}
}

/* The record of the guest page table gfn, shadowing it now if need be. */
struct shadow_page *shadow_page_table(struct shadow *s, uint32_t gfn, bool announced)
{
	struct shadow_page *pt = lookup(s, gfn);

	if (pt)
		return pt->kind == SHADOW_PT ? pt : 0;
	pt = shadow_new_page(s, gfn, SHADOW_PT);
	if (!pt)
		return 0;
	shadow_derive_table(s, pt);
	if (!announced)
		s->stats.adopted++;
	return pt;
}

/* A refusal whose reason is in out->brk.why already (see shadow_sync_pde). */
enum vtlb_result shadow_refused(struct shadow *s)
{
	s->stats.violations++;
	return VTLB_VIOLATION;
}

/*
 * Derive shadow PDE i of pd from guest PDE g.  false, with the reason in
 * out->brk.why (not yet counted: the caller decides), if g asks for a link
 * that cannot be made: out of memory, g names a page directory, or the
 * table already has SHADOW_MAX_LINKS links.  The shadow PDE is then not
 * present.
 */
bool shadow_sync_pde(struct shadow *s, struct shadow_page *pd, unsigned i, uint32_t g,
		     struct vtlb_outcome *out)
{
	struct shadow_page *pt;
	uint16_t saved = s->pinned;

	if (i >= VTLB_GUEST_PDES)
		return true;
	s->work++;
	if ((g & (PTE_P | PTE_A)) != (PTE_P | PTE_A) || (g & PTE_PS) || pte_frame(g) >= s->gm->npages) {
		shadow_set_pde(s, pd, i, 0, 0);
		return true;
	}
	s->pinned = index_of(s, pd);
	pt = shadow_page_table(s, pte_frame(g), false);
	s->pinned = saved;
	if (!pt) {
		char why[80];

		shadow_set_pde(s, pd, i, 0, 0);
		if (lookup(s, pte_frame(g)))
			fmt_snprintf(out->brk.why, sizeof(out->brk.why),
				     "directory 0x%x PDE %u names directory 0x%x as a page table",
				     pd->gfn, i, pte_frame(g));
		else
			fmt_snprintf(out->brk.why, sizeof(out->brk.why),
				     "directory 0x%x PDE %u: out of shadow memory for table 0x%x (%s)",
				     pd->gfn, i, pte_frame(g), shadow_frames_out(s, why, sizeof(why)));
		return false;
	}
	/* Relinking the table this PDE links already adds nothing. */
	if (pt->links >= SHADOW_MAX_LINKS && pd_links(s, pd)[i] != index_of(s, pt)) {
		shadow_set_pde(s, pd, i, 0, 0);
		fmt_snprintf(out->brk.why, sizeof(out->brk.why),
			     "directory 0x%x PDE %u: table 0x%x is linked from %u PDEs (the limit)",
			     pd->gfn, i, pt->gfn, pt->links);
		return false;
	}
	shadow_set_pde(s, pd, i, make_pte(pt->mfn, (g & (PTE_P | PTE_W | PTE_U)) | PTE_A), index_of(s, pt));
	return true;
}

/* Build a directory's shadow; PDEs base..base+count-1 from orig_gfn's.
 * false (out->brk.why) at the first PDE that cannot be linked.  With next:
 * from PDE *next on, stopping once the work limit is reached (*next the
 * PDE to go on from, the rest cleared: not present), *next 0 when done. */
bool shadow_build_directory(struct shadow *s, struct shadow_page *pd, uint32_t orig_gfn,
			    uint32_t base, uint32_t count, uint32_t *next, struct vtlb_outcome *out)
{
	const uint32_t *own = guest_table(s, pd->gfn);
	const uint32_t *orig = count ? guest_table(s, orig_gfn) : 0;

	for (unsigned i = next ? *next : 0; i < VTLB_GUEST_PDES; i++) {
		bool cloned = count && i >= base && i - base < count;

		if (!shadow_sync_pde(s, pd, i, cloned ? orig[i] : own[i], out))
			return false;
		if (next && i + 1 < VTLB_GUEST_PDES && shadow_work_spent(s)) {
			s->work += VTLB_GUEST_PDES - i;
			for (unsigned j = i + 1; j < VTLB_GUEST_PDES; j++)
				shadow_set_pde(s, pd, j, 0, 0);
			*next = i + 1;
			s->stats.builds_split++;
			return true;
		}
	}
	if (next)
		*next = 0;
	return true;
}

/* A directory whose shadow could not be built: the guest will be stopped.
 * Unless it is loaded, the half-built shadow (missing PDEs the guest's
 * directory has) goes, so that the audit of the stopped guest is true. */
enum vtlb_result shadow_refused_directory(struct shadow *s, struct shadow_page *pd)
{
	if (!shadow_loaded_by_any(s, index_of(s, pd)))
		shadow_free_page(s, pd);
	return shadow_refused(s);
}
