/*
 * shadow_fault.c - the fault path: a hidden fault filled from the guest's
 * tables (with the accessed-bit prefetch), and INVLPG.
 */
#include "shadow.h"
#include "shadow_internal.h"
#include "hvlib.h"

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

/* A fault at lin whose guest PDE gpde breaks a paravirtual rule: the
 * violation; VTLB_FILLED when it keeps them (the fault goes on). */
static enum vtlb_result check_fault_pde(struct shadow *s, uint32_t lin, uint32_t gpde, uint32_t hw_error,
					struct vtlb_outcome *out)
{
	if (lin >= HV_TOP_RESERVED_BASE) {
		if (gpde & PTE_P)
			return sh_violation(s, out, "guest maps linear 0x%08x in the reserved top: PDE %u = 0x%08x",
					 lin, pde_index(lin), gpde);
		/* A user access where the guest maps nothing is the guest's
		 * own #PF, as natively (the walk finds its PDE absent); only
		 * the guest kernel promised to keep out (docs/MEMORY.md,
		 * "Shadow paging after activation"). */
		if (!(hw_error & X86_PF_U))
			return sh_violation(s, out, "%s at linear 0x%08x, in the hypervisor's reserved top",
					 (hw_error & X86_PF_W) ? "write" : "access", lin);
	}
	/* Whatever CR4.PSE says: the guest was told there is no PSE. */
	if ((gpde & (PTE_P | PTE_PS)) == (PTE_P | PTE_PS))
		return sh_violation(s, out, "4 MiB page at linear 0x%08x (PDE 0x%08x): not supported in paravirtual mode",
				 lin, gpde);
	return VTLB_FILLED;
}

/* Count a fill by what it did to the guest PTE (before, after the walk). */
static void count_fill(struct shadow *s, bool write, uint32_t before, uint32_t after, bool progress)
{
	s->stats.fills++;
	if (write && !(before & PTE_D) && (after & PTE_D))
		s->stats.dirty_faults++;
	else if (!(before & PTE_A) && (after & PTE_A))
		s->stats.accessed_faults++;
	else if (!progress)
		s->stats.drained_faults++;
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
		return sh_violation(s, out, "page fault at 0x%08x with no page directory loaded", lin);
	gpde = guest_table(s, pd->gfn)[pde_index(lin)];
	if ((r = check_fault_pde(s, lin, gpde, hw_error, out)) != VTLB_FILLED)
		return r;
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
	if (!shadow_sync_pde(s, pd, pde_index(lin), gpde, out))
		return shadow_refused(s);
	if (!(pt = record(s, pd_links(s, pd)[pde_index(lin)])))
		return sh_violation(s, out, "page fault at 0x%08x: PDE 0x%08x links no page table", lin, gpde);
	gpt = guest_table(s, pt->gfn);
	spte_before = shadow_table(s, pt)[pte_index(lin)];
	shadow_table(s, pt)[pte_index(lin)] = shadow_derive_pte(s, gpt[pte_index(lin)]);
	shadow_narrowed(s, spte_before, shadow_table(s, pt)[pte_index(lin)]);
	shadow_touch(s, pt);

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
			return sh_violation(s, out, "page fault at 0x%08x (error %x) keeps recurring: shadow PDE 0x%08x PTE 0x%08x, guest PDE 0x%08x PTE 0x%08x",
					 lin, hw_error, shadow_table(s, pd)[pde_index(lin)],
					 shadow_table(s, pt)[pte_index(lin)], gpde, gpt[pte_index(lin)]);
	} else {
		s->last_fault_lin = lin;
		s->last_fault_err = hw_error;
		s->repeats = 0;
	}
	count_fill(s, write, gpte_before, gpt[pte_index(lin)], progress);
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
	if (!shadow_sync_pde(s, pd, pde_index(lin), guest_table(s, pd->gfn)[pde_index(lin)], &unused))
		return;
	pt = record(s, pd_links(s, pd)[pde_index(lin)]);
	shadow_touch(s, pt);
	if (pt) {
		uint32_t e = shadow_derive_pte(s, guest_table(s, pt->gfn)[pte_index(lin)]);

		shadow_narrowed(s, shadow_table(s, pt)[pte_index(lin)], e);
		shadow_table(s, pt)[pte_index(lin)] = e;
	}
}
