/*
 * shadow.c - notification-driven shadow page tables; see shadow.h for the
 * model and the invariant (every shadow entry is derived from the guest
 * entry alone).
 *
 * Bookkeeping: pages[] holds one record per shadowed guest table; by_gfn
 * maps a guest frame to its record.  A shadow page directory has a second
 * frame (aux) that remembers, per PDE, which record the PDE links, so that
 * unlinking is O(1) and a page table knows how many PDEs link it.
 * The audit that checks all of it is shadow_audit.c: it reads what this
 * file keeps (shadow_internal.h), and this file never calls it; the
 * touched list (shadow_note) and shadow_rederive are its two hooks.
 */
#include "shadow.h"
#include "shadow_internal.h"
#include "hvlib.h"

#define violation(s, out, ...) vtlb_violation(&(s)->stats.violations, out, __VA_ARGS__)

/* Why a frame could not be had, for a refusal's reason: the guest's
 * budget at its limit, or (a pool that should back every budget) none. */
static const char *frames_out(const struct shadow *s, char *buf, size_t len)
{
	const struct frame_budget *b = s->env.budget;

	if (b && b->used >= b->limit)
		fmt_snprintf(buf, len, "its frame budget is spent: %u of %u frames in use", b->used, b->limit);
	else
		fmt_snprintf(buf, len, "no machine frame free");
	return buf;
}

/*
 * Several vCPUs at once: shadow entry old became new.  If old let the
 * hardware do something new does not (gone, another frame, no longer
 * writable or user), a CPU running another vCPU may still hold old in its
 * TLB: noted, and made good before the exit returns (shadow_sync_remote).
 * A wider entry needs nothing: a stale narrower one faults and is filled.
 */
static void narrowed(struct shadow *s, uint32_t old, uint32_t new)
{
	if (s->nr_vcpus < 2 || !(old & PTE_P))
		return;
	if (!(new & PTE_P) || pte_frame(old) != pte_frame(new) || (old & ~new & (PTE_W | PTE_U)))
		s->remote_stale = true;
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
static void free_reached_frame(struct shadow *s, uint32_t mfn)
{
	if (s->nr_vcpus > 1)
		s->remote_stale = true;
	shadow_sync_remote(s);
	vtlb_env_free(&s->env, mfn);
}

/* Note sp for the next continuous audit (only while tracking). */
static void touch(struct shadow *s, struct shadow_page *sp)
{
	if (!s->tracking || !sp || sp->touched)
		return;
	if (s->ntouched == SHADOW_TOUCHED_MAX) {
		s->touched_overflow = true;
		return;
	}
	sp->touched = true;
	s->touched[s->ntouched++] = index_of(s, sp);
}

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
static void rederive_mappings(struct shadow *s, uint32_t gfn)
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
				narrowed(s, spt[j], e);
				spt[j] = e;
				touch(s, pt);
			}
	}
}

void shadow_strict(struct shadow *s, bool on)
{
	s->strict = on;
}

void shadow_prefetch_accessed(struct shadow *s, bool on)
{
	s->prefetch_accessed = on;
}

/* A record's frame back to the pool, the record to the free stack. */
static void drop_record(struct shadow *s, struct shadow_page *sp)
{
	free_reached_frame(s, sp->mfn);
	memset(sp, 0, sizeof(*sp));
	s->free_stack[s->nfree++] = (uint16_t)(index_of(s, sp) - 1);
	s->stats.pages_in_use--;
}

/* Is record idx some slot's loaded directory? */
static bool loaded_by_any(const struct shadow *s, uint16_t idx)
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

	return sp && sp->kind == SHADOW_PD && loaded_by_any(s, index_of(s, sp));
}

/* Point shadow PDE i of pd at record pt_idx (0: not present), in pd and
 * in the top-level page of every slot that has pd loaded. */
static void set_pde(struct shadow *s, struct shadow_page *pd, unsigned i, uint32_t val, uint16_t pt_idx)
{
	uint32_t *spd = shadow_table(s, pd);
	uint16_t *links = pd_links(s, pd);
	uint16_t idx = index_of(s, pd);

	touch(s, pd);
	if (links[i]) {
		struct shadow_page *old = record(s, links[i]);

		/* The last link of a released table: now it can go. */
		if (!--old->links && old->kind == SHADOW_ORPHAN)
			drop_record(s, old);
	}
	if (!val)
		pt_idx = 0;
	narrowed(s, spd[i], val);
	spd[i] = val;
	for (unsigned k = 0; k < s->nr_vcpus; k++)
		if (s->loaded[k] == idx && s->top_mfn[k])
			((uint32_t *)s->env.map(s->top_mfn[k]))[i] = val;
	links[i] = pt_idx;
	if (pt_idx)
		record(s, pt_idx)->links++;
}

static void free_page(struct shadow *s, struct shadow_page *sp);

void shadow_work_begin(struct shadow *s, uint32_t limit)
{
	if (s->work > s->stats.work_max)
		s->stats.work_max = s->work;	/* the exit before's */
	s->work = 0;
	s->work_limit = limit;
}

bool shadow_work_spent(const struct shadow *s)
{
	return s->work_limit && s->work >= s->work_limit;
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
			free_page(s, sp);
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
		if (sp->kind == SHADOW_PD && !loaded_by_any(s, (uint16_t)(i + 1)) && i + 1 != s->pinned) {
			free_page(s, sp);
			freed += 2;
		}
	}
	free_unlinked_tables(s, freed, true);
}

/*
 * Still out after evict(): the tables that the directories left (the
 * loaded ones, the one being built) link are a cache too.  Every PDE of
 * theirs is unlinked, in the slots' top-level pages as well (set_pde),
 * and the tables go, each only after the guest's other CPUs have left it
 * (free_reached_frame); an access through such a PDE faults and links
 * its table again (shadow_fault, sync_pde).  So vCPUs whose loaded
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
				set_pde(s, pd, j, 0, 0);
	}
	free_unlinked_tables(s, 0, false);
}

static bool alloc_zeroed(struct shadow *s, uint32_t *mfn)
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
static bool make_room(struct shadow *s, int attempt)
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
static struct shadow_page *new_page(struct shadow *s, uint32_t gfn, enum shadow_kind kind)
{
	struct shadow_page *sp;
	uint32_t mfn, aux = 0;
	bool need_aux = kind == SHADOW_PD;

	for (int attempt = 0; ; attempt++) {
		if (s->nfree && alloc_zeroed(s, &mfn)) {
			if (!need_aux || alloc_zeroed(s, &aux))
				break;
			vtlb_env_free(&s->env, mfn);
		}
		if (!make_room(s, attempt))
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

static void rederive_mappings(struct shadow *s, uint32_t gfn);

static void free_page(struct shadow *s, struct shadow_page *sp)
{
	uint32_t gfn = sp->gfn;
	bool announced = sp->announced;

	if (sp->kind == SHADOW_PD) {
		s->work += VTLB_GUEST_PDES;
		for (unsigned i = 0; i < VTLB_GUEST_PDES; i++)
			set_pde(s, sp, i, 0, 0);
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
		 * of them changes (set_pde).  It stays charged until then.
		 */
		memset(shadow_table(s, sp), 0, HV_PAGE_SIZE);
		if (s->nr_vcpus > 1)
			s->remote_stale = true;	/* emptied under other CPUs */
		s->by_gfn[gfn] = 0;
		sp->kind = SHADOW_ORPHAN;
		sp->announced = false;
		s->stats.orphaned++;
		touch(s, sp);
		if (s->strict && announced)
			rederive_mappings(s, gfn);
		return;
	}
	s->by_gfn[gfn] = 0;
	drop_record(s, sp);
	if (s->strict && announced)
		rederive_mappings(s, gfn);	/* writable again where the guest allows */
}

/* Fill a page table's shadow from the guest's table. */
static void derive_table(struct shadow *s, struct shadow_page *pt)
{
	const uint32_t *g = guest_table(s, pt->gfn);
	uint32_t *spt = shadow_table(s, pt);

	s->work += PT_ENTRIES;
	for (unsigned i = 0; i < PT_ENTRIES; i++) {
		uint32_t e = shadow_derive_pte(s, g[i]);

		narrowed(s, spt[i], e);
		spt[i] = e;
	}
}

/* The record of the guest page table gfn, shadowing it now if need be. */
static struct shadow_page *page_table(struct shadow *s, uint32_t gfn, bool announced)
{
	struct shadow_page *pt = lookup(s, gfn);

	if (pt)
		return pt->kind == SHADOW_PT ? pt : 0;
	pt = new_page(s, gfn, SHADOW_PT);
	if (!pt)
		return 0;
	derive_table(s, pt);
	if (!announced)
		s->stats.adopted++;
	return pt;
}

/* A refusal whose reason is in out->why already (see sync_pde). */
static enum vtlb_result refused(struct shadow *s)
{
	s->stats.violations++;
	return VTLB_VIOLATION;
}

/*
 * Derive shadow PDE i of pd from guest PDE g.  false, with the reason in
 * out->why (not yet counted: the caller decides), if g asks for a link
 * that cannot be made: out of memory, g names a page directory, or the
 * table already has SHADOW_MAX_LINKS links.  The shadow PDE is then not
 * present.
 */
static bool sync_pde(struct shadow *s, struct shadow_page *pd, unsigned i, uint32_t g,
		     struct vtlb_outcome *out)
{
	struct shadow_page *pt;
	uint16_t saved = s->pinned;

	if (i >= VTLB_GUEST_PDES)
		return true;
	s->work++;
	if ((g & (PTE_P | PTE_A)) != (PTE_P | PTE_A) || (g & PTE_PS) || pte_frame(g) >= s->gm->npages) {
		set_pde(s, pd, i, 0, 0);
		return true;
	}
	s->pinned = index_of(s, pd);
	pt = page_table(s, pte_frame(g), false);
	s->pinned = saved;
	if (!pt) {
		char why[80];

		set_pde(s, pd, i, 0, 0);
		if (lookup(s, pte_frame(g)))
			fmt_snprintf(out->why, sizeof(out->why),
				     "directory 0x%x PDE %u names directory 0x%x as a page table",
				     pd->gfn, i, pte_frame(g));
		else
			fmt_snprintf(out->why, sizeof(out->why),
				     "directory 0x%x PDE %u: out of shadow memory for table 0x%x (%s)",
				     pd->gfn, i, pte_frame(g), frames_out(s, why, sizeof(why)));
		return false;
	}
	/* Relinking the table this PDE links already adds nothing. */
	if (pt->links >= SHADOW_MAX_LINKS && pd_links(s, pd)[i] != index_of(s, pt)) {
		set_pde(s, pd, i, 0, 0);
		fmt_snprintf(out->why, sizeof(out->why),
			     "directory 0x%x PDE %u: table 0x%x is linked from %u PDEs (the limit)",
			     pd->gfn, i, pt->gfn, pt->links);
		return false;
	}
	set_pde(s, pd, i, make_pte(pt->mfn, (g & (PTE_P | PTE_W | PTE_U)) | PTE_A), index_of(s, pt));
	return true;
}

/* Build a directory's shadow; PDEs base..base+count-1 from orig_gfn's.
 * false (out->why) at the first PDE that cannot be linked.  With next:
 * from PDE *next on, stopping once the work limit is reached (*next the
 * PDE to go on from, the rest cleared: not present), *next 0 when done. */
static bool build_directory(struct shadow *s, struct shadow_page *pd, uint32_t orig_gfn,
			    uint32_t base, uint32_t count, uint32_t *next, struct vtlb_outcome *out)
{
	const uint32_t *own = guest_table(s, pd->gfn);
	const uint32_t *orig = count ? guest_table(s, orig_gfn) : 0;

	for (unsigned i = next ? *next : 0; i < VTLB_GUEST_PDES; i++) {
		bool cloned = count && i >= base && i - base < count;

		if (!sync_pde(s, pd, i, cloned ? orig[i] : own[i], out))
			return false;
		if (next && i + 1 < VTLB_GUEST_PDES && shadow_work_spent(s)) {
			s->work += VTLB_GUEST_PDES - i;
			for (unsigned j = i + 1; j < VTLB_GUEST_PDES; j++)
				set_pde(s, pd, j, 0, 0);
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
static enum vtlb_result refused_directory(struct shadow *s, struct shadow_page *pd)
{
	if (!loaded_by_any(s, index_of(s, pd)))
		free_page(s, pd);
	return refused(s);
}

void shadow_init(struct shadow *s, const struct vtlb_env *env, const struct guest_mem *gm,
		 struct vtlb *walker, uint16_t *by_gfn)
{
	memset(s, 0, sizeof(*s));
	s->env = *env;
	s->gm = gm;
	s->walker = walker;
	s->by_gfn = by_gfn;
	memset(by_gfn, 0, gm->npages * sizeof(*by_gfn));
	for (unsigned i = 0; i < SHADOW_MAX_PAGES; i++)
		s->free_stack[i] = (uint16_t)(SHADOW_MAX_PAGES - 1 - i);
	s->nfree = SHADOW_MAX_PAGES;
}

void shadow_vcpu_init(struct shadow *s, unsigned k, uint32_t switcher_pde)
{
	if (k >= SHADOW_MAX_VCPUS)
		return;
	if (k >= s->nr_vcpus)
		s->nr_vcpus = k + 1;
	if (s->top_mfn[k])
		vtlb_env_free(&s->env, s->top_mfn[k]);
	s->loaded[k] = 0;
	s->top_mfn[k] = 0;
	s->top_switcher_pde[k] = switcher_pde;
}

void shadow_trim(struct shadow *s)
{
	evict(s);
	unlink_directories(s);
}

void shadow_destroy(struct shadow *s)
{
	for (unsigned k = 0; k < s->nr_vcpus; k++) {
		s->loaded[k] = 0;
		if (s->top_mfn[k])
			vtlb_env_free(&s->env, s->top_mfn[k]);
		s->top_mfn[k] = 0;
	}
	for (unsigned i = 0; i < SHADOW_MAX_PAGES; i++)
		if (s->pages[i].kind == SHADOW_PD)
			free_page(s, &s->pages[i]);
	for (unsigned i = 0; i < SHADOW_MAX_PAGES; i++)
		if (s->pages[i].kind == SHADOW_PT)
			free_page(s, &s->pages[i]);
}

/*
 * strict_pt: a directory is announced once, between its ReleasePages, and
 * as it is: a clone's entries must already be the copies of orig's.  The
 * interface would let the guest copy them after the call, but then a
 * kernel mapping changed in between reaches the guest's copy and not the
 * shadow (Linux announces under pgd_lock, after pgd_ctor(), for that).
 */
static enum vtlb_result strict_directory_check(struct shadow *s, const struct shadow_page *sp,
						uint32_t gfn, uint32_t orig_gfn, uint32_t base,
						uint32_t count, struct vtlb_outcome *out)
{
	const uint32_t *own = guest_table(s, gfn);
	const uint32_t *orig = count ? guest_table(s, orig_gfn) : 0;

	if (sp && sp->announced)
		return violation(s, out, "strict_pt: AllocatePage: page directory 0x%x announced again "
				 "without a ReleasePage", gfn);
	for (unsigned i = base; i < base + count; i++)
		if (own[i] != orig[i])
			return violation(s, out, "strict_pt: AllocatePage: clone 0x%x entry %u is %08x "
					 "but its source 0x%x has %08x: announced before the copy was made",
					 gfn, i, own[i], orig_gfn, orig[i]);
	return VTLB_FILLED;
}

enum vtlb_result shadow_announce(struct shadow *s, uint32_t gfn, enum shadow_kind kind,
				 uint32_t orig, uint32_t base, uint32_t count,
				 struct vtlb_outcome *out)
{
	return shadow_announce_from(s, gfn, kind, orig, base, count, 0, out);
}

enum vtlb_result shadow_announce_from(struct shadow *s, uint32_t gfn, enum shadow_kind kind,
				      uint32_t orig, uint32_t base, uint32_t count, uint32_t *next,
				      struct vtlb_outcome *out)
{
	struct shadow_page *sp;
	char why[80];
	/* A build the work limit cut, going on: announced already. */
	bool going_on = next && *next && kind == SHADOW_PD;

	if (!going_on)
		s->stats.announced++;
	if (gfn >= s->gm->npages)
		return violation(s, out, "AllocatePage: frame 0x%x is outside its 0x%x pages", gfn, s->gm->npages);
	if (kind != SHADOW_PT && kind != SHADOW_PD)
		return violation(s, out, "AllocatePage: frame 0x%x announced as neither PT nor PD", gfn);
	if (kind == SHADOW_PD && count) {
		if (orig >= s->gm->npages)
			return violation(s, out, "AllocatePage: clone source 0x%x is outside its 0x%x pages",
					 orig, s->gm->npages);
		if (base >= PT_ENTRIES || count > PT_ENTRIES - base)
			return violation(s, out, "AllocatePage: clone range %u+%u is not inside a page directory",
					 base, count);
	}

	sp = lookup(s, gfn);
	if (sp && sp->kind != (uint8_t)kind) {
		if (loaded_by_any(s, index_of(s, sp)))
			return violation(s, out, "AllocatePage: the loaded page directory 0x%x announced as a page table", gfn);
		free_page(s, sp);
		sp = 0;
	}
	if (kind == SHADOW_PT) {
		touch(s, sp);
		if (sp)
			derive_table(s, sp);	/* announced again: new contents */
		else if (!(sp = page_table(s, gfn, true)))
			return violation(s, out, "out of shadow memory for page table 0x%x (%s)", gfn,
					 frames_out(s, why, sizeof(why)));
		sp->announced = true;
		if (s->strict)
			rederive_mappings(s, gfn);
		return VTLB_FILLED;
	}
	if (s->strict && !going_on && strict_directory_check(s, sp, gfn, orig, base, count, out) != VTLB_FILLED)
		return VTLB_VIOLATION;
	if (!sp && !(sp = new_page(s, gfn, SHADOW_PD)))
		return violation(s, out, "out of shadow memory for page directory 0x%x (%s)", gfn,
				 frames_out(s, why, sizeof(why)));
	if (s->strict && !sp->announced) {
		sp->announced = true;
		rederive_mappings(s, gfn);	/* read-only from now on */
	}
	sp->clone_base = (uint16_t)base;
	sp->clone_count = (uint16_t)count;
	if (!build_directory(s, sp, orig, base, count, next, out))
		return refused_directory(s, sp);
	return VTLB_FILLED;
}

enum vtlb_result shadow_release(struct shadow *s, uint32_t gfn, struct vtlb_outcome *out)
{
	struct shadow_page *sp = lookup(s, gfn);

	if (!sp)
		return VTLB_FILLED;	/* never shadowed, or evicted: nothing to free */
	if (loaded_by_any(s, index_of(s, sp)))
		return violation(s, out, "ReleasePage: page directory 0x%x is loaded in CR3", gfn);
	free_page(s, sp);
	s->stats.released++;
	return VTLB_FILLED;
}

enum vtlb_result shadow_entry_written(struct shadow *s, uint32_t gpa, struct vtlb_outcome *out)
{
	struct shadow_page *sp = lookup(s, page_frame(gpa));
	unsigned i = page_offset(gpa) / sizeof(uint32_t);

	if (!sp) {
		s->stats.untracked_writes++;
		return VTLB_FILLED;
	}
	touch(s, sp);
	if (sp->kind == SHADOW_PT) {
		uint32_t e = shadow_derive_pte(s, guest_table(s, sp->gfn)[i]);

		s->stats.entry_writes++;
		s->work++;
		narrowed(s, shadow_table(s, sp)[i], e);
		shadow_table(s, sp)[i] = e;
		return VTLB_FILLED;
	}
	s->stats.pde_writes++;
	if (!sync_pde(s, sp, i, guest_table(s, sp->gfn)[i], out))
		return refused(s);
	return VTLB_FILLED;
}

/* Slot k's top-level page (several vCPUs): its loaded directory's guest
 * PDEs, and its own switcher. */
static bool fill_top(struct shadow *s, unsigned k, struct vtlb_outcome *out)
{
	const uint32_t *spd = shadow_table(s, record(s, s->loaded[k]));
	uint32_t *top;
	char why[80];

	for (int attempt = 0; !s->top_mfn[k] && !alloc_zeroed(s, &s->top_mfn[k]); attempt++) {
		s->top_mfn[k] = 0;
		if (make_room(s, attempt))
			continue;
		violation(s, out, "out of shadow memory for vCPU %u's top-level page (%s)", k,
			  frames_out(s, why, sizeof(why)));
		return false;
	}
	top = s->env.map(s->top_mfn[k]);
	memcpy(top, spd, VTLB_GUEST_PDES * sizeof(uint32_t));
	top[HV_SWITCHER_PDE_INDEX] = s->top_switcher_pde[k];
	return true;
}

enum vtlb_result shadow_load_cr3(struct shadow *s, unsigned k, uint32_t cr3, struct vtlb_outcome *out)
{
	uint32_t gfn = pte_frame(cr3);
	struct shadow_page *sp;
	char why[80];

	s->stats.cr3_loads++;
	if (k >= s->nr_vcpus)
		return violation(s, out, "CR3 load by vCPU %u, which the shadows do not know", k);
	if (gfn >= s->gm->npages)
		return violation(s, out, "CR3 0x%08x is outside its 0x%x pages", cr3, s->gm->npages);
	sp = lookup(s, gfn);
	if (sp && sp->kind != SHADOW_PD)
		return violation(s, out, "CR3 0x%08x is a page table, not a page directory", cr3);
	if (sp) {
		s->stats.cr3_hits++;
		sp->clone_count = 0;	/* copied by now: the guest is using it */
	} else {
		sp = new_page(s, gfn, SHADOW_PD);
		if (!sp)
			return violation(s, out, "out of shadow memory for page directory 0x%x (%s)", gfn,
				 frames_out(s, why, sizeof(why)));
		s->stats.adopted++;
		if (!build_directory(s, sp, 0, 0, 0, 0, out))
			return refused_directory(s, sp);
	}
	s->loaded[k] = index_of(s, sp);
	if (s->nr_vcpus > 1 && !fill_top(s, k, out)) {
		s->loaded[k] = 0;
		return VTLB_VIOLATION;
	}
	return VTLB_FILLED;
}

uint32_t shadow_cr3(const struct shadow *s, unsigned k)
{
	/* 0 before the first shadow_load_cr3(): the caller loads one first. */
	if (k >= s->nr_vcpus || !s->loaded[k])
		return 0;
	if (s->top_mfn[k])
		return frame_addr(s->top_mfn[k]);
	return frame_addr(s->pages[s->loaded[k] - 1].mfn);
}

/* The neighbours of entry i that a prefetch would fill now (shadow.h,
 * prefetchable): measured, not filled, since the derivations above leave
 * none but those of unnotified writes, which the guest must flush. */
static void count_prefetchable(struct shadow *s, struct shadow_page *pt, unsigned i)
{
	const uint32_t *g = guest_table(s, pt->gfn);
	const uint32_t *spt = shadow_table(s, pt);
	unsigned lo = i > SHADOW_PREFETCH_WINDOW ? i - SHADOW_PREFETCH_WINDOW : 0;
	unsigned hi = i + SHADOW_PREFETCH_WINDOW < PT_ENTRIES ? i + SHADOW_PREFETCH_WINDOW : PT_ENTRIES - 1;

	for (unsigned j = lo; j <= hi; j++)
		if (j != i && (shadow_derive_pte(s, g[j]) & ~spt[j] & (PTE_P | PTE_W | PTE_U)))
			s->stats.prefetchable++;
}

/*
 * A fill that set A in an old entry (fork marks a child's copies old, so
 * each first touch of a page in the child is such a fill): give the
 * present, old neighbours within SHADOW_ACCESSED_WINDOW A as well and
 * derive them, so that the child's touches nearby need no hidden fault
 * each.  A CPU may set A for a translation it only used speculatively,
 * so the guest cannot tell this from hardware; D is never set (a write
 * still faults once to set it), and each shadow entry stays the pure
 * function of its guest entry.  The guest entry is changed with a
 * compare-and-exchange, as a CPU's locked A update: an entry another vCPU
 * rewrites meanwhile is left to that write (and its notification), and a
 * not-present entry (a swap entry's bits) is never touched.  The table is
 * the one the walk has just set A in, so it is not in the read-only ROM
 * area.
 */
static void prefetch_accessed(struct shadow *s, struct shadow_page *pt, unsigned i)
{
	uint32_t *g = guest_table(s, pt->gfn);
	uint32_t *spt = shadow_table(s, pt);
	unsigned lo = i > SHADOW_ACCESSED_WINDOW ? i - SHADOW_ACCESSED_WINDOW : 0;
	unsigned hi = i + SHADOW_ACCESSED_WINDOW < PT_ENTRIES ? i + SHADOW_ACCESSED_WINDOW : PT_ENTRIES - 1;

	for (unsigned j = lo; j <= hi; j++) {
		uint32_t e = __atomic_load_n(&g[j], __ATOMIC_RELAXED);

		if (j == i || (e & (PTE_P | PTE_A)) != PTE_P || pte_frame(e) >= s->gm->npages)
			continue;
		if (!__atomic_compare_exchange_n(&g[j], &e, e | PTE_A, false,
						 __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			continue;
		spt[j] = shadow_derive_pte(s, e | PTE_A);
		s->stats.accessed_prefetched++;
	}
}

enum vtlb_result shadow_fault(struct shadow *s, unsigned k, const struct guest_paging *gp, uint32_t lin,
			      uint32_t hw_error, unsigned cpl, struct vtlb_outcome *out)
{
	const bool write = (hw_error & X86_PF_W) != 0;
	struct shadow_page *pd = k < s->nr_vcpus ? record(s, s->loaded[k]) : 0, *pt;
	uint32_t gpa, gpde, gpte_before, *gpt, spde_before, spte_before;
	enum vtlb_result r;
	bool progress;

	if (!pd)
		return violation(s, out, "page fault at 0x%08x with no page directory loaded", lin);
	gpde = guest_table(s, pd->gfn)[pde_index(lin)];
	if (lin >= HV_TOP_RESERVED_BASE) {
		if (gpde & PTE_P)
			return violation(s, out, "guest maps linear 0x%08x in the reserved top: PDE %u = 0x%08x",
					 lin, pde_index(lin), gpde);
		/* A user access where the guest maps nothing is the guest's
		 * own #PF, as natively (the walk below finds its PDE absent);
		 * only the guest kernel promised to keep out (docs/MEMORY.md,
		 * "Shadow paging after activation"). */
		if (!(hw_error & X86_PF_U))
			return violation(s, out, "%s at linear 0x%08x, in the hypervisor's reserved top",
					 write ? "write" : "access", lin);
	}
	/* Whatever CR4.PSE says: the guest was told there is no PSE. */
	if ((gpde & (PTE_P | PTE_PS)) == (PTE_P | PTE_PS))
		return violation(s, out, "4 MiB page at linear 0x%08x (PDE 0x%08x): not supported in paravirtual mode",
				 lin, gpde);
	gpte_before = 0;
	if ((gpde & PTE_P) && pte_frame(gpde) < s->gm->npages)
		gpte_before = guest_table(s, pte_frame(gpde))[pte_index(lin)];

	r = vtlb_translate(s->walker, gp, lin, write, cpl, &gpa, out);
	if (r == VTLB_GUEST_FAULT) {
		s->stats.guest_faults++;
		s->repeats = 0;
		return r;
	}
	if (r != VTLB_FILLED) {
		s->stats.violations++;
		return r;
	}

	/* The walk may have set A in the PDE and A/D in the PTE: derive both
	 * shadow entries again. */
	gpde = guest_table(s, pd->gfn)[pde_index(lin)];
	spde_before = shadow_table(s, pd)[pde_index(lin)];
	if (!sync_pde(s, pd, pde_index(lin), gpde, out))
		return refused(s);
	if (!(pt = record(s, pd_links(s, pd)[pde_index(lin)])))
		return violation(s, out, "page fault at 0x%08x: PDE 0x%08x links no page table", lin, gpde);
	gpt = guest_table(s, pt->gfn);
	spte_before = shadow_table(s, pt)[pte_index(lin)];
	shadow_table(s, pt)[pte_index(lin)] = shadow_derive_pte(s, gpt[pte_index(lin)]);
	narrowed(s, spte_before, shadow_table(s, pt)[pte_index(lin)]);
	touch(s, pt);

	/* No progress: the fill left both shadow entries as they were, so
	 * the CPU will fault here again (a stale TLB entry explains one
	 * such fill, never nine in a row).  Identical faults that each
	 * change an entry are progress: each child of a fork fetches its
	 * first instruction at the same address through a new, not yet
	 * accessed entry (docs/MEMORY.md, "Shadow paging after activation"). */
	progress = spde_before != shadow_table(s, pd)[pde_index(lin)] ||
		   spte_before != shadow_table(s, pt)[pte_index(lin)];
	if (!progress && lin == s->last_fault_lin && hw_error == s->last_fault_err) {
		if (++s->repeats > 8)
			return violation(s, out, "page fault at 0x%08x (error %x) keeps recurring: shadow PDE 0x%08x PTE 0x%08x, guest PDE 0x%08x PTE 0x%08x",
					 lin, hw_error, shadow_table(s, pd)[pde_index(lin)],
					 shadow_table(s, pt)[pte_index(lin)], gpde, gpt[pte_index(lin)]);
	} else {
		s->last_fault_lin = lin;
		s->last_fault_err = hw_error;
		s->repeats = 0;
	}
	s->stats.fills++;
	if (write && !(gpte_before & PTE_D) && (gpt[pte_index(lin)] & PTE_D))
		s->stats.dirty_faults++;
	else if (!(gpte_before & PTE_A) && (gpt[pte_index(lin)] & PTE_A))
		s->stats.accessed_faults++;
	else if (!progress)
		s->stats.drained_faults++;
	/* A first touch of an old entry, a write's (A and D) too. */
	if (s->prefetch_accessed && !(gpte_before & PTE_A) && (gpt[pte_index(lin)] & PTE_A))
		prefetch_accessed(s, pt, pte_index(lin));
	count_prefetchable(s, pt, pte_index(lin));
	return VTLB_FILLED;
}

void shadow_invlpg(struct shadow *s, unsigned k, uint32_t lin)
{
	struct shadow_page *pd = k < s->nr_vcpus ? record(s, s->loaded[k]) : 0, *pt;
	struct vtlb_outcome unused;	/* a PDE it cannot link faults later, and stops the guest then */

	s->stats.invlpgs++;
	if (!pd || pde_index(lin) >= VTLB_GUEST_PDES)
		return;
	if (!sync_pde(s, pd, pde_index(lin), guest_table(s, pd->gfn)[pde_index(lin)], &unused))
		return;
	pt = record(s, pd_links(s, pd)[pde_index(lin)]);
	touch(s, pt);
	if (pt) {
		uint32_t e = shadow_derive_pte(s, guest_table(s, pt->gfn)[pte_index(lin)]);

		narrowed(s, shadow_table(s, pt)[pte_index(lin)], e);
		shadow_table(s, pt)[pte_index(lin)] = e;
	}
}

void shadow_track(struct shadow *s, bool on)
{
	s->tracking = on;
}

void shadow_note(struct shadow *s, uint32_t gfn, enum shadow_op op, uint32_t eip)
{
	struct shadow_page *sp = lookup(s, gfn);

	if (!s->tracking || !sp)
		return;
	sp->last_op = (uint8_t)op;
	sp->last_eip = eip;
	touch(s, sp);
}

/* Derive a stale shadow page again from the guest's table (the audit's
 * audit_action=log repair, shadow_audit.c). */
void shadow_rederive(struct shadow *s, struct shadow_page *sp)
{
	struct vtlb_outcome unused;	/* a PDE it cannot link stays empty: a fault stops the guest then */

	if (sp->kind == SHADOW_PT)
		derive_table(s, sp);
	else if (sp->kind == SHADOW_PD)
		build_directory(s, sp, 0, 0, 0, 0, &unused);
}
