/*
 * vtlb.c - the pre-activation virtual TLB; see vtlb.h for the model.
 *
 * Shadow layout: one shadow page directory per vtlb.  PDEs below
 * HV_TOP_RESERVED_BASE point at shadow page tables allocated on demand and
 * are always present, writable and user: all the guest's permissions are
 * folded into the shadow PTE (guest PDE AND guest PTE), which is where the
 * CPU checks them last anyway.  PDE 1023 is the switcher, PDEs 1008..1022
 * stay empty forever.
 *
 * Guest 4 MiB pages (CR4.PSE) are shadowed as 1024 ordinary 4 KiB entries
 * filled one at a time: the guest's 4 MiB of "physical" memory is a list
 * of scattered machine frames (the p2m), not a 4 MiB-aligned machine run,
 * and per-page fills keep the one code path that checks every frame.
 */
#include "vtlb.h"
#include "hvlib.h"

/* The result of walking the guest's tables for one access. */
struct walk {
	uint32_t gpa;       /* guest-physical address of lin */
	bool user_ok;       /* effective U/S of the leaf (PDE AND PTE) */
	bool write_ok;      /* effective R/W of the leaf */
	bool large;         /* leaf is a 4 MiB PDE */
	bool set_dirty;     /* this access set the guest's D bit */
};

enum vtlb_result vtlb_violation(uint64_t *count, struct vtlb_outcome *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rule_break_vnote(&out->brk, fmt, ap);
	va_end(ap);
	(*count)++;
	return VTLB_VIOLATION;
}

bool vtlb_env_alloc(const struct vtlb_env *env, uint32_t *mfn)
{
	if (env->budget && !frame_budget_take(env->budget, 1))
		return false;
	if (env->alloc_frame(mfn))
		return true;
	if (env->budget)
		frame_budget_give(env->budget, 1);
	return false;
}

void vtlb_env_free(const struct vtlb_env *env, uint32_t mfn)
{
	env->free_frame(mfn);
	if (env->budget)
		frame_budget_give(env->budget, 1);
}

#define violation(v, out, ...) vtlb_violation(&(v)->stats.violations, out, __VA_ARGS__)

static enum vtlb_result guest_fault(struct vtlb *v, struct vtlb_outcome *out, uint32_t lin, uint32_t error)
{
	out->guest_error = error;
	out->cr2 = lin;
	v->stats.guest_faults++;
	return VTLB_GUEST_FAULT;
}

/* A guest page (by guest frame number) as a pointer in our address space.
 * Machine frames only ever come from the p2m, so nothing outside the
 * guest's own memory can be reached; the caller has checked gfn. */
static void *guest_page(struct vtlb *v, uint32_t gfn)
{
	return v->env.map(v->gm->p2m[gfn]);
}

/* Paging off: linear is guest-physical, no protection at all. */
static enum vtlb_result walk_physical(struct vtlb *v, uint32_t lin, bool write, struct walk *w,
				      struct vtlb_outcome *out)
{
	const uint32_t npages = v->gm->npages;

	if (lin >= HV_TOP_RESERVED_BASE)
		return violation(v, out, "paging off: linear 0x%08x is in the hypervisor's reserved top", lin);
	if (page_frame(lin) >= npages)
		return violation(v, out, "paging off: guest-physical 0x%08x is outside its 0x%x pages",
				 lin, npages);
	if (write && guest_gfn_is_rom(page_frame(lin)))
		return violation(v, out, "paging off: write to the VMI ROM area at guest-physical 0x%08x", lin);
	w->gpa = lin;
	w->user_ok = true;
	w->write_ok = !guest_gfn_is_rom(page_frame(lin));
	return VTLB_FILLED;
}

/* One guest page-table entry, read once (another vCPU may be writing it). */
static uint32_t read_entry(const struct vtlb *v, uint32_t *entry)
{
	uint32_t val = __atomic_load_n(entry, __ATOMIC_RELAXED);

#ifdef VTLB_TEST_SEAMS
	if (v->env.after_entry_read)
		v->env.after_entry_read(entry);
#endif
	return val;
}

/* Where a walk found lin's entries: the PDE, and the PTE unless the PDE
 * maps a 4 MiB page (then the PDE is the leaf). */
struct entries {
	uint32_t *pdep, *ptep, *leafp;
	uint32_t pde, leaf, gfn;
};

/* The PDE and leaf for lin, each present and naming a frame of the
 * guest's; 4 MiB pages only with CR4.PSE.  No A/D bit is touched. */
static enum vtlb_result find_entries(struct vtlb *v, const struct guest_paging *gp, uint32_t lin,
				     uint32_t access, struct walk *w, struct entries *e,
				     struct vtlb_outcome *out)
{
	const uint32_t npages = v->gm->npages;

	if (pte_frame(gp->cr3) >= npages)
		return violation(v, out, "guest CR3 0x%08x is outside its 0x%x pages", gp->cr3, npages);
	e->pdep = (uint32_t *)guest_page(v, pte_frame(gp->cr3)) + pde_index(lin);
	e->pde = read_entry(v, e->pdep);
	if (!(e->pde & PTE_P))
		return guest_fault(v, out, lin, access);
	if (gp->pse && (e->pde & PTE_PS)) {
		if (e->pde & PDE_LARGE_HIGHBITS)
			return violation(v, out, "guest 4 MiB PDE 0x%08x for linear 0x%08x sets bits 13-21 (frame above 4 GiB)",
					 e->pde, lin);
		w->large = true;
		e->leafp = e->pdep;
		e->leaf = e->pde;
		e->gfn = pde_large_frame(e->pde) + pte_index(lin);
		if (lin >= HV_TOP_RESERVED_BASE)
			return violation(v, out, "guest maps linear 0x%08x in the reserved top: 4 MiB PDE %u = 0x%08x",
					 lin, pde_index(lin), e->pde);
		if (e->gfn >= npages)
			return violation(v, out, "guest 4 MiB PDE 0x%08x for linear 0x%08x maps frame 0x%x outside its 0x%x pages",
					 e->pde, lin, e->gfn, npages);
		return VTLB_FILLED;
	}
	if (pte_frame(e->pde) >= npages)
		return violation(v, out, "guest PDE 0x%08x for linear 0x%08x: page table frame 0x%x outside its 0x%x pages",
				 e->pde, lin, pte_frame(e->pde), npages);
	e->ptep = (uint32_t *)guest_page(v, pte_frame(e->pde)) + pte_index(lin);
	e->leafp = e->ptep;
	e->leaf = read_entry(v, e->ptep);
	if (!(e->leaf & PTE_P))
		return guest_fault(v, out, lin, access);
	e->gfn = pte_frame(e->leaf);
	if (lin >= HV_TOP_RESERVED_BASE)
		return violation(v, out, "guest maps linear 0x%08x in the reserved top: PDE %u = 0x%08x, PTE 0x%08x",
				 lin, pde_index(lin), e->pde, e->leaf);
	if (e->gfn >= npages)
		return violation(v, out, "guest PTE 0x%08x for linear 0x%08x maps frame 0x%x outside its 0x%x pages",
				 e->leaf, lin, e->gfn, npages);
	return VTLB_FILLED;
}

/*
 * The walker writes A and D into the guest's tables as the CPU would; it
 * must not write where the guest itself may not: a table in the
 * option-ROM area (docs/MEMORY.md, "Shadow paging after activation").  Checked
 * before any bit is set, so a refused walk leaves no trace.  The CPU
 * would write the bits into whatever memory is there; with a read-only
 * area the guest could never see them set and would fault for ever, so
 * it is a rule break, not a silent refusal.
 */
static enum vtlb_result check_ad_writable(struct vtlb *v, const struct guest_paging *gp, bool write,
					  const struct walk *w, const struct entries *e,
					  struct vtlb_outcome *out)
{
	if (!(e->pde & PTE_A) && guest_gfn_is_rom(pte_frame(gp->cr3)))
		return violation(v, out, "page directory at guest-physical 0x%08x is in the read-only option-ROM area (its A bit)",
				 frame_addr(pte_frame(gp->cr3)));
	if (!w->large && (!(e->leaf & PTE_A) || (write && !(e->leaf & PTE_D))) &&
	    guest_gfn_is_rom(pte_frame(e->pde)))
		return violation(v, out, "page table at guest-physical 0x%08x is in the read-only option-ROM area (A/D bits)",
				 frame_addr(pte_frame(e->pde)));
	if (w->large && write && !(e->leaf & PTE_D) && guest_gfn_is_rom(pte_frame(gp->cr3)))
		return violation(v, out, "page directory at guest-physical 0x%08x is in the read-only option-ROM area (its D bit)",
				 frame_addr(pte_frame(gp->cr3)));
	return VTLB_FILLED;
}

/*
 * Set bits in the guest entry at p, read as *val, as the CPU does: a
 * locked compare-and-exchange on the value read.  Another vCPU may be
 * writing the entry at this moment without an exit (the ROM's SwapPxE is
 * an xchg); a plain write-back of *val would undo its write (a cleared
 * PTE present again, its page freed by the guest kernel).  false, nothing
 * written, if the entry is no longer *val.
 */
static bool set_bits(uint32_t *p, uint32_t *val, uint32_t bits)
{
	uint32_t expect = *val;

	if ((expect & bits) == bits)
		return true;
	if (!__atomic_compare_exchange_n(p, &expect, expect | bits, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		return false;
	*val |= bits;
	return true;
}

/* A in the PDE and the leaf, D in the leaf for a write, as the CPU sets
 * them.  false if an entry changed since the walk read it (see set_bits):
 * the walk is to be made again on what is there now. */
static bool set_accessed_dirty(struct walk *w, struct entries *e, bool write)
{
	const uint32_t dirty = write ? PTE_D : 0;

	w->set_dirty = write && !(e->leaf & PTE_D);
	if (w->large) {
		if (!set_bits(e->pdep, &e->pde, PTE_A | dirty))
			return false;
		e->leaf = e->pde;
		return true;
	}
	return set_bits(e->pdep, &e->pde, PTE_A) && set_bits(e->ptep, &e->leaf, PTE_A | dirty);
}

/*
 * One walk of the guest's page tables for an access to lin, as the CPU
 * would: presence, then U/S and R/W of PDE and PTE together, with CR0.WP
 * deciding whether supervisor writes honour R/W.  On success set A in the
 * PDE and PTE (and D in the leaf for a write).  A fault has no side
 * effects: the A bits are set only for translations that complete.
 * *changed: an entry changed under the walk before its bits were set.
 */
static enum vtlb_result walk_once(struct vtlb *v, const struct guest_paging *gp, uint32_t lin,
				  bool write, bool user, struct walk *w, bool *changed,
				  struct vtlb_outcome *out)
{
	const uint32_t access = (write ? X86_PF_W : 0) | (user ? X86_PF_U : 0);
	struct entries e = { 0 };
	enum vtlb_result r;

	w->large = false;
	w->set_dirty = false;
	*changed = false;
	if (!gp->pg)
		return walk_physical(v, lin, write, w, out);
	r = find_entries(v, gp, lin, access, w, &e, out);
	if (r != VTLB_FILLED)
		return r;
	/* For a 4 MiB page pde == leaf, so these are the leaf's own bits. */
	w->user_ok = (e.pde & e.leaf & PTE_U) != 0;
	w->write_ok = (e.pde & e.leaf & PTE_W) != 0;
	if (user && !w->user_ok)
		return guest_fault(v, out, lin, access | X86_PF_P);
	if (write && !w->write_ok && (user || gp->wp))
		return guest_fault(v, out, lin, access | X86_PF_P);
	if (write && guest_gfn_is_rom(e.gfn))
		return violation(v, out, "write to the VMI ROM area: linear 0x%08x is guest-physical 0x%08x",
				 lin, frame_addr(e.gfn) | page_offset(lin));
	r = check_ad_writable(v, gp, write, w, &e, out);
	if (r != VTLB_FILLED)
		return r;
	if (!set_accessed_dirty(w, &e, write)) {
		*changed = true;
		return VTLB_FILLED;
	}
	/* Read-only shadow until the guest's D bit is set, so the first
	 * write comes back to us: fold "not yet dirty" into write_ok. */
	if ((!write && !(e.leaf & PTE_D)) || guest_gfn_is_rom(e.gfn))
		w->write_ok = false;
	w->gpa = frame_addr(e.gfn) | page_offset(lin);
	return VTLB_FILLED;
}

/*
 * The walk, made again while another vCPU changes an entry under it, as
 * the CPU's own walk would be.  Only a guest that rewrites one entry
 * without pause keeps that up; after VTLB_WALK_ROUNDS the access faults
 * as not present, a fault the guest retries (it finds its entry changing
 * as it looks), rather than the hypervisor looping.
 */
static enum vtlb_result walk(struct vtlb *v, const struct guest_paging *gp, uint32_t lin,
			     bool write, bool user, struct walk *w, struct vtlb_outcome *out)
{
	for (unsigned round = 0; round < VTLB_WALK_ROUNDS; round++) {
		bool changed;
		enum vtlb_result r = walk_once(v, gp, lin, write, user, w, &changed, out);

		if (!changed)
			return r;
		v->stats.walks_again++;
	}
	return guest_fault(v, out, lin, (write ? X86_PF_W : 0) | (user ? X86_PF_U : 0));
}

static uint32_t *shadow_pt(struct vtlb *v, unsigned pdx)
{
	return v->env.map(pte_frame(v->pd[pdx]));
}

static void drop_pt(struct vtlb *v, unsigned pdx)
{
	vtlb_env_free(&v->env, pte_frame(v->pd[pdx]));
	v->pd[pdx] = 0;
	v->from_large[pdx] = 0;
	v->stats.shadow_pages_in_use--;
}

/* The shadow page table for pdx, allocated if need be.  A full shadow is
 * only a cache, so when frames run out drop it all and try once more. */
static uint32_t *get_shadow_pt(struct vtlb *v, unsigned pdx, bool *fresh)
{
	uint32_t mfn;

	*fresh = false;
	if (v->pd[pdx] & PTE_P)
		return shadow_pt(v, pdx);
	if (!vtlb_env_alloc(&v->env, &mfn)) {
		vtlb_flush(v);
		if (!vtlb_env_alloc(&v->env, &mfn))
			return 0;
	}
	memset(v->env.map(mfn), 0, HV_PAGE_SIZE);
	v->pd[pdx] = make_pte(mfn, PTE_P | PTE_W | PTE_U);
	if (++v->stats.shadow_pages_in_use > v->stats.shadow_pages_peak)
		v->stats.shadow_pages_peak = v->stats.shadow_pages_in_use;
	*fresh = true;
	return shadow_pt(v, pdx);
}

/*
 * Paging off, a new shadow page table: map all of its 4 MiB that is guest
 * memory at once.  There are no A/D bits or permissions to emulate without
 * paging, so nothing the guest can observe depends on when an entry is
 * made, and the decompressor (which runs with paging off and writes the
 * whole kernel) then takes one hidden fault per 4 MiB instead of one per
 * page.
 */
static void prefetch_physical(struct vtlb *v, uint32_t *spt, unsigned pdx)
{
	uint32_t gfn = page_frame(pde_base(pdx));

	for (unsigned i = 0; i < PT_ENTRIES && gfn + i < v->gm->npages; i++) {
		if (!spt[i]) {
			spt[i] = make_pte(v->gm->p2m[gfn + i], PTE_P | PTE_U |
					 (guest_gfn_is_rom(gfn + i) ? 0 : PTE_W));
			v->stats.prefetched++;
		}
	}
}

bool vtlb_init(struct vtlb *v, const struct vtlb_env *env, const struct guest_mem *gm)
{
	memset(v, 0, sizeof(*v));
	v->env = *env;
	v->gm = gm;
	if (!vtlb_env_alloc(&v->env, &v->pd_mfn))
		return false;
	v->pd = v->env.map(v->pd_mfn);
	memset(v->pd, 0, HV_PAGE_SIZE);
	v->pd[HV_SWITCHER_PDE_INDEX] = env->switcher_pde;
	return true;
}

void vtlb_destroy(struct vtlb *v)
{
	vtlb_flush(v);
	vtlb_env_free(&v->env, v->pd_mfn);
	v->pd = 0;
	v->pd_mfn = 0;
}

enum vtlb_result vtlb_fault(struct vtlb *v, const struct guest_paging *gp, uint32_t lin,
			    uint32_t hw_error, unsigned cpl, struct vtlb_outcome *out)
{
	const bool write = (hw_error & X86_PF_W) != 0;
	const bool user = cpl == 3;
	const unsigned pdx = pde_index(lin);
	struct walk w;
	enum vtlb_result r;
	uint32_t *spt, entry;
	bool fresh;

	r = walk(v, gp, lin, write, user, &w, out);
	if (r == VTLB_GUEST_FAULT) {
		/* Hardware drops TLB entries for an address that faults; so
		 * do we, or a stale shadow entry could outlive the guest's
		 * fix-up.  (lin may be in the reserved top: never touch it.) */
		if (pdx < VTLB_GUEST_PDES && (v->pd[pdx] & PTE_P))
			shadow_pt(v, pdx)[pte_index(lin)] = 0;
		return r;
	}
	if (r != VTLB_FILLED)
		return r;

	/* The walk refuses the reserved top, so pdx < VTLB_GUEST_PDES here. */
	spt = get_shadow_pt(v, pdx, &fresh);
	if (!spt)
		return v->env.budget && v->env.budget->used >= v->env.budget->limit ?
		       violation(v, out, "no frame for a shadow page table (linear 0x%08x): its frame budget is spent: %u of %u frames in use",
				 lin, v->env.budget->used, v->env.budget->limit) :
		       violation(v, out, "no free machine frame for a shadow page table (linear 0x%08x)", lin);

	entry = make_pte(v->gm->p2m[page_frame(w.gpa)], PTE_P);
	if (w.user_ok)
		entry |= PTE_U;
	if (w.write_ok)
		entry |= PTE_W;
	if (write && !w.write_ok) {
		/* Allowed only because the guest runs with CR0.WP = 0, which
		 * lets supervisor writes ignore R/W.  The real CPU has WP = 1,
		 * so make the entry writable but supervisor-only: a user
		 * access faults back here and gets the read-only user view. */
		entry = (entry | PTE_W) & ~PTE_U;
	}
	spt[pte_index(lin)] = entry;
	if (fresh && !gp->pg)
		prefetch_physical(v, spt, pdx);
	if (w.large)
		v->from_large[pdx] = 1;
	v->stats.fills++;
	if (w.set_dirty)
		v->stats.dirty_faults++;
	return VTLB_FILLED;
}

enum vtlb_result vtlb_translate(struct vtlb *v, const struct guest_paging *gp, uint32_t lin,
				bool write, unsigned cpl, uint32_t *gpa, struct vtlb_outcome *out)
{
	struct walk w;
	enum vtlb_result r = walk(v, gp, lin, write, cpl == 3, &w, out);

	if (r == VTLB_FILLED) {
		*gpa = w.gpa;
		v->stats.translates++;
	}
	return r;
}

void vtlb_flush(struct vtlb *v)
{
	for (unsigned i = 0; i < VTLB_GUEST_PDES; i++)
		if (v->pd[i] & PTE_P)
			drop_pt(v, i);
	v->stats.flushes++;
}

void vtlb_invlpg(struct vtlb *v, uint32_t lin)
{
	const unsigned pdx = pde_index(lin);

	v->stats.invlpgs++;
	if (pdx >= VTLB_GUEST_PDES || !(v->pd[pdx] & PTE_P))
		return;
	if (v->from_large[pdx])
		drop_pt(v, pdx);
	else
		shadow_pt(v, pdx)[pte_index(lin)] = 0;
}

uint32_t vtlb_shadow_cr3(const struct vtlb *v)
{
	return frame_addr(v->pd_mfn);
}
