/*
 * vcpu_pxe_queue.c - the page-table updates the guest queues in the shared
 * page without an exit (vmi.S: entry writes, AllocatePage, ReleasePage),
 * drained at the next exit under the exit's work limit; and the
 * AllocatePage/ReleasePage calls themselves.
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
	vcpu_mmu_check(v, shadow_announce_from(&v->guest->shadow, ppn, kind, orig, base, count, &next, &out), &out,
	      "AllocatePage");
	if (next) {
		v->pd_build_gfn = ppn;
		v->pd_build_next = next;
		return false;
	}
	if (v->pd_build_gfn == ppn)
		v->pd_build_next = 0;
	vcpu_mmu_note(v, ppn, SHADOW_OP_ALLOCATE, eip);
	return true;
}

static void release(struct vcpu *v, uint32_t ppn, uint32_t eip)
{
	struct vtlb_outcome out;

	vcpu_mmu_note(v, ppn, SHADOW_OP_RELEASE, eip);
	vcpu_mmu_check(v, shadow_release(&v->guest->shadow, ppn, &out), &out, "ReleasePage");
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
	vcpu_mmu_note(v, page_frame(gpa), queued_op[kind], sh->pxe_site[i]);
	if (selftest_drops(v, gpa, lin))
		return;
	vcpu_mmu_check(v, shadow_entry_written(&v->guest->shadow, gpa, &out), &out, "a queued page-table entry write");
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
 * leaves the rest at the queue's front for the next exit (true: the
 * caller sets drain_left, this exit's handling waits,
 * vcpu_mmu_defer_exit), so that one exit
 * cannot keep the guest's lock, and the CPU, for the builds of 74 queued
 * directories (docs/HV.md, "The work of one exit").  self: the vCPU whose
 * exit drains, v or another (drain_siblings); the audit's look for writes
 * still in flight is made from its side, since v, stopped by that exit,
 * has not taken its shared page's state yet (its virtual IF).
 */
static bool drain_queue(struct vcpu *self, struct vcpu *v)
{
	struct vmi_shared_page *sh = v->shared;
	uint32_t n = *(volatile uint32_t *)&sh->pxe_count, call, entries = 0, i, took;
	struct queued_releases rel;	/* 1.2 KB: filled only as far as rel.n */

	if (!n)
		return false;	/* most exits: before anything costs */
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
		v->stats.drains_split++;
	} else {
		sh->pxe_count = 0;
	}
	if (v->shadows_active)
		vcpu_mmu_count_ops(self, i);
	v->stats.pxe_drained += entries;	/* the calls: pxe_calls */
	v->stats.pxe_drains++;
	if (n > v->stats.pxe_max_batch)
		v->stats.pxe_max_batch = n;
	return i < n;
}

/* The queue's first n words hold an AllocatePage or ReleasePage (an
 * entry's address is never in the reserved top that marks a call). */
static bool holds_call(const struct vmi_shared_page *sh, uint32_t n)
{
	uint32_t call;

	for (uint32_t i = 0; i < n && i < VMI_SHARED_PXE_QUEUE_LEN; i++)
		if (queued_call(sh->pxe_queue[i], &call))
			return true;
	return false;
}

/* The exit loads a directory or flushes: it relies on the shadows of
 * every table, whichever vCPU queued a write to it. */
static bool relies_on_every_queue(const struct vcpu *v)
{
	const struct trap_frame *f = v->frame;

	return f->vector == VMI_HYPERCALL_VECTOR &&
	       (f->edi == VMI_CALL_SetCR3 || f->edi == VMI_CALL_FlushTLB || f->edi == VMI_CALL_InvalPage);
}

/*
 * The other vCPUs' queues, each drained as at its owner's exit.  The ROM
 * appends without a lock (vmi.S: an exit is all it expects between its
 * instructions), so an owner in guest mode on another CPU is first made
 * to leave it (vcpu_make_leave): then, until this CPU lets go of the
 * guest's lock, its queue is still.  A queue the exit's work limit cuts
 * makes this exit wait too (drain_left: made again, as for its own).
 */
static void drain_siblings(struct vcpu *v)
{
	struct guest *g = v->guest;

	for (unsigned i = 0; i < g->nr_vcpus; i++) {
		struct vcpu *w = g->vcpus[i];

		if (!w || w == v || w->awaiting_start || !(w->shared->features & VMI_SHARED_F_PXE) ||
		    !*(volatile uint32_t *)&w->shared->pxe_count)
			continue;
		if (vcpu_make_leave(w))
			g->sibling_kicks++;
		g->sibling_drains++;
		if (drain_queue(v, w))
			v->drain_left = true;
	}
}

/*
 * At every exit, v's own queue; first every other vCPU's too when the exit
 * relies on them (a CR3 load, a flush) or v's queue holds a lifecycle
 * call: the others' queued calls came first in the guest if v's depend on
 * them (a table released there, announced again here), since Linux flushes
 * between a table's release and its reuse.  docs/VROM.md, "Queues of
 * several vCPUs".
 */
void vcpu_mmu_drain(struct vcpu *v)
{
	uint32_t n = *(volatile uint32_t *)&v->shared->pxe_count;

	if (v->guest->nr_vcpus > 1 && (relies_on_every_queue(v) || holds_call(v->shared, n)))
		drain_siblings(v);
	if (drain_queue(v, v))
		v->drain_left = true;
}


void vcpu_mmu_announce(struct vcpu *v, uint32_t ppn, uint32_t flags, uint32_t orig,
		       uint32_t base, uint32_t count)
{
	if (!v->shadows_active)
		return;		/* the vTLB serves (paging was off at Init): nothing to track */
	if (!announce(v, ppn, flags, orig, base, count, vcpu_mmu_auditing(v) ? vcpu_mmu_call_site(v, 3) : 0)) {
		v->frame->eip -= 2;	/* the int $0x82 again: the build goes on */
		return;
	}
	vcpu_mmu_count_ops(v, 1);
}

void vcpu_mmu_release(struct vcpu *v, uint32_t ppn)
{
	if (!v->shadows_active)
		return;
	release(v, ppn, vcpu_mmu_auditing(v) ? vcpu_mmu_call_site(v, 1) : 0);
	vcpu_mmu_count_ops(v, 1);
}
