/*
 * shadow_evict.c - the shadows' records and frames: a new record, freeing one,
 * and making room when frames or records run out (evicting unlinked page
 * tables, then unlinking directories no vCPU has loaded).  The bookkeeping
 * is shadow_internal.h's.
 */
#include "shadow.h"
#include "shadow_internal.h"
#include "hvlib.h"

/* A record's frame back to the pool, the record to the free stack. */
static void drop_record(struct shadow *s, struct shadow_page *sp)
{
	shadow_free_reached_frame(s, sp->mfn);
	memset(sp, 0, sizeof(*sp));
	s->free_stack[s->nfree++] = (uint16_t)(index_of(s, sp) - 1);
	s->stats.pages_in_use--;
}

/* Is record idx some slot's loaded directory? */
bool shadow_loaded_by_any(const struct shadow *s, uint16_t idx)
{
	for (unsigned k = 0; k < s->nr_vcpus; k++)
		if (s->loaded[k] == idx)
			return true;
	return false;
}

bool shadow_cr3_acceptable(const struct shadow *s, uint32_t cr3)
{
	const struct shadow_page *sp = lookup(s, pte_frame(cr3));

	return pte_frame(cr3) < s->gm->npages && (!sp || sp->kind == SHADOW_PD);
}

bool shadow_loaded_anywhere(const struct shadow *s, uint32_t gfn)
{
	const struct shadow_page *sp = lookup(s, gfn);

	return sp && sp->kind == SHADOW_PD && shadow_loaded_by_any(s, index_of(s, sp));
}

/* Point shadow PDE i of pd at record pt_idx (0: not present), in pd and
 * in the top-level page of every slot that has pd loaded. */
void shadow_set_pde(struct shadow *s, struct shadow_page *pd, unsigned i, uint32_t val, uint16_t pt_idx)
{
	uint32_t *spd = shadow_table(s, pd);
	uint16_t *links = pd_links(s, pd);
	uint16_t idx = index_of(s, pd);

	shadow_touch(s, pd);
	if (links[i]) {
		struct shadow_page *old = record(s, links[i]);

		/* The last link of a released table: now it can go. */
		if (!--old->links && old->kind == SHADOW_ORPHAN)
			drop_record(s, old);
	}
	if (!val)
		pt_idx = 0;
	shadow_narrowed(s, spd[i], val);
	spd[i] = val;
	for (unsigned k = 0; k < s->nr_vcpus; k++)
		if (s->loaded[k] == idx && s->top_mfn[k])
			((uint32_t *)s->env.map(s->top_mfn[k]))[i] = val;
	links[i] = pt_idx;
	if (pt_idx)
		record(s, pt_idx)->links++;
}

void shadow_work_begin(struct shadow *s, uint32_t limit)
{
	if (s->work > s->stats.work_max)
		s->stats.work_max = s->work;	/* the exit before's */
	s->work = 0;
	s->work_limit = limit;
}

/* An eviction frees at least this many frames before the work limit may
 * end it: enough for the allocation that called it, and a few more. */
#define EVICT_LEAST 16u

/* Every page table that nothing links any more goes; with `bounded`, once
 * EVICT_LEAST frames (counting `freed`) are back and this exit's work has
 * reached its limit, the rest waits.  Each frame freed counts a quarter
 * of a table derived. */
static void free_unlinked_tables(struct shadow *s, unsigned freed, bool bounded)
{
	for (unsigned i = 0; i < SHADOW_MAX_PAGES; i++) {
		struct shadow_page *sp = &s->pages[i];

		if (bounded && freed >= EVICT_LEAST && shadow_work_spent(s))
			return;
		if (sp->kind == SHADOW_PT && !sp->links) {
			shadow_free_page(s, sp);
			s->work += PT_ENTRIES / 4;
			freed++;
		}
	}
}

/*
 * Out of records or frames: the shadows are a cache.  Drop every
 * directory except the loaded ones and the one being built, then every
 * page table that nothing links any more; once EVICT_LEAST frames are
 * back and this exit's work has reached its limit (shadow_work_spent),
 * the rest waits for the next eviction, so that one exit does not free
 * a whole budget of frames.
 */
static void evict(struct shadow *s)
{
	unsigned freed = 0;

	s->stats.evictions++;
	s->work += SHADOW_MAX_PAGES / 4;	/* the two scans; the frees count their own */
	for (unsigned i = 0; i < SHADOW_MAX_PAGES; i++) {
		struct shadow_page *sp = &s->pages[i];

		if (freed >= EVICT_LEAST && shadow_work_spent(s))
			return;
		if (sp->kind == SHADOW_PD && !shadow_loaded_by_any(s, (uint16_t)(i + 1)) && i + 1 != s->pinned) {
			shadow_free_page(s, sp);
			freed += 2;
		}
	}
	free_unlinked_tables(s, freed, true);
}

/*
 * Still out after evict(): the tables that the directories left (the
 * loaded ones, the one being built) link are a cache too.  Every PDE of
 * theirs is unlinked, in the slots' top-level pages as well (shadow_set_pde),
 * and the tables go, each only after the guest's other CPUs have left it
 * (shadow_free_reached_frame); an access through such a PDE faults and links
 * its table again (shadow_fault, shadow_sync_pde).  So vCPUs whose loaded
 * directories link more tables together than the frame budget holds
 * take turns at it instead of stopping the guest.  Not bounded by the
 * exit's work limit: the last resort before the allocation fails, and
 * at most the frame budget's tables.
 */
static void unlink_directories(struct shadow *s)
{
	s->stats.unlinked++;
	for (unsigned i = 0; i < SHADOW_MAX_PAGES; i++) {
		struct shadow_page *pd = &s->pages[i];

		if (pd->kind != SHADOW_PD)
			continue;
		for (unsigned j = 0; j < VTLB_GUEST_PDES; j++)
			if (pd_links(s, pd)[j])
				shadow_set_pde(s, pd, j, 0, 0);
	}
	free_unlinked_tables(s, 0, false);
}

bool shadow_alloc_zeroed(struct shadow *s, uint32_t *mfn)
{
	if (!vtlb_env_alloc(&s->env, mfn))
		return false;
	memset(s->env.map(*mfn), 0, HV_PAGE_SIZE);
	s->work += PT_ENTRIES;
	return true;
}

/* Out of frames or records at the attempt-th try: give back what the
 * cache can spare, first evict(), then unlink_directories(); false once
 * both have been tried. */
bool shadow_make_room(struct shadow *s, int attempt)
{
	if (attempt == 0)
		evict(s);
	else if (attempt == 1)
		unlink_directories(s);
	else
		return false;
	return true;
}

/* A new, empty record for gfn (not yet filled).  0 when memory is out
 * even after eviction. */
struct shadow_page *shadow_new_page(struct shadow *s, uint32_t gfn, enum shadow_kind kind)
{
	struct shadow_page *sp;
	uint32_t mfn, aux = 0;
	bool need_aux = kind == SHADOW_PD;

	for (int attempt = 0; ; attempt++) {
		if (s->nfree && shadow_alloc_zeroed(s, &mfn)) {
			if (!need_aux || shadow_alloc_zeroed(s, &aux))
				break;
			vtlb_env_free(&s->env, mfn);
		}
		if (!shadow_make_room(s, attempt))
			return 0;
	}
	sp = &s->pages[s->free_stack[--s->nfree]];
	sp->gfn = gfn;
	sp->mfn = mfn;
	sp->aux_mfn = aux;
	sp->links = 0;
	sp->kind = (uint8_t)kind;
	sp->clone_base = sp->clone_count = 0;
	s->by_gfn[gfn] = index_of(s, sp);
	if (kind == SHADOW_PD) {
		shadow_table(s, sp)[HV_SWITCHER_PDE_INDEX] = s->env.switcher_pde;
		s->stats.pds_in_use++;
	}
	if (++s->stats.pages_in_use > s->stats.pages_peak)
		s->stats.pages_peak = s->stats.pages_in_use;
	return sp;
}


void shadow_free_page(struct shadow *s, struct shadow_page *sp)
{
	uint32_t gfn = sp->gfn;
	bool announced = sp->announced;

	if (sp->kind == SHADOW_PD) {
		s->work += VTLB_GUEST_PDES;
		for (unsigned i = 0; i < VTLB_GUEST_PDES; i++)
			shadow_set_pde(s, sp, i, 0, 0);
		vtlb_env_free(&s->env, sp->aux_mfn);
		s->stats.pds_in_use--;
	} else if (sp->links) {
		/*
		 * Still linked (the guest released a table that a PDE points
		 * at).  Finding those PDEs would scan every directory (up to
		 * SHADOW_MAX_PAGES x 1008 entries, with interrupts off), so
		 * the table is emptied instead: the PDEs that link it grant
		 * nothing, an access through one faults and links what the
		 * guest's PDE names then, and the frame goes when the last
		 * of them changes (shadow_set_pde).  It stays charged until then.
		 */
		memset(shadow_table(s, sp), 0, HV_PAGE_SIZE);
		if (s->nr_vcpus > 1)
			s->remote_stale = true;	/* emptied under other CPUs */
		s->by_gfn[gfn] = 0;
		sp->kind = SHADOW_ORPHAN;
		sp->announced = false;
		s->stats.orphaned++;
		shadow_touch(s, sp);
		if (s->strict && announced)
			shadow_rederive_mappings(s, gfn);
		return;
	}
	s->by_gfn[gfn] = 0;
	drop_record(s, sp);
	if (s->strict && announced)
		shadow_rederive_mappings(s, gfn);	/* writable again where the guest allows */
}


void shadow_trim(struct shadow *s)
{
	evict(s);
	unlink_directories(s);
}
