/*
 * shadow_internal.h - the shadows' bookkeeping, shared by shadow_notify.c and the
 * files split from it (shadow_build.c, shadow_evict.c, shadow_fault.c),
 * which keep it, and shadow_audit.c (which only reads it, and repairs
 * through shadow_rederive).  Not for the rest of the hypervisor: shadow.h is the
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


#define sh_violation(s, out, ...) vtlb_violation(&(s)->stats.violations, out, __VA_ARGS__)

/* Shared by the files that keep the shadows (the comments at their
 * definitions say more). */
const char *shadow_frames_out(const struct shadow *s, char *buf, size_t len);
void shadow_free_reached_frame(struct shadow *s, uint32_t mfn);

/*
 * Several vCPUs at once: shadow entry old became new.  If old let the
 * hardware do something new does not (gone, another frame, no longer
 * writable or user), a CPU running another vCPU may still hold old in its
 * TLB: noted, and made good before the exit returns (shadow_sync_remote).
 * A wider entry needs nothing: a stale narrower one faults and is filled.
 * Inline, as the next one: called for every entry written, and with one
 * vCPU (or no audit) they return at once.
 */
static inline void shadow_narrowed(struct shadow *s, uint32_t old, uint32_t new)
{
	if (s->nr_vcpus < 2 || !(old & PTE_P))
		return;
	if (!(new & PTE_P) || pte_frame(old) != pte_frame(new) || (old & ~new & (PTE_W | PTE_U)))
		s->remote_stale = true;
}

/* Note sp for the next continuous audit (only while tracking): the
 * touched list, or its overflow (the audit then checks every page). */
static inline void shadow_touch(struct shadow *s, struct shadow_page *sp)
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
void shadow_rederive_mappings(struct shadow *s, uint32_t gfn);
void shadow_derive_table(struct shadow *s, struct shadow_page *pt);
struct shadow_page *shadow_page_table(struct shadow *s, uint32_t gfn, bool announced);
enum vtlb_result shadow_refused(struct shadow *s);
bool shadow_sync_pde(struct shadow *s, struct shadow_page *pd, unsigned i, uint32_t g,
		     struct vtlb_outcome *out);
bool shadow_build_directory(struct shadow *s, struct shadow_page *pd, uint32_t orig_gfn,
			    uint32_t base, uint32_t count, uint32_t *next, struct vtlb_outcome *out);
enum vtlb_result shadow_refused_directory(struct shadow *s, struct shadow_page *pd);
bool shadow_loaded_by_any(const struct shadow *s, uint16_t idx);
void shadow_set_pde(struct shadow *s, struct shadow_page *pd, unsigned i, uint32_t val, uint16_t pt_idx);
bool shadow_alloc_zeroed(struct shadow *s, uint32_t *mfn);
bool shadow_make_room(struct shadow *s, int attempt);
struct shadow_page *shadow_new_page(struct shadow *s, uint32_t gfn, enum shadow_kind kind);
void shadow_free_page(struct shadow *s, struct shadow_page *sp);

/* Derive a stale shadow page again from the guest's table. */
void shadow_rederive(struct shadow *s, struct shadow_page *sp);

#endif
