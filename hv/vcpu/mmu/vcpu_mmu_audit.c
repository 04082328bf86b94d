/*
 * vcpu_mmu_audit.c - the continuous shadow audit (audit= option): after
 * page-table notifications or exits, the shadows touched since the last
 * audit are checked, unless a write of the guest's may be in flight.
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

/* Off, each hook below is one test of the mode and the shadows note
 * nothing (shadow_track). */

bool vcpu_mmu_auditing(const struct vcpu *v)
{
	return v->guest->audit.opt.mode != AUDIT_OFF;
}

/* "exit", "every=16", ... into buf. */
const char *vcpu_mmu_audit_mode_name(const struct audit_options *o, char *buf, size_t len)
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
uint32_t vcpu_mmu_call_site(struct vcpu *v, unsigned saved_words)
{
	uint32_t ret, pf;

	if (!vcpu_read_lin(v, v->frame->esp + 4 * saved_words, &ret, 4, 1, &pf)) {
		rule_break_clear(&v->brk);	/* the guest did not make this access */
		return 0;
	}
	return ret;
}

void vcpu_mmu_note(struct vcpu *v, uint32_t gfn, enum shadow_op op, uint32_t eip)
{
	if (vcpu_mmu_auditing(v))
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
void vcpu_mmu_audit_now(struct vcpu *v, const char *when, uint32_t extra_gfn)
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
 * entry stale; it waits for a later exit (the pages stay touched).  So
 * it does while this vCPU's own queue still holds entries (an exit that
 * drains the other vCPUs' queues first: vcpu_mmu_drain).
 */
static bool own_write_may_be_in_flight(const struct vcpu *v)
{
	if (!(v->shared->features & VMI_SHARED_F_PXE))
		return v->drain_left;
	return v->drain_left || *(volatile uint32_t *)&v->shared->pxe_count ||
	       (!v->vif && v->frame->vector != VMI_HYPERCALL_VECTOR);
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
 * (vcpu_mmu_audit_now looks again before it reports).
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
void vcpu_mmu_count_ops(struct vcpu *v, uint32_t n)
{
	struct guest_audit *ga = &v->guest->audit;

	if (ga->opt.mode != AUDIT_EVERY)
		return;
	ga->since += n;
	if (ga->since >= ga->opt.every && !write_may_be_in_flight(v)) {
		ga->since = 0;
		vcpu_mmu_audit_now(v, "a page-table notification", ~0u);
	}
}

void vcpu_mmu_audit_exit(struct vcpu *v)
{
	if (!write_may_be_in_flight(v))
		vcpu_mmu_audit_now(v, "an exit", ~0u);
}
