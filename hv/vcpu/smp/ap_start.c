/*
 * ap_start.c - SetInitialAPState: a vCPU of the guest started at a
 * state the guest gives (docs/SMP.md, "A guest of several vCPUs").
 *
 * The guest passes the linear address of an APState (vrom/abi, seed 002)
 * and the APIC ID of the vCPU to start, which is its index.  The state is
 * read from the caller's memory, checked field by field (ap_start_state.c), then
 * put into the waiting vCPU through the same checked paths as the
 * instructions that would set each part: mov to CR0/CR3/CR4, lgdt and
 * lidt (bases inside the guest's reach), segment loads, and last the
 * check every IRET frame gets before the switcher enters it.  These run
 * on a copy of the vCPU (the guest's scratch vCPU), which becomes the
 * vCPU's state only when every check passed.  Anything wrong answers
 * VMI_ERROR_INVALID and leaves the vCPU waiting, untouched: the caller
 * harms only itself.  The started vCPU becomes runnable; the
 * run loop gives it a CPU (one running vCPU per guest: docs/ARCHITECTURE.md,
 * "Who owns what on several CPUs").
 *
 * The target is never entered while it waits, and the caller's guest lock
 * is held: nobody else reads or writes its state meanwhile.
 */
#include "ap_start.h"
#include "ap_start_state.h"
#include "vcpu_desc.h"
#include "vcpu_mem.h"
#include "vcpu_mmu.h"
#include "vcpu_ops.h"
#include "vcpu.h"
#include "console.h"
#include "hvlib.h"
#include "x86.h"

/* Refusals logged per guest; the rest are only counted. */
#define AP_REFUSALS_LOGGED 8

static uint32_t refuse(struct vcpu *v, uint32_t apic_id, const char *why)
{
	struct guest *g = v->guest;

	if (g->ap_refused++ < AP_REFUSALS_LOGGED)
		log_warn("guest %s: SetInitialAPState for APIC ID %u refused: %s", g->name, apic_id, why);
	return VMI_ERROR_INVALID;
}

/* The control registers, checked as mov to CR0/CR4 checks them, set in
 * the scratch copy x; its vTLB is the target's and is not touched here
 * (commit flushes it). */
static bool load_control(struct vcpu *x, const APState *s, char *why, unsigned whylen)
{
	struct emul_outcome out = { 0 };

	if (vcpu_check_cr(0, s->cr0, &out) != EMUL_OK || vcpu_check_cr(4, s->cr4, &out) != EMUL_OK) {
		fmt_snprintf(why, whylen, "control registers: %s", out.brk.why[0] ? out.brk.why : "refused");
		return false;
	}
	x->cr0 = s->cr0 | X86_CR0_ET;
	x->cr2 = s->cr2;
	x->cr3 = s->cr3;
	x->cr4 = s->cr4;
	x->paging = vcpu_guest_paging(x);
	return true;
}

/* The checked loads into x, a copy of the target whose frame is f, in the
 * order the CPU's own start-up would make them; false with why on the
 * first refusal. */
static bool load_state(struct vcpu *x, struct trap_frame *f, const APState *s, char *why, unsigned whylen)
{
	struct emul_outcome out = { 0 };
	static const int data[4] = { SEG_DS, SEG_ES, SEG_FS, SEG_GS };
	const uint16_t sel[4] = { s->ds, s->es, s->fs, s->gs };

	*f = *x->frame;
	x->frame = f;
	if (!load_control(x, s, why, whylen))
		return false;
	/* Nothing loaded yet, as after INIT: no segment register keeps the
	 * descriptor it had (vcpu_load_gdt would keep the boot frame's flat
	 * CS for an EIP beyond the new one's limit). */
	f->cs = f->ss = f->ds = f->es = f->fs = f->gs = 0;
	if (vcpu_load_dtr(x, VCPU_GDTR, s->gdtr_base, s->gdtr_limit, &out) != EMUL_OK ||
	    vcpu_load_dtr(x, VCPU_IDTR, s->idtr_base, s->idtr_limit, &out) != EMUL_OK) {
		fmt_snprintf(why, whylen, "descriptor table: %s",
			     out.brk.why[0] ? out.brk.why : "base or limit outside the guest's reach");
		return false;
	}
	/* No LDT, as the state says (ldtr 0): a parked vCPU's is dropped. */
	vcpu_load_ldtr(x, 0, &out);
	*f = (struct trap_frame){ .eax = s->eax, .ebx = s->ebx, .ecx = s->ecx, .edx = s->edx,
				  .esi = s->esi, .edi = s->edi, .ebp = s->ebp, .esp = s->esp,
				  .eip = s->eip, .cs = s->cs, .ss = s->ss,
				  .eflags = (s->eflags & ~X86_EFLAGS_IOPL) | X86_EFLAGS_IF };
	x->vif = s->eflags & X86_EFLAGS_IF;
	x->iopl = s->eflags & X86_EFLAGS_IOPL;
	if (vcpu_load_seg(x, f, SEG_SS, s->ss, &out) != EMUL_OK) {
		fmt_snprintf(why, whylen, "ss %04x: not a writable ring-1 data segment", s->ss);
		return false;
	}
	for (unsigned i = 0; i < 4; i++) {
		if (vcpu_load_seg(x, f, data[i], sel[i], &out) != EMUL_OK) {
			fmt_snprintf(why, whylen, "data selector %04x not loadable", sel[i]);
			return false;
		}
	}
	return vcpu_check_frame(x, why, whylen);
}

/* The scheduler's record ends struct vcpu: commit copies all that comes
 * before it, and never writes the record, which other CPUs read under
 * sched_lock alone. */
_Static_assert(sizeof(struct vcpu) - (offsetof(struct vcpu, sched) + sizeof(struct sched_entity)) <
	       _Alignof(struct vcpu), "struct vcpu's sched comes last");

/* The state x passed every check: it becomes the target's, whose vTLB
 * held the boot state's translations (a CR3 load flushes a TLB). */
static void commit(struct vcpu *t, struct vcpu *x)
{
	struct trap_frame *f = t->frame;

	*f = *x->frame;
	x->frame = f;
	memcpy(t, x, offsetof(struct vcpu, sched));
	vcpu_paging_changed(t, true);
}

uint32_t vcpu_set_initial_ap_state(struct vcpu *v, uint32_t lin, uint32_t apic_id)
{
	struct guest *g = v->guest;
	struct vcpu *t;
	APState s;
	struct trap_frame frame;
	uint32_t pf_error;
	char why[96];

	if (apic_id >= g->nr_vcpus)
		return refuse(v, apic_id, "no vCPU has that APIC ID");
	t = g->vcpus[apic_id];
	if (!t->awaiting_start)
		return refuse(v, apic_id, "that vCPU has started already");
	if (!vcpu_read_lin(v, lin, &s, sizeof(s), 1, &pf_error))
		return refuse(v, apic_id, "the APState is not readable guest memory");
	if (!ap_start_state_check(&s, why, sizeof(why)))
		return refuse(v, apic_id, why);
	/* After activation the AP loads a shadow directory of its own
	 * (docs/SMP.md, "A guest of several vCPUs"): its CR3 must name a
	 * page of the guest that is not one of its page tables. */
	if (v->shadows_active && !vcpu_mmu_cr3_acceptable(v, s.cr3))
		return refuse(v, apic_id, "cr3 is not a page directory of the guest");
	/* Loaded into the guest's scratch vCPU, a copy of the target: a
	 * refusal leaves the target as it was, every device of it whole. */
	memcpy(g->ap_scratch, t, offsetof(struct vcpu, sched));
	if (!load_state(g->ap_scratch, &frame, &s, why, sizeof(why)))
		return refuse(v, apic_id, why);
	commit(t, g->ap_scratch);
	/* A parked vCPU started again is active already: commit loaded
	 * its new CR3's shadow. */
	if (v->paravirtual && !t->paravirtual) {
		t->paravirtual = true;
		vcpu_mmu_activate(t);
	}
	t->awaiting_start = false;
	vcpu_mmu_vcpu_started(g);
	t->wake_requested = true;
	g->wakes_requested++;
	t->start_tsc = v->start_tsc;
	log_info("guest %s: vCPU %u started by vCPU %u at %04x:%08x (SetInitialAPState)", g->name,
		 apic_id, v->index, s.cs, s.eip);
	return 0;
}

