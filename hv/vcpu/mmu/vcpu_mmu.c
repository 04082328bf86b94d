/*
 * vcpu_mmu.c - which shadow paging serves the vCPU.
 *
 * Until the guest calls the ROM's Init it edits its page tables with plain
 * writes and flushes with CR3 writes and INVLPG, like on hardware: the
 * virtual TLB (mm/vtlb.c) serves, demand-filled and dropped on flushes.
 * From Init on the guest announces its tables and routes every entry
 * write through VMI calls, so the notification-driven shadows (mm/shadow_notify.c)
 * take over: cached per page directory across CR3 switches and freed on
 * ReleasePage.  The vTLB's walker stays in use in both modes, to translate
 * guest-linear addresses for the emulator and the hypercalls.
 * The continuous audit is vcpu_mmu_audit.c; the updates queued in the
 * shared page, and AllocatePage/ReleasePage, are vcpu_pxe_queue.c.
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
#include "vcpu_mmu_internal.h"

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

void vcpu_mmu_refused(struct vcpu *v, const struct vtlb_outcome *out, const char *what)
{
	vcpu_stop(v, "%s breaks the rules: %s", what, out->brk.why);
}

/* No other vCPU of v's guest has started. */
static bool alone(const struct vcpu *v)
{
	for (unsigned i = 0; i < v->guest->nr_vcpus; i++) {
		const struct vcpu *w = v->guest->vcpus[i];

		if (w && w != v && !w->awaiting_start)
			return false;
	}
	return true;
}

/*
 * A second vCPU starts: F_INVAL goes from every vCPU.  The ROM sees only
 * its own vCPU's queue, and an InvalPage or FlushTLB must also apply what
 * the others queued (a task that queued on one CPU flushes on another;
 * docs/VROM.md, "Queues of several vCPUs").
 */
void vcpu_mmu_vcpu_started(struct guest *g)
{
	for (unsigned i = 0; i < g->nr_vcpus; i++)
		if (g->vcpus[i])
			g->vcpus[i]->shared->features &= ~(uint32_t)VMI_SHARED_F_INVAL;
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
	vcpu_mmu_check(v, shadow_load_cr3(&v->guest->shadow, v->index, v->cr3, &out), &out, "VMI activation");
	vtlb_flush(&v->vtlb);
	v->shadows_active = true;
	/* From now on every guest entry is notified or queued, so with the
	 * queue empty the shadows are exact and InvalPage / FlushTLB have
	 * nothing to do: the ROM answers them (vmi.S, fast_InvalPage).  The
	 * vTLB, a real TLB, needs them, hence not before; and only while
	 * the guest runs on one vCPU (vcpu_mmu_vcpu_started). */
	if (v->guest->fastpaths && alone(v))
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
			vcpu_mmu_check(v, shadow_load_cr3(&v->guest->shadow, v->index, gp.cr3, &out), &out, "a CR3 write");
			if (v->guest->audit.opt.mode == AUDIT_CR3) {
				v->paging = gp;
				vcpu_mmu_audit_now(v, "a CR3 load", pte_frame(gp.cr3));
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
			  cr2, error, out.brk.why);
	}
}

void vcpu_mmu_invlpg(struct vcpu *v, uint32_t lin)
{
	if (v->shadows_active) {
		shadow_invlpg(&v->guest->shadow, v->index, lin);
		vcpu_mmu_count_ops(v, 1);
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
	if (vcpu_mmu_auditing(v))
		vcpu_mmu_note(v, page_frame(gpa), op, vcpu_mmu_call_site(v, 1));
	vcpu_mmu_check(v, shadow_entry_written(&v->guest->shadow, gpa, &out), &out, "a page-table entry write");
	vcpu_mmu_count_ops(v, 1);
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
	if (vcpu_mmu_auditing(v))
		kprintf("vmi-hv: continuous audit (%s): %llu audits, %llu entries checked, %llu mismatches, %llu entries not filled yet\n",
			vcpu_mmu_audit_mode_name(&v->guest->audit.opt, mode, sizeof(mode)), (unsigned long long)v->guest->audit.runs,
			(unsigned long long)v->guest->audit.entries,
			(unsigned long long)v->guest->audit.mismatches,
			(unsigned long long)v->guest->audit.unfilled);
	if (vcpu_mmu_auditing(v) && v->guest->vcpus_at_once)
		kprintf("vmi-hv: continuous audit: %llu audits set aside (stale entries a sibling vCPU's queued write "
			"may explain; every shadow checked again at the next)\n",
			(unsigned long long)v->guest->audit.inconclusive);
	if (a)
		kprintf("vmi-hv: shadow audit: %u page directories, %u page tables, %u entries checked, %u mismatches%s%s\n",
			a->pds, a->pts, a->entries, a->mismatches, a->mismatches ? "; first: " : "", a->first);
}
