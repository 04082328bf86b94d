/*
 * vcpu_apstart.c - SetInitialAPState: a vCPU of the guest started at a
 * state the guest gives (docs/HV.md, "A guest of several vCPUs").
 *
 * The guest passes the linear address of an APState (vrom/abi, seed 002)
 * and the APIC ID of the vCPU to start, which is its index.  The state is
 * read from the caller's memory, checked field by field (ap_state.c), then
 * put into the waiting vCPU through the same checked paths as the
 * instructions that would set each part: mov to CR0/CR3/CR4, lgdt and
 * lidt (bases inside the guest's reach), segment loads, and last the
 * check every IRET frame gets before the switcher enters it.  Anything
 * wrong answers VMI_ERROR_INVALID and leaves the vCPU waiting, as it was:
 * the caller harms only itself.  The started vCPU becomes runnable; the
 * run loop gives it a CPU (one running vCPU per guest: docs/ARCHITECTURE.md,
 * "Who owns what on several CPUs").
 *
 * The target is never entered while it waits, and the caller's guest lock
 * is held: nobody else reads or writes its state meanwhile.
 */
#include "vcpu_apstart.h"
#include "ap_state.h"
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

/* The checked loads into t, in the order the CPU's own start-up would
 * make them; false with why on the first refusal. */
static bool load_state(struct vcpu *t, const APState *s, char *why, unsigned whylen)
{
	struct trap_frame *f = t->frame;
	struct emul_outcome out = { 0 };
	static const int data[4] = { SEG_DS, SEG_ES, SEG_FS, SEG_GS };
	const uint16_t sel[4] = { s->ds, s->es, s->fs, s->gs };

	if (vcpu_write_cr(t, 4, s->cr4, &out) != EMUL_OK || vcpu_write_cr(t, 3, s->cr3, &out) != EMUL_OK ||
	    vcpu_write_cr(t, 0, s->cr0, &out) != EMUL_OK) {
		fmt_snprintf(why, whylen, "control registers: %s", out.why[0] ? out.why : "refused");
		return false;
	}
	t->cr2 = s->cr2;
	/* Nothing loaded yet, as after INIT: no segment register keeps the
	 * descriptor it had (vcpu_load_gdt would keep the boot frame's flat
	 * CS for an EIP beyond the new one's limit). */
	f->cs = f->ss = f->ds = f->es = f->fs = f->gs = 0;
	if (vcpu_load_dtr(t, VCPU_GDTR, s->gdtr_base, s->gdtr_limit, &out) != EMUL_OK ||
	    vcpu_load_dtr(t, VCPU_IDTR, s->idtr_base, s->idtr_limit, &out) != EMUL_OK) {
		fmt_snprintf(why, whylen, "descriptor table: %s",
			     out.why[0] ? out.why : "base or limit outside the guest's reach");
		return false;
	}
	*f = (struct trap_frame){ .eax = s->eax, .ebx = s->ebx, .ecx = s->ecx, .edx = s->edx,
				  .esi = s->esi, .edi = s->edi, .ebp = s->ebp, .esp = s->esp,
				  .eip = s->eip, .cs = s->cs, .ss = s->ss,
				  .eflags = (s->eflags & ~X86_EFLAGS_IOPL) | X86_EFLAGS_IF };
	t->vif = s->eflags & X86_EFLAGS_IF;
	t->iopl = s->eflags & X86_EFLAGS_IOPL;
	if (vcpu_load_seg(t, f, SEG_SS, s->ss, &out) != EMUL_OK) {
		fmt_snprintf(why, whylen, "ss %04x: not a writable ring-1 data segment", s->ss);
		return false;
	}
	for (unsigned i = 0; i < 4; i++) {
		if (vcpu_load_seg(t, f, data[i], sel[i], &out) != EMUL_OK) {
			fmt_snprintf(why, whylen, "data selector %04x not loadable", sel[i]);
			return false;
		}
	}
	return vcpu_check_frame(t, why, whylen);
}

uint32_t vcpu_set_initial_ap_state(struct vcpu *v, uint32_t lin, uint32_t apic_id)
{
	struct guest *g = v->guest;
	struct vcpu *t;
	APState s;
	uint32_t pf_error;
	char why[96];

	if (apic_id >= g->nr_vcpus)
		return refuse(v, apic_id, "no vCPU has that APIC ID");
	t = g->vcpus[apic_id];
	if (!t->awaiting_start)
		return refuse(v, apic_id, "that vCPU has started already");
	if (!vcpu_read_lin(v, lin, &s, sizeof(s), 1, &pf_error))
		return refuse(v, apic_id, "the APState is not readable guest memory");
	if (!ap_state_check(&s, why, sizeof(why)))
		return refuse(v, apic_id, why);
	/* After activation the AP loads a shadow directory of its own
	 * (docs/HV.md, "A guest of several vCPUs"): its CR3 must name a
	 * page of the guest that is not one of its page tables. */
	if (v->shadows_active && !vcpu_mmu_cr3_acceptable(v, s.cr3))
		return refuse(v, apic_id, "cr3 is not a page directory of the guest");
	if (!load_state(t, &s, why, sizeof(why))) {
		/* Back to waiting, its state as built; the scheduler's
		 * record of it (inside the vCPU) stays as it is. */
		struct sched_entity keep = t->sched;

		vcpu_restart(t);
		t->sched = keep;
		t->halted = true;
		return refuse(v, apic_id, why);
	}
	if (v->paravirtual) {
		t->paravirtual = true;
		vcpu_mmu_activate(t);
	}
	t->awaiting_start = false;
	t->wake_requested = true;
	g->wakes_requested++;
	t->start_tsc = v->start_tsc;
	log_info("guest %s: vCPU %u started by vCPU %u at %04x:%08x (SetInitialAPState)", g->name,
		 apic_id, v->index, s.cs, s.eip);
	return 0;
}
