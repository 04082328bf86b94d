/*
 * shadow_notify.c - notification-driven shadow page tables; see shadow.h for the
 * model and the invariant (every shadow entry is derived from the guest
 * entry alone).
 *
 * Bookkeeping: pages[] holds one record per shadowed guest table; by_gfn
 * maps a guest frame to its record.  A shadow page directory has a second
 * frame (aux) that remembers, per PDE, which record the PDE links, so that
 * unlinking is O(1) and a page table knows how many PDEs link it.
 * Here: the interface's calls (announce, release, entry writes, CR3
 * loads).  The directory build is shadow_build.c, records and eviction
 * shadow_evict.c, the fault path shadow_fault.c, one entry's derivation
 * shadow_entry.c; what they share is shadow_internal.h.  The calls run one
 * way: this file -> build -> evict -> entry.  The audit that checks all of it is shadow_audit.c:
 * it reads what these files keep, and they never call it; the touched
 * list (shadow_note) and shadow_rederive are its two hooks.
 */
#include "shadow.h"
#include "shadow_internal.h"
#include "hvlib.h"

void shadow_strict(struct shadow *s, bool on)
{
	s->strict = on;
}

void shadow_prefetch_accessed(struct shadow *s, bool on)
{
	s->prefetch_accessed = on;
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
			shadow_free_page(s, &s->pages[i]);
	for (unsigned i = 0; i < SHADOW_MAX_PAGES; i++)
		if (s->pages[i].kind == SHADOW_PT)
			shadow_free_page(s, &s->pages[i]);
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
		return sh_violation(s, out, "strict_pt: AllocatePage: page directory 0x%x announced again "
				 "without a ReleasePage", gfn);
	for (unsigned i = base; i < base + count; i++)
		if (own[i] != orig[i])
			return sh_violation(s, out, "strict_pt: AllocatePage: clone 0x%x entry %u is %08x "
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
		return sh_violation(s, out, "AllocatePage: frame 0x%x is outside its 0x%x pages", gfn, s->gm->npages);
	if (kind != SHADOW_PT && kind != SHADOW_PD)
		return sh_violation(s, out, "AllocatePage: frame 0x%x announced as neither PT nor PD", gfn);
	if (kind == SHADOW_PD && count) {
		if (orig >= s->gm->npages)
			return sh_violation(s, out, "AllocatePage: clone source 0x%x is outside its 0x%x pages",
					 orig, s->gm->npages);
		if (base >= PT_ENTRIES || count > PT_ENTRIES - base)
			return sh_violation(s, out, "AllocatePage: clone range %u+%u is not inside a page directory",
					 base, count);
	}

	sp = lookup(s, gfn);
	if (sp && sp->kind != (uint8_t)kind) {
		if (shadow_loaded_by_any(s, index_of(s, sp)))
			return sh_violation(s, out, "AllocatePage: the loaded page directory 0x%x announced as a page table", gfn);
		shadow_free_page(s, sp);
		sp = 0;
	}
	if (kind == SHADOW_PT) {
		shadow_touch(s, sp);
		if (sp)
			shadow_derive_table(s, sp);	/* announced again: new contents */
		else if (!(sp = shadow_page_table(s, gfn, true)))
			return sh_violation(s, out, "out of shadow memory for page table 0x%x (%s)", gfn,
					 shadow_frames_out(s, why, sizeof(why)));
		sp->announced = true;
		if (s->strict)
			shadow_rederive_mappings(s, gfn);
		return VTLB_FILLED;
	}
	if (s->strict && !going_on && strict_directory_check(s, sp, gfn, orig, base, count, out) != VTLB_FILLED)
		return VTLB_VIOLATION;
	if (!sp && !(sp = shadow_new_page(s, gfn, SHADOW_PD)))
		return sh_violation(s, out, "out of shadow memory for page directory 0x%x (%s)", gfn,
				 shadow_frames_out(s, why, sizeof(why)));
	if (s->strict && !sp->announced) {
		sp->announced = true;
		shadow_rederive_mappings(s, gfn);	/* read-only from now on */
	}
	sp->clone_base = (uint16_t)base;
	sp->clone_count = (uint16_t)count;
	if (!shadow_build_directory(s, sp, orig, base, count, next, out))
		return shadow_refused_directory(s, sp);
	return VTLB_FILLED;
}

enum vtlb_result shadow_release(struct shadow *s, uint32_t gfn, struct vtlb_outcome *out)
{
	struct shadow_page *sp = lookup(s, gfn);

	if (!sp)
		return VTLB_FILLED;	/* never shadowed, or evicted: nothing to free */
	if (shadow_loaded_by_any(s, index_of(s, sp)))
		return sh_violation(s, out, "ReleasePage: page directory 0x%x is loaded in CR3", gfn);
	shadow_free_page(s, sp);
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
	shadow_touch(s, sp);
	if (sp->kind == SHADOW_PT) {
		uint32_t e = shadow_derive_pte(s, guest_table(s, sp->gfn)[i]);

		s->stats.entry_writes++;
		s->work++;
		shadow_narrowed(s, shadow_table(s, sp)[i], e);
		shadow_table(s, sp)[i] = e;
		return VTLB_FILLED;
	}
	s->stats.pde_writes++;
	if (!shadow_sync_pde(s, sp, i, guest_table(s, sp->gfn)[i], out))
		return shadow_refused(s);
	return VTLB_FILLED;
}

/* Slot k's top-level page (several vCPUs): its loaded directory's guest
 * PDEs, and its own switcher. */
static bool fill_top(struct shadow *s, unsigned k, struct vtlb_outcome *out)
{
	const uint32_t *spd = shadow_table(s, record(s, s->loaded[k]));
	uint32_t *top;
	char why[80];

	for (int attempt = 0; !s->top_mfn[k] && !shadow_alloc_zeroed(s, &s->top_mfn[k]); attempt++) {
		s->top_mfn[k] = 0;
		if (shadow_make_room(s, attempt))
			continue;
		sh_violation(s, out, "out of shadow memory for vCPU %u's top-level page (%s)", k,
			  shadow_frames_out(s, why, sizeof(why)));
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
		return sh_violation(s, out, "CR3 load by vCPU %u, which the shadows do not know", k);
	if (gfn >= s->gm->npages)
		return sh_violation(s, out, "CR3 0x%08x is outside its 0x%x pages", cr3, s->gm->npages);
	sp = lookup(s, gfn);
	if (sp && sp->kind != SHADOW_PD)
		return sh_violation(s, out, "CR3 0x%08x is a page table, not a page directory", cr3);
	if (sp) {
		s->stats.cr3_hits++;
		sp->clone_count = 0;	/* copied by now: the guest is using it */
	} else {
		uint32_t next = 0;

		sp = shadow_new_page(s, gfn, SHADOW_PD);
		if (!sp)
			return sh_violation(s, out, "out of shadow memory for page directory 0x%x (%s)", gfn,
				 shadow_frames_out(s, why, sizeof(why)));
		s->stats.adopted++;
		/* Within this exit's work (shadow_work_begin): the PDEs after
		 * the one where it stops stay not present, and a fault through
		 * one links it (shadow_fault), as after an eviction. */
		if (!shadow_build_directory(s, sp, 0, 0, 0, &next, out))
			return shadow_refused_directory(s, sp);
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
	shadow_touch(s, sp);
}

/* Derive a stale shadow page again from the guest's table (the audit's
 * audit_action=log repair, shadow_audit.c). */
void shadow_rederive(struct shadow *s, struct shadow_page *sp)
{
	struct vtlb_outcome unused;	/* a PDE it cannot link stays empty: a fault stops the guest then */

	if (sp->kind == SHADOW_PT)
		shadow_derive_table(s, sp);
	else if (sp->kind == SHADOW_PD)
		shadow_build_directory(s, sp, 0, 0, 0, 0, &unused);
}
