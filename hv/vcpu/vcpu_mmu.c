/*
 * vcpu_mmu.c - which shadow paging serves the vCPU.
 *
 * Until the guest calls the ROM's Init it edits its page tables with plain
 * writes and flushes with CR3 writes and INVLPG, like on hardware: the
 * virtual TLB (mm/vtlb.c) serves, demand-filled and dropped on flushes.
 * From Init on the guest announces its tables and routes every entry
 * write through VMI calls, so the notification-driven shadows (mm/shadow.c)
 * take over: cached per page directory across CR3 switches and freed on
 * ReleasePage.  The vTLB's walker stays in use in both modes, to translate
 * guest-linear addresses for the emulator and the hypercalls.
 */
#include "vcpu_state.h"
#include "guest_frames.h"
#include "guest_stop.h"
#include "vcpu_exception.h"
#include "vcpu_mem.h"
#include "vcpu_mmu.h"
#include "vcpu_shootdown.h"
#include "pcpu.h"
#include "vcpu_ops.h"
#include "machine_mem.h"
#include "frames.h"
#include "console.h"
#include "hvlib.h"
#include "stop.h"
#include "vmi_abi.h"

/* The most work one exit does to the shadows (shadow.h, shadow_work_begin:
 * a page table derived or zeroed counts 1024): 16 tables, tens of
 * microseconds on a CPU, a few milliseconds under TCG (docs/HV.md, "The
 * work of one exit").  A Linux directory's clone links tables that have
 * their shadows already: about 1000, far below it. */
#define EXIT_WORK (16u * 1024u)

static void *map_frame(uint32_t mfn)
{
	return phys_to_virt(mfn << HV_PAGE_SHIFT);
}

static bool alloc_frame(uint32_t *mfn)
{
	return machine_frame_alloc(mfn);
}

static void free_frame(uint32_t mfn)
{
	HV_ASSERT(machine_frame_free(mfn));
}

/* The shadows' remote flush: the guest's other CPUs leave it. */
static void shootdown(void *guest)
{
	guest_shootdown(guest);
}

void vcpu_mmu_sync_remote(struct vcpu *v)
{
	if (v->shadows_active)
		shadow_sync_remote(&v->guest->shadow);
}

void vcpu_mmu_init(struct vcpu *v, uint32_t switcher_pde)
{
	const struct guest_mem *gm = &v->guest->mem;
	struct vtlb_env env = {
		.map = map_frame, .alloc_frame = alloc_frame, .free_frame = free_frame,
		.switcher_pde = switcher_pde, .budget = &v->guest->budget,
		.remote_flush = shootdown, .ctx = v->guest,
	};
	uint16_t *by_gfn;

	/* Before the guest runs: its budget holds far more than this. */
	if (!vtlb_init(&v->vtlb, &env, gm))
		hv_fail("guest %s: no frame for the vTLB's page directory: %u of %u frames of its budget in use",
			v->guest->name, v->guest->budget.used, v->guest->budget.limit);
	if (v->guest->shadow_ready) {
		shadow_vcpu_init(&v->guest->shadow, v->index, switcher_pde);
		return;
	}
	/* by_gfn: one uint16_t per guest page, machine-contiguous so that
	 * it is one array in the hypervisor's 1:1 map. */
	by_gfn = v->guest->shadow.by_gfn;	/* kept across a reboot */
	if (!by_gfn)
		by_gfn = guest_alloc_at_load(v->guest, gm->npages * sizeof(uint16_t), "the shadow index");
	/* The guest's first vCPU lends the shadows its walker: walking the
	 * guest's tables needs only the guest's memory and paging mode. */
	shadow_init(&v->guest->shadow, &env, gm, &v->vtlb, by_gfn);
	shadow_track(&v->guest->shadow, v->guest->audit.opt.mode != AUDIT_OFF);
	shadow_strict(&v->guest->shadow, v->guest->strict_pt);
	shadow_prefetch_accessed(&v->guest->shadow, v->guest->fastpaths);
	shadow_vcpu_init(&v->guest->shadow, v->index, switcher_pde);
	v->guest->shadow_ready = true;
}

_Static_assert(SHADOW_MAX_VCPUS == GUEST_MAX_VCPUS, "a shadow slot per vCPU");

/* ---- continuous audit (audit= option) ----------------------------------
 * Off, each hook below is one test of the mode and the shadows note
 * nothing (shadow_track). */

static bool auditing(const struct vcpu *v)
{
	return v->guest->audit.opt.mode != AUDIT_OFF;
}

/* "exit", "every=16", ... into buf. */
static const char *audit_mode_name(const struct audit_options *o, char *buf, size_t len)
{
	static const char *const names[] = { "off", "exit", "every", "cr3" };

	if (o->mode == AUDIT_EVERY)
		fmt_snprintf(buf, len, "every=%u", o->every);
	else
		fmt_snprintf(buf, len, "%s", o->mode < ARRAY_SIZE(names) ? names[o->mode] : "?");
	return buf;
}

/* Where the kernel called the VMI call being handled: the return address
 * the ROM's stub left above the saved words it pushed (vrom/vmi.S: edi,
 * then ebx and esi for stack arguments).  For the report only: 0 if the
 * stack does not read. */
static uint32_t call_site(struct vcpu *v, unsigned saved_words)
{
	uint32_t ret, pf;

	if (!vcpu_read_lin(v, v->frame->esp + 4 * saved_words, &ret, 4, 1, &pf)) {
		v->violation = false;	/* the guest did not make this access */
		return 0;
	}
	return ret;
}

static void note(struct vcpu *v, uint32_t gfn, enum shadow_op op, uint32_t eip)
{
	if (auditing(v))
		shadow_note(&v->guest->shadow, gfn, op, eip);
}

/* An audit found stale entries: stop the guest with the first, or with
 * audit_action=log say so (the stale pages were derived again). */
static void audit_found(struct vcpu *v, const char *when, const struct shadow_audit *a)
{
	char where[80] = "";

	/* The last notification's kernel function, when a System.map was given. */
	if (a->have_entry && a->m.last_eip)
		sysmap_describe(&v->guest->sysmap, a->m.last_eip, where, sizeof(where));
	if (v->guest->audit.opt.log_only) {
		log_warn("shadow audit at %s: %u stale entries, derived again; first: %s%s",
			 when, a->mismatches, a->first, where);
		return;
	}
	kprintf("vmi-hv: shadow audit at %s: %u stale entries; first: %s%s\n", when, a->mismatches, a->first,
		where);
	vcpu_stop(v, "shadow audit at %s: %s%s", when, a->first, where);
}

static bool sibling_write_may_be_in_flight(const struct vcpu *v);

/* Audit the shadows touched since the last audit, and the directory
 * extra_gfn too unless it is ~0u. */
static void audit_now(struct vcpu *v, const char *when, uint32_t extra_gfn)
{
	struct guest_audit *ga = &v->guest->audit;
	struct shadow *s = &v->guest->shadow;
	struct shadow_audit a;

	if (!v->shadows_active || (!s->ntouched && !s->touched_overflow && extra_gfn == ~0u))
		return;
	shadow_audit_touched(s, ga->opt.log_only, &a);
	if (extra_gfn != ~0u)
		shadow_audit_page(s, extra_gfn, &a);
	if (a.mismatches && sibling_write_may_be_in_flight(v)) {
		/* A sibling vCPU wrote an entry in the meantime, not yet
		 * derived (its queue drains at its exit): not proof.  The
		 * next audit checks every shadow again. */
		s->touched_overflow = true;
		ga->inconclusive++;
		return;
	}
	ga->runs++;
	ga->entries += a.entries;
	ga->mismatches += a.mismatches;
	ga->unfilled += a.unfilled;
	if (a.mismatches)
		audit_found(v, when, &a);
}

/*
 * Might the ROM's fast path have written an entry and not queued it yet?
 * Only if this exit interrupted it between the two, and it runs that with
 * the virtual IF clear and makes no hypercall there: so never at a
 * hypercall, nor with the virtual IF set.  An audit now could see that
 * entry stale; it waits for a later exit (the pages stay touched).
 */
static bool own_write_may_be_in_flight(const struct vcpu *v)
{
	return v->drain_left || (!v->vif && v->frame->vector != VMI_HYPERCALL_VECTOR &&
				 (v->shared->features & VMI_SHARED_F_PXE));
}

/*
 * vcpus_at_once: another vCPU of the guest may have written entries its
 * ROM queued and that its next exit drains (its queue not empty: in
 * guest mode, or out of it and waiting for the guest's lock to drain
 * them), or be inside the ROM between such a write and its queueing (its
 * virtual IF clear in its page: in guest mode; or out of it, stopped by
 * an exit that was no hypercall and has not brought it to a halt): an
 * audit could see them stale.  It waits for an exit when none is
 * (docs/SMP.md, "Concurrent vCPUs": the deferred queues).  The ROM
 * clears the IF before the write and sets it after the queueing, so the
 * IF is read first: set, and the queue then empty, no write was made
 * before the look.  One made during the audit still shows when it ends,
 * since the queue drains only under the lock the audit holds
 * (audit_now looks again before it reports).
 */
static bool sibling_write_may_be_in_flight(const struct vcpu *v)
{
	const struct guest *g = v->guest;

	if (!g->vcpus_at_once)
		return false;
	for (unsigned i = 0; i < g->nr_vcpus; i++) {
		const struct vcpu *w = g->vcpus[i];
		bool if_clear;

		if (!w || w == v || w->awaiting_start || !(w->shared->features & VMI_SHARED_F_PXE))
			continue;
		if_clear = !(*(volatile uint32_t *)&w->shared->eflags_if & X86_EFLAGS_IF);
		if (*(volatile uint32_t *)&w->shared->pxe_count)
			return true;
		if (if_clear && (vcpu_guest_mode_cpu(w) >= 0 ||
				 (!w->halted && w->frame->vector != VMI_HYPERCALL_VECTOR)))
			return true;
	}
	return false;
}

static bool write_may_be_in_flight(const struct vcpu *v)
{
	return own_write_may_be_in_flight(v) || sibling_write_may_be_in_flight(v);
}

/* n page-table notifications were handled (all of them: an audit
 * between two entries of one drained queue would see the second one
 * written but not yet derived). */
static void count_ops(struct vcpu *v, uint32_t n)
{
	struct guest_audit *ga = &v->guest->audit;

	if (ga->opt.mode != AUDIT_EVERY)
		return;
	ga->since += n;
	if (ga->since >= ga->opt.every && !write_may_be_in_flight(v)) {
		ga->since = 0;
		audit_now(v, "a page-table notification", ~0u);
	}
}

void vcpu_mmu_audit_exit(struct vcpu *v)
{
	if (!write_may_be_in_flight(v))
		audit_now(v, "an exit", ~0u);
}

/*
 * audit_selftest=N: a planted hypervisor bug for the audit to find.  From
 * the Nth queued write on, the first one that changes a shadow entry is
 * not derived (as if the drain had lost it).
 */
static bool selftest_drops(struct vcpu *v, uint32_t gpa, uint32_t lin)
{
	struct guest_audit *ga = &v->guest->audit;

	if (!ga->opt.selftest || ga->selftest_done || ++ga->queued_seen < ga->opt.selftest ||
	    !shadow_entry_stale(&v->guest->shadow, gpa))
		return false;
	ga->selftest_done = true;
	kprintf("vmi-hv: audit_selftest: dropped queued page-table write %llu (entry at %08x, guest-physical %08x)\n",
		(unsigned long long)ga->queued_seen, lin, gpa);
	return true;
}

static void check(struct vcpu *v, enum vtlb_result r, const struct vtlb_outcome *out, const char *what)
{
	if (r == VTLB_VIOLATION)
		vcpu_stop(v, "%s breaks the rules: %s", what, out->why);
}

void vcpu_mmu_activate(struct vcpu *v)
{
	struct vtlb_outcome out;

	if (!v->paging.pg || !v->paging.wp) {
		/* Not a Linux guest (it activates with paging on): shadows
		 * need the guest's tables, so the vTLB goes on serving. */
		log_info("shadow paging: the guest activated VMI with paging or CR0.WP off; the virtual TLB stays");
		return;
	}
	check(v, shadow_load_cr3(&v->guest->shadow, v->index, v->cr3, &out), &out, "VMI activation");
	vtlb_flush(&v->vtlb);
	v->shadows_active = true;
	/* From now on every guest entry is notified or queued, so with the
	 * queue empty the shadows are exact and InvalPage / FlushTLB have
	 * nothing to do: the ROM answers them (vmi.S, fast_InvalPage).  The
	 * vTLB, a real TLB, needs them, hence not before. */
	if (v->guest->fastpaths)
		v->shared->features |= VMI_SHARED_F_INVAL;
	log_info("shadow paging: notification-driven from now on; page directory %08x adopted with %u shadow pages",
		 v->cr3, v->guest->shadow.stats.pages_in_use);
}

bool vcpu_mmu_cr3_acceptable(const struct vcpu *v, uint32_t cr3)
{
	return shadow_cr3_acceptable(&v->guest->shadow, cr3);
}

uint32_t vcpu_mmu_cr3(const struct vcpu *v)
{
	return v->shadows_active ? shadow_cr3(&v->guest->shadow, v->index) : vtlb_shadow_cr3(&v->vtlb);
}

struct guest_paging vcpu_guest_paging(const struct vcpu *v)
{
	return (struct guest_paging){
		.pg = (v->cr0 & X86_CR0_PG) != 0,
		.wp = (v->cr0 & X86_CR0_WP) != 0,
		.pse = (v->cr4 & X86_CR4_PSE) != 0,
		.cr3 = v->cr3,
	};
}

void vcpu_paging_changed(struct vcpu *v, bool force_flush)
{
	struct guest_paging gp = vcpu_guest_paging(v);
	struct vtlb_outcome out;

	if (v->shadows_active) {
		/* Shadows follow the guest's tables, not a TLB: a CR3 write
		 * is a lookup, and reloading the same CR3 changes nothing. */
		if (!gp.pg || !gp.wp)
			vcpu_stop(v, "paravirtual guest turned %s off (cr0=%08x): not supported",
				  gp.pg ? "CR0.WP" : "paging", v->cr0);
		if (gp.cr3 != v->paging.cr3) {
			check(v, shadow_load_cr3(&v->guest->shadow, v->index, gp.cr3, &out), &out, "a CR3 write");
			if (v->guest->audit.opt.mode == AUDIT_CR3) {
				v->paging = gp;
				audit_now(v, "a CR3 load", pte_frame(gp.cr3));
			}
		}
	} else if (force_flush || gp.pg != v->paging.pg || gp.wp != v->paging.wp ||
		   gp.pse != v->paging.pse || gp.cr3 != v->paging.cr3) {
		vtlb_flush(&v->vtlb);
	}
	v->paging = gp;
}

/*
 * A hardware #PF at cr2.  Whether the access was a user one is the error
 * code's U bit, not the frame's CPL: at CPL 3 the CPU also makes
 * supervisor accesses (pushing a frame onto the kernel stack through the
 * direct int $0x80 gate, vcpu_syscall.c), which the guest's tables must
 * allow as the kernel's.  The walk, the fill and the error code a guest
 * #PF carries all follow it.
 */
void vcpu_mmu_fault(struct vcpu *v, uint32_t cr2, uint32_t error, unsigned cpl)
{
	const unsigned access = (error & X86_PF_U) ? 3 : 1;
	struct vtlb_outcome out;
	enum vtlb_result r;

	r = v->shadows_active ?
		shadow_fault(&v->guest->shadow, v->index, &v->paging, cr2, error, access, &out) :
		vtlb_fault(&v->vtlb, &v->paging, cr2, error, access, &out);

	switch (r) {
	case VTLB_FILLED:
		v->stats.hidden_faults++;
		return;
	case VTLB_GUEST_FAULT:
		v->stats.guest_page_faults++;
		v->cr2 = out.cr2;
		vcpu_deliver(v, X86_VEC_PF, true, out.guest_error, 0);
		return;
	case VTLB_VIOLATION:
		vcpu_stop(v, "page fault at %08x (error %x) breaks the rules: %s",
			  cr2, error, out.why);
	}
}

void vcpu_mmu_invlpg(struct vcpu *v, uint32_t lin)
{
	if (v->shadows_active) {
		shadow_invlpg(&v->guest->shadow, v->index, lin);
		count_ops(v, 1);
	} else
		vtlb_invlpg(&v->vtlb, lin);
}

void vcpu_mmu_flush(struct vcpu *v)
{
	if (v->shadows_active)
		v->stats.tlb_flushes_ignored++;	/* shadows are kept coherent by SetPxE */
	else
		vtlb_flush(&v->vtlb);
}

/* The guest's VMI call op changed the page-table entry at gpa. */
static void entry_written_at(struct vcpu *v, uint32_t gpa, enum shadow_op op)
{
	struct vtlb_outcome out;

	if (!v->shadows_active)
		return;
	if (auditing(v))
		note(v, page_frame(gpa), op, call_site(v, 1));
	check(v, shadow_entry_written(&v->guest->shadow, gpa, &out), &out, "a page-table entry write");
	count_ops(v, 1);
}

/* The same for the entry at lin, written the long way. */
static void entry_written(struct vcpu *v, uint32_t lin, enum shadow_op op)
{
	struct vtlb_outcome out;
	uint32_t gpa;

	if (!v->shadows_active)
		return;
	/* The caller has just written lin, so it translates. */
	if (vtlb_translate(&v->vtlb, &v->paging, lin, false, 1, &gpa, &out) != VTLB_FILLED)
		vcpu_stop(v, "page-table entry at %08x no longer translates", lin);
	entry_written_at(v, gpa, op);
}

void vcpu_mmu_entry_written(struct vcpu *v, uint32_t lin)
{
	entry_written(v, lin, SHADOW_OP_SET_PXE);
}

/*
 * VMI SetPxE, GetPxE, SwapPxE (returns the old entry) and
 * TestAndSetPxEBit/TestAndClearPxEBit (returns the bit before): the
 * entry at guest-linear lin, reached through the guest's own mapping.
 * The address is translated once, with the access the call makes; only
 * an entry that crosses a page (never a real one) goes the long way.
 */
static uint32_t update_pxe(struct vcpu *v, uint32_t lin, uint32_t set, uint32_t clear,
			   bool replace, enum shadow_op op)
{
	uint32_t gpa, old, val;

	if (vcpu_call_entry(v, lin, true, &gpa)) {
		old = vcpu_entry_read(v, gpa);
		val = replace ? set : (old | set) & ~clear;
		vcpu_entry_write(v, gpa, val);
		entry_written_at(v, gpa, op);
		return old;
	}
	vcpu_call_read(v, lin, &old, 4, "a page-table entry");
	val = replace ? set : (old | set) & ~clear;
	vcpu_call_write(v, lin, &val, 4, "a page-table entry");
	entry_written(v, lin, op);
	return old;
}

void vcpu_mmu_set_pxe(struct vcpu *v, uint32_t lin, uint32_t val)
{
	uint32_t gpa;

	if (vcpu_call_entry(v, lin, true, &gpa)) {
		vcpu_entry_write(v, gpa, val);
		entry_written_at(v, gpa, SHADOW_OP_SET_PXE);
		return;
	}
	vcpu_call_write(v, lin, &val, 4, "a page-table entry");
	entry_written(v, lin, SHADOW_OP_SET_PXE);
}

uint32_t vcpu_mmu_get_pxe(struct vcpu *v, uint32_t lin)
{
	uint32_t e;

	vcpu_call_read(v, lin, &e, 4, "a page-table entry");
	return e;
}

uint32_t vcpu_mmu_swap_pxe(struct vcpu *v, uint32_t lin, uint32_t val)
{
	return update_pxe(v, lin, val, 0, true, SHADOW_OP_SWAP_PXE);
}

bool vcpu_mmu_change_pxe_bit(struct vcpu *v, uint32_t lin, unsigned bit, bool set)
{
	uint32_t mask = 1u << (bit & 31);

	return (update_pxe(v, lin, set ? mask : 0, set ? 0 : mask, false,
			   set ? SHADOW_OP_TEST_AND_SET : SHADOW_OP_TEST_AND_CLEAR) & mask) != 0;
}

/* The notification a queued entry stands for, by its kind bits
 * (VMI_SHARED_PXE_*). */
static const enum shadow_op queued_op[VMI_SHARED_PXE_KIND_MASK + 1] = {
	[VMI_SHARED_PXE_SET] = SHADOW_OP_QUEUED_SET_PXE,
	[VMI_SHARED_PXE_SWAP] = SHADOW_OP_QUEUED_SWAP_PXE,
	[VMI_SHARED_PXE_TEST_SET] = SHADOW_OP_QUEUED_TEST_AND_SET,
	[VMI_SHARED_PXE_TEST_CLEAR] = SHADOW_OP_QUEUED_TEST_AND_CLEAR,
};

/*
 * AllocatePage(ppn, flags, orig, base, count).  A directory's build stops
 * where this exit's work reaches EXIT_WORK (shadow_announce_from): false
 * then, and the call is to be made again, which goes on from that PDE
 * (pd_build_*); true when done.
 */
static bool announce(struct vcpu *v, uint32_t ppn, uint32_t flags, uint32_t orig,
		     uint32_t base, uint32_t count, uint32_t eip)
{
	struct vtlb_outcome out;
	enum shadow_kind kind;
	uint32_t next;

	/* API 13.0 has no other flags for a non-PAE guest (PAE, PDP and
	 * PML4 belong to paging modes we do not run). */
	if (flags == VMI_PAGE_PT)
		kind = SHADOW_PT;
	else if (flags == VMI_PAGE_PD)
		kind = SHADOW_PD;
	else
		vcpu_stop(v, "AllocatePage(%x, flags %x): a non-PAE guest announces a page table (%x) or a page directory (%x)",
			  ppn, flags, VMI_PAGE_PT, VMI_PAGE_PD);
	next = kind == SHADOW_PD && v->pd_build_gfn == ppn ? v->pd_build_next : 0;
	check(v, shadow_announce_from(&v->guest->shadow, ppn, kind, orig, base, count, &next, &out), &out,
	      "AllocatePage");
	if (next) {
		v->pd_build_gfn = ppn;
		v->pd_build_next = next;
		return false;
	}
	if (v->pd_build_gfn == ppn)
		v->pd_build_next = 0;
	note(v, ppn, SHADOW_OP_ALLOCATE, eip);
	return true;
}

static void release(struct vcpu *v, uint32_t ppn, uint32_t eip)
{
	struct vtlb_outcome out;

	note(v, ppn, SHADOW_OP_RELEASE, eip);
	check(v, shadow_release(&v->guest->shadow, ppn, &out), &out, "ReleasePage");
}

/* Argument words of VMI call n (the definition's word count). */
static uint32_t call_words(uint32_t n)
{
	switch (n) {
#define V(num, name, kind, ret, words, sw) case num: return words;
	VMI_CALL_LIST(V)
#undef V
	default: return 0;
	}
}

/* Queue entry i is a queued call (VMI_SHARED_PXE_CALL | call << 2, vmi.S
 * pxe_queue_call), not an entry's address; *call its number. */
static bool queued_call(uint32_t word, uint32_t *call)
{
	if ((word & ~(uint32_t)0xffc) != VMI_SHARED_PXE_CALL)
		return false;
	*call = (word & 0xffc) >> 2;
	return true;
}

/* Releases in one queue, by position: an entry written in a table that
 * the same queue releases later is not derived (below). */
struct queued_releases {
	uint32_t n;
	uint32_t at[VMI_SHARED_PXE_QUEUE_LEN / 3 + 1], ppn[VMI_SHARED_PXE_QUEUE_LEN / 3 + 1];
};

static bool released_after(const struct queued_releases *r, uint32_t i, uint32_t gfn)
{
	for (uint32_t k = 0; k < r->n; k++)
		if (r->at[k] > i && r->ppn[k] == gfn)
			return true;
	return false;
}

/*
 * One queued call at entry i of n (AllocatePage and ReleasePage, queued by
 * the ROM with F_PTLIFE): checked like the hypercall, applied in its place
 * among the entries.  Returns the entries it took, 0 if it is not done (a
 * directory's build cut by the work limit: it stays at the queue's head).
 */
static uint32_t drain_call(struct vcpu *v, const struct vmi_shared_page *sh, uint32_t i, uint32_t n,
			   uint32_t call)
{
	const uint32_t *a = &sh->pxe_queue[i + 1];
	uint32_t words = call_words(call);

	if (call != VMI_CALL_AllocatePage && call != VMI_CALL_ReleasePage)
		vcpu_stop(v, "shared page: queued entry %u of %u is VMI call %u, which is not queued", i, n, call);
	if (words >= n - i)
		vcpu_stop(v, "shared page: queued %s at entry %u of %u is cut short (%u argument words)",
			  vmi_call_name(call), i, n, words);
	if (v->shadows_active && call == VMI_CALL_AllocatePage &&
	    !announce(v, a[0], a[1], a[2], a[3], a[4], sh->pxe_site[i]))
		return 0;
	if (v->shadows_active && call == VMI_CALL_ReleasePage)
		release(v, a[0], sh->pxe_site[i]);
	v->stats.pxe_calls[call == VMI_CALL_AllocatePage ? 0 : 1]++;
	return 1 + words;
}

/* The first `done` words of the queue applied: the rest to its front, for
 * the next exit.  The ROM appends with cmpxchg on the count it read, so
 * an exit that changed the count makes it append again at the new one
 * (vmi.S, pxe_queue_and_return); one that applied nothing leaves the
 * queue as it was. */
static void queue_keep_rest(struct vmi_shared_page *sh, uint32_t done, uint32_t n)
{
	for (uint32_t i = done; i < n; i++) {	/* to the front: forward is safe */
		sh->pxe_queue[i - done] = sh->pxe_queue[i];
		sh->pxe_site[i - done] = sh->pxe_site[i];
	}
	sh->pxe_count = n - done;
}

/* A queued entry write (not a call) at entry i of n, applied. */
static void drain_entry(struct vcpu *v, const struct vmi_shared_page *sh, uint32_t i, uint32_t n,
			const struct queued_releases *rel)
{
	uint32_t kind = sh->pxe_queue[i] & VMI_SHARED_PXE_KIND_MASK;
	uint32_t lin = sh->pxe_queue[i] & ~(uint32_t)VMI_SHARED_PXE_KIND_MASK, gpa;
	struct vtlb_outcome out;

	v->stats.pxe_by_kind[kind]++;
	/* The ROM wrote the entry through this address, with the guest's
	 * mapping, before queueing it. */
	if (vtlb_translate(&v->vtlb, &v->paging, lin, false, 1, &gpa, &out) != VTLB_FILLED)
		vcpu_stop(v, "shared page: queued page-table entry %u of %u at %08x does not translate",
			  i, n, lin);
	if (!v->shadows_active || released_after(rel, i, page_frame(gpa)))
		return;
	note(v, page_frame(gpa), queued_op[kind], sh->pxe_site[i]);
	if (selftest_drops(v, gpa, lin))
		return;
	check(v, shadow_entry_written(&v->guest->shadow, gpa, &out), &out, "a queued page-table entry write");
}

/*
 * The ROM's SetPxE/SwapPxE/TestAndSet/ClearPxEBit with F_PXE write the
 * entry themselves and queue its linear address (with the call in its
 * low bits) and the kernel's call site in the shared page; with F_PTLIFE
 * AllocatePage and ReleasePage join the same queue.  Run
 * at every exit before the exit is handled, so everything the hypervisor
 * does (fault handling, hypercalls, the audit) sees shadows that follow
 * the guest's tables exactly as if each call had been a hypercall, in
 * the order the guest made them.  One difference: an entry written in a
 * table that the queue releases later is not derived, since the release
 * drops that shadow anyway and the page may already hold other data.
 * Why all this may wait until the exit: docs/MEMORY.md, "The VMI shared page".
 */
/* The releases in the queue's first n words (released_after). */
static void find_releases(const struct vmi_shared_page *sh, uint32_t n, struct queued_releases *rel)
{
	uint32_t call;

	rel->n = 0;
	for (uint32_t i = 0; i < n; i++)
		if (queued_call(sh->pxe_queue[i], &call)) {
			if (call == VMI_CALL_ReleasePage && i + 1 < n && rel->n < ARRAY_SIZE(rel->at)) {
				rel->at[rel->n] = i;
				rel->ppn[rel->n++] = sh->pxe_queue[i + 1];
			}
			i += call_words(call);
		}
}

/*
 * ... and the exit's work bounded: once it reaches EXIT_WORK (entries
 * derived, zeroed or cleared, shadow_work_spent), the drain stops before
 * the next queued word, or inside a directory's build (drain_call), and
 * leaves the rest at the queue's front for the next exit (drain_left:
 * this exit's own handling waits, vcpu_mmu_defer_exit), so that one exit
 * cannot keep the guest's lock, and the CPU, for the builds of 74 queued
 * directories (docs/HV.md, "The work of one exit").
 */
void vcpu_mmu_drain(struct vcpu *v)
{
	struct vmi_shared_page *sh = v->shared;
	uint32_t n = *(volatile uint32_t *)&sh->pxe_count, call, entries = 0, i, took;
	struct queued_releases rel;	/* 1.2 KB: filled only as far as rel.n */

	if (!n)
		return;		/* most exits: before anything costs */
	if (n > VMI_SHARED_PXE_QUEUE_LEN)
		vcpu_stop(v, "shared page: pxe_count %u is larger than the queue (%u entries)",
			  n, VMI_SHARED_PXE_QUEUE_LEN);
	find_releases(sh, n, &rel);
	for (i = 0; i < n; i++) {
		if (i && shadow_work_spent(&v->guest->shadow))
			break;
		if (!queued_call(sh->pxe_queue[i], &call)) {
			drain_entry(v, sh, i, n, &rel);
			entries++;
		} else if ((took = drain_call(v, sh, i, n, call))) {
			i += took - 1;
		} else {
			break;
		}
	}
	if (i < n) {
		queue_keep_rest(sh, i, n);
		v->drain_left = true;
		v->stats.drains_split++;
	} else {
		sh->pxe_count = 0;
	}
	if (v->shadows_active)
		count_ops(v, i);
	v->stats.pxe_drained += entries;	/* the calls: pxe_calls */
	v->stats.pxe_drains++;
	if (n > v->stats.pxe_max_batch)
		v->stats.pxe_max_batch = n;
}

void vcpu_mmu_exit_begin(struct vcpu *v)
{
	v->drain_left = false;
	shadow_work_begin(&v->guest->shadow, EXIT_WORK);
}

/*
 * The drain left part of the queue: an exit that would need the shadows
 * to follow the guest's tables (a page fault, an emulated instruction, a
 * VMI call) is not handled now; the guest makes it again (a fault's
 * instruction runs again, the int $0x82 of a call is re-executed, as for
 * the string I/O calls), and that exit drains on.  Interrupts and the
 * exceptions only given to the guest need no shadow: handled.
 */
bool vcpu_mmu_defer_exit(struct vcpu *v, struct trap_frame *f)
{
	if (!v->drain_left)
		return false;
	if (f->vector == VMI_HYPERCALL_VECTOR)
		f->eip -= 2;
	else if (f->vector != X86_VEC_PF && f->vector != 13 && f->vector != 6)
		return false;
	v->stats.exits++;
	v->stats.exits_by_vector[f->vector & 0xff]++;
	v->stats.exits_deferred++;
	return true;
}

void vcpu_mmu_announce(struct vcpu *v, uint32_t ppn, uint32_t flags, uint32_t orig,
		       uint32_t base, uint32_t count)
{
	if (!v->shadows_active)
		return;		/* the vTLB serves (paging was off at Init): nothing to track */
	if (!announce(v, ppn, flags, orig, base, count, auditing(v) ? call_site(v, 3) : 0)) {
		v->frame->eip -= 2;	/* the int $0x82 again: the build goes on */
		return;
	}
	count_ops(v, 1);
}

void vcpu_mmu_release(struct vcpu *v, uint32_t ppn)
{
	if (!v->shadows_active)
		return;
	release(v, ppn, auditing(v) ? call_site(v, 1) : 0);
	count_ops(v, 1);
}

void vcpu_mmu_reset_peaks(struct vcpu *v)
{
	v->vtlb.stats.shadow_pages_peak = v->vtlb.stats.shadow_pages_in_use;
	v->guest->shadow.stats.pages_peak = v->guest->shadow.stats.pages_in_use;
	kprintf("vmi-hv: peaks reset: shadow pages in use %u, vTLB shadow page tables %u; the longest exit from now on\n",
		v->guest->shadow.stats.pages_in_use, v->vtlb.stats.shadow_pages_in_use);
}

bool vcpu_mmu_audit(const struct vcpu *v, struct shadow_audit *a)
{
	if (!v->shadows_active)
		return false;
	shadow_audit(&v->guest->shadow, a);
	return true;
}

void vcpu_mmu_print_stats(const struct vcpu *v, const struct shadow_audit *a)
{
	const struct vtlb_stats *t = &v->vtlb.stats;
	const struct shadow_stats *s = &v->guest->shadow.stats;
	char mode[24];

	kprintf("vmi-hv: vTLB (before activation): %llu fills, %llu dirty-bit faults, %llu guest-visible faults, %llu flushes, %llu invlpg, %u shadow page tables in use (peak %u)\n",
		(unsigned long long)t->fills, (unsigned long long)t->dirty_faults,
		(unsigned long long)t->guest_faults, (unsigned long long)t->flushes,
		(unsigned long long)t->invlpgs, t->shadow_pages_in_use, t->shadow_pages_peak);
	kprintf("vmi-hv: guest page-table walks made again (another vCPU changed an entry under one): %llu\n",
		(unsigned long long)t->walks_again);
	guest_budget_print(v->guest);
	if (!v->shadows_active)
		return;
	kprintf("vmi-hv: shadow pages in use: %u (%u page directories; peak %u)\n",
		s->pages_in_use, s->pds_in_use, s->pages_peak);
	kprintf("vmi-hv: shadow paging: %llu announced, %llu released, %llu adopted, %llu PTE writes, %llu PDE writes, %llu writes to other pages, %llu fills (%llu dirty), %llu guest faults, %llu CR3 loads (%llu cached), %llu evictions (%llu unlinked loaded directories' tables), %llu invlpg, %llu TLB flushes not needed\n",
		(unsigned long long)s->announced, (unsigned long long)s->released,
		(unsigned long long)s->adopted, (unsigned long long)s->entry_writes,
		(unsigned long long)s->pde_writes, (unsigned long long)s->untracked_writes,
		(unsigned long long)s->fills, (unsigned long long)s->dirty_faults,
		(unsigned long long)s->guest_faults, (unsigned long long)s->cr3_loads,
		(unsigned long long)s->cr3_hits, (unsigned long long)s->evictions,
		(unsigned long long)s->unlinked, (unsigned long long)s->invlpgs, (unsigned long long)v->stats.tlb_flushes_ignored);
	kprintf("vmi-hv: hidden faults by cause: %llu fills: %llu set D, %llu set A, %llu found the entry derived by the drain at that exit, %llu other; %llu neighbours a prefetch could have filled; %llu old neighbours given A with a first touch\n",
		(unsigned long long)s->fills, (unsigned long long)s->dirty_faults,
		(unsigned long long)s->accessed_faults, (unsigned long long)s->drained_faults,
		(unsigned long long)(s->fills - s->dirty_faults - s->accessed_faults - s->drained_faults),
		(unsigned long long)s->prefetchable, (unsigned long long)s->accessed_prefetched);
	kprintf("vmi-hv: the most work one exit did on the shadows: %u entries (the limit %u); %llu directory builds cut by it, %llu drains; %llu exits waited for the rest of the queue\n",
		s->work_max, EXIT_WORK, (unsigned long long)s->builds_split,
		(unsigned long long)v->stats.drains_split, (unsigned long long)v->stats.exits_deferred);
	if (v->guest->strict_pt)
		kprintf("vmi-hv: strict_pt: announced page tables read-only; %llu writable entries made read-only at AllocatePage\n",
			(unsigned long long)s->strict_revoked);
	if (auditing(v))
		kprintf("vmi-hv: continuous audit (%s): %llu audits, %llu entries checked, %llu mismatches, %llu entries not filled yet\n",
			audit_mode_name(&v->guest->audit.opt, mode, sizeof(mode)), (unsigned long long)v->guest->audit.runs,
			(unsigned long long)v->guest->audit.entries,
			(unsigned long long)v->guest->audit.mismatches,
			(unsigned long long)v->guest->audit.unfilled);
	if (auditing(v) && v->guest->vcpus_at_once)
		kprintf("vmi-hv: continuous audit: %llu audits set aside (stale entries a sibling vCPU's queued write "
			"may explain; every shadow checked again at the next)\n",
			(unsigned long long)v->guest->audit.inconclusive);
	if (a)
		kprintf("vmi-hv: shadow audit: %u page directories, %u page tables, %u entries checked, %u mismatches%s%s\n",
			a->pds, a->pts, a->entries, a->mismatches, a->mismatches ? "; first: " : "", a->first);
}
