/*
 * vcpu_exception.c - deliver an exception or interrupt through the
 * guest's own IDT, as the CPU would if the guest ran at CPL 0.
 *
 * The guest's IDT is where its lidt said (v->idtr); its gates name its
 * own code selectors, which are in our GDT (vcpu_desc.c).  From the guest
 * kernel (ring 1) we push eflags, cs, eip [, error] on its current stack;
 * from guest user space (ring 3) we first switch to the ring-0 stack in
 * the guest's TSS (ss0:esp0, from its ltr) and push ss, esp too.  The
 * pushed EFLAGS carries the virtual IF; an interrupt gate clears it; TF,
 * NT, RF and VM are cleared like the CPU does.
 *
 * If delivering faults (IDT limit, not-present gate, a guest stack that
 * is not mapped), the CPU raises a second exception; if that one is a
 * contributory or page fault on top of a contributory or page fault, a
 * double fault (#DF, vector 8, error 0); a fault while delivering #DF is a
 * triple fault, which on hardware resets the machine.  We stop the guest
 * with a diagnostic instead.
 */
#include "vcpu_state.h"
#include "guest_stop.h"
#include "vcpu_desc.h"
#include "vcpu_exception.h"
#include "vcpu_io.h"
#include "vcpu_mem.h"
#include "vcpu_ops.h"
#include "vcpu_shared.h"
#include "segments.h"
#include "console.h"
#include "stop.h"
#include "hvlib.h"
#include "exception_frame.h"
#include "guest_desc.h"
#include "vmi_abi.h"


struct delivery_fault {
	unsigned vector;
	uint32_t error;
	const char *what;
};

/* VMI UpdateKernelStack: the ring-0 stack for a delivery from ring 3,
 * in place of the guest TSS's. */
void vcpu_set_kernel_stack(struct vcpu *v, uint32_t ss, uint32_t esp)
{
	v->kernel_ss = ss;
	v->kernel_esp = esp;
}

static bool contributory(unsigned vector)
{
	return vector == X86_VEC_DE || (vector >= X86_VEC_TS && vector <= X86_VEC_GP);
}

/* A delivery that faults: what the CPU raises instead (the fault
 * constructor of every step below; always false). */
static bool delivery_fails(struct delivery_fault *df, unsigned vector, uint32_t error, const char *what)
{
	*df = (struct delivery_fault){ vector, error, what };
	return false;
}

/*
 * The gate for vector, read from the guest's IDT and checked in the CPU's
 * order (SDM, INT n): inside the limit and readable, a gate type at all
 * (task, 16- or 32-bit interrupt or trap), then the DPL of a software
 * interrupt, then present.  So int $8 from user space through the
 * guest's double-fault task gate is #GP, as natively.
 */
static bool read_gate(struct vcpu *v, unsigned vector, unsigned soft_len, struct gate *g,
		      struct delivery_fault *df)
{
	const unsigned cpl = v->frame->cs & 3;
	uint32_t raw[2], pf;

	if (vector * 8 + 7 > v->idtr.limit)
		return delivery_fails(df, X86_VEC_GP, idt_error(vector), "beyond the IDT limit");
	if (!vcpu_read_lin(v, v->idtr.base + vector * 8, raw, 8, 1, &pf)) {
		v->cr2 = v->last_fault_lin;
		return delivery_fails(df, X86_VEC_PF, pf, "IDT not mapped");
	}
	*g = gate_decode((uint64_t)raw[1] << 32 | raw[0]);
	if (!gate_is_gate(g->type))
		return delivery_fails(df, X86_VEC_GP, idt_error(vector), "not a gate");
	/* int n from user space needs a DPL 3 gate; the guest kernel's own
	 * int n (its CPL 0) may use any gate. */
	if (soft_len && cpl == 3 && g->dpl < 3)
		return delivery_fails(df, X86_VEC_GP, idt_error(vector),
				      "software interrupt through a privileged gate");
	if (!g->present)
		return delivery_fails(df, X86_VEC_NP, idt_error(vector), "gate not present");
	if (!gate_is_32bit(g->type))
		return delivery_fails(df, X86_VEC_GP, idt_error(vector),
				      g->type == GATE_TASK ? "task gate (not supported)" :
				      "not a 32-bit interrupt or trap gate");
	return true;
}

/*
 * The handler's code segment: present code in the guest's GDT, the
 * offset inside its limit.  v->gdt holds our own slots as the CPU has
 * them (our ring-0 code segment, our TSS, whose type has the code bit
 * too): to the guest they are empty, as is anything beyond its GDT's
 * limit.  Returns the CS the handler runs with (RPL 1, or 3 for a user
 * code segment, reachable only from ring 3) in *cs.
 */
static bool handler_segment(struct vcpu *v, const struct gate *g, uint32_t *cs,
			    struct delivery_fault *df)
{
	const unsigned cpl = v->frame->cs & 3, idx = g->sel >> 3;
	uint64_t cd;

	if ((g->sel & 4) || idx == 0 || idx >= HV_GDT_ENTRIES ||
	    ((uint32_t)g->sel | 7) > v->gdtr.limit || guest_desc_hv_slot(idx) ||
	    !(v->gdt[idx] & DESC_P) || !(v->gdt[idx] & DESC_S) ||
	    !(DESC_TYPE(v->gdt[idx]) & DESC_TYPE_CODE))
		return delivery_fails(df, X86_VEC_GP, g->sel & 0xfffc, "gate selector is not a present code segment");
	cd = v->gdt[idx];
	/* The CPU checks the handler's offset against the segment limit
	 * before it pushes anything. */
	if (g->offset > guest_desc_limit(cd))
		return delivery_fails(df, X86_VEC_GP, 0, "gate offset beyond the code segment limit");
	if (DESC_DPL(cd) != 3) {
		*cs = (g->sel & ~3u) | 1;
		return true;
	}
	/* A handler at the guest's user privilege: same as the caller's,
	 * only possible from ring 3. */
	if (cpl != 3)
		return delivery_fails(df, X86_VEC_GP, g->sel & 0xfffc, "gate to a user code segment");
	*cs = (g->sel & ~3u) | 3;
	return true;
}

/*
 * The stack a delivery from ring 3 switches to: VMI UpdateKernelStack's,
 * or the guest TSS's ring-0 one.  The CPU checks the new stack segment
 * before it pushes: a present writable data segment of the handler's
 * privilege (the guest's ring 0, our ring 1), else #TS(ss).  Unchecked,
 * a user segment here gave a frame the switcher cannot resume ("cannot
 * resume the guest: ss 0029 ...").
 */
static bool ring0_stack(struct vcpu *v, uint32_t *ss, uint32_t *esp, struct delivery_fault *df)
{
	uint32_t tss[3], pf;	/* link, esp0, ss0 */

	if (v->kernel_ss) {
		tss[1] = v->kernel_esp;
		tss[2] = v->kernel_ss;
	} else if (!v->tr || !vcpu_read_lin(v, v->tr_base, tss, sizeof(tss), 1, &pf)) {
		return delivery_fails(df, X86_VEC_TS, v->tr & 0xfffc, "no guest TSS for the ring-0 stack");
	}
	*esp = tss[1];
	*ss = (tss[2] & 0xfffc) | 1;
	if (!vcpu_selector_ok(v, (uint16_t)*ss, SEG_USE_STACK, 1))
		return delivery_fails(df, X86_VEC_TS, *ss & 0xfffc,
				      "ring-0 stack segment not a writable ring-0 data segment");
	return true;
}

/* One attempt; false with *df filled if delivering faults. */
static bool try_deliver(struct vcpu *v, unsigned vector, bool has_error, uint32_t error,
			unsigned soft_len, struct delivery_fault *df)
{
	struct trap_frame *f = v->frame;
	uint32_t stack[EXC_FRAME_MAX_WORDS], pf, new_cs, esp = f->esp, ss = f->ss;
	struct gate g;
	unsigned n;

	if (!read_gate(v, vector, soft_len, &g, df) || !handler_segment(v, &g, &new_cs, df))
		return false;
	/* From ring 3 to a ring-1 handler: the stack switches. */
	const bool switch_stack = (f->cs & 3) == 3 && (new_cs & 3) == 1;

	if (switch_stack && !ring0_stack(v, &ss, &esp, df))
		return false;
	n = exc_frame_build(&(struct exc_frame_in){
		.stack_switch = switch_stack, .ss = f->ss, .esp = f->esp,
		.eflags = vcpu_virtual_eflags(v, f->eflags), .cs = f->cs, .eip = f->eip + soft_len,
		.has_error = has_error, .error = error }, stack);
	esp -= n * 4;
	if (!vcpu_write_lin(v, vcpu_seg_base(v, (uint16_t)ss) + esp, stack, n * 4, 1, &pf)) {
		v->cr2 = v->last_fault_lin;
		return delivery_fails(df, X86_VEC_PF, pf, "guest stack not writable");
	}
	f->esp = esp;
	f->ss = ss;
	f->cs = new_cs;
	f->eip = g.offset;
	f->eflags &= ~(X86_EFLAGS_TF | X86_EFLAGS_NT | X86_EFLAGS_RF | X86_EFLAGS_VM);
	if (g.type == GATE_INT32)
		v->vif = false;
	if (vector < X86_NR_EXCEPTIONS)
		v->stats.reflected_by_vector[vector]++;
	log_debug("delivered vector %u (error %x) to guest handler %04x:%08x", vector, error,
		  new_cs, g.offset);
	return true;
}

void vcpu_deliver(struct vcpu *v, unsigned vector, bool has_error, uint32_t error, unsigned soft_len)
{
	struct delivery_fault first, second;
	const char *more;

	if (rule_broken(&v->brk))
		vcpu_stop(v, "%s", v->brk.why);
	if (try_deliver(v, vector, has_error, error, soft_len, &first))
		return;
	if (rule_broken(&v->brk))
		vcpu_stop(v, "%s", v->brk.why);
	/* A software interrupt is an instruction, not an exception: what
	 * its delivery raises is that instruction's fault, no double
	 * fault (the #GP of an int n from user space through a kernel
	 * gate is how Linux signals it). */
	if (soft_len) {
		vcpu_deliver(v, first.vector, true, first.error, 0);
		return;
	}
	more = guest_log_take(&v->guest->delivery_log, "failed deliveries");
	if (more)
		log_warn("guest: delivering vector %u failed (%s): raising %u%s", vector, first.what,
			 first.vector, more);
	if (vector == X86_VEC_DF)
		vcpu_stop(v, "triple fault: delivering the guest's double fault failed (%s)", first.what);
	/* Benign + anything, or page fault then contributory-only: the CPU
	 * delivers the second exception serially.  Otherwise #DF. */
	if ((contributory(vector) && contributory(first.vector)) ||
	    (vector == X86_VEC_PF && (first.vector == X86_VEC_PF || contributory(first.vector)))) {
		if (try_deliver(v, X86_VEC_DF, true, 0, 0, &second))
			return;
		vcpu_stop(v, "triple fault: vector %u (%s), then %u (%s), then the double fault (%s)",
			  vector, "delivery failed", first.vector, first.what, second.what);
	}
	if (try_deliver(v, first.vector, true, first.error, 0, &second))
		return;
	if (try_deliver(v, X86_VEC_DF, true, 0, 0, &second))
		return;
	vcpu_stop(v, "triple fault: vector %u, then %u (%s), then the double fault (%s)",
		  vector, first.vector, first.what, second.what);
}

/*
 * An iret of the frame at esp: eip, cs, eflags [, esp, ss for a return to
 * ring 3].  Anything but EMUL_OK leaves the frame as it was.  A selector
 * the CPU refuses is its #GP/#NP/#SS (EMUL_FAULT from vcpu_load_seg); an
 * eip beyond the new cs's limit is its #GP(0).  The IRET hypercall, and
 * the hypervisor finishing the ROM's own iret (vcpu_shared.c); both
 * report EMUL_FAULT to the guest through vcpu_iret_fault.
 */
enum emul_result vcpu_iret_frame(struct vcpu *v, struct trap_frame *f, uint32_t esp,
				 struct emul_outcome *out)
{
	uint32_t w[6];
	struct trap_frame nf = *f;
	enum emul_result r;

	vcpu_call_read(v, vcpu_seg_base(v, f->ss) + esp, &w[1], 3 * 4, "the IRET frame");
	nf.eip = w[1];
	nf.eflags = w[3];
	nf.esp = esp + 12;
	if ((w[2] & 3) == 3) {
		vcpu_call_read(v, vcpu_seg_base(v, f->ss) + esp + 12, &w[4], 8, "the IRET frame");
		nf.esp = w[4];
		r = vcpu_load_seg(v, &nf, SEG_CS_RETURN, (uint16_t)w[2], out);
		if (r == EMUL_OK)
			r = vcpu_load_seg(v, &nf, SEG_SS, (uint16_t)w[5], out);
	} else {
		r = vcpu_load_seg(v, &nf, SEG_CS_RETURN, (uint16_t)w[2], out);
	}
	if (r != EMUL_OK)
		return r;
	if (!vcpu_eip_in_cs(v, (uint16_t)nf.cs, nf.eip)) {
		rule_break_note(&out->brk, "eip %08x is beyond the limit %08x of cs %04x (#GP)",
			     nf.eip, vcpu_cs_limit(v, (uint16_t)nf.cs), nf.cs & 0xffff);
		out->vector = X86_VEC_GP;
		out->has_error = true;
		out->error = 0;
		return EMUL_FAULT;
	}
	v->vif = (w[3] & X86_EFLAGS_IF) != 0;
	*f = nf;
	return EMUL_OK;
}

/*
 * A faulting IRET, as docs/VROM.md ("A faulting IRET") defines it: the
 * exception the CPU's iret raises, delivered through the guest's IDT
 * from its CPL 0 as if the IRET slot were the iret instruction: the
 * frame back on top of the stack (what the slot was entered with), eip
 * the slot's, cs, ss and every other register the caller's, and the
 * caller's virtual IF (set by the caller of this).  The guest's exception
 * table covers the slot (its iret-error path, as for .Lirq_return
 * natively).  Nothing here trusts the frame: the delivery checks the
 * guest's IDT and stack like any other.
 */
void vcpu_iret_fault(struct vcpu *v, struct trap_frame *f, uint32_t frame_esp, uint32_t eip,
		     const struct emul_outcome *out)
{
	log_debug("guest IRET refused (vector %u, error %x): reported at %04x:%08x", out->vector,
		  out->error, f->cs & 0xffff, eip);
	f->esp = frame_esp;
	f->eip = eip;
	if (out->vector == X86_VEC_PF)
		v->cr2 = out->cr2;
	vcpu_deliver(v, out->vector, out->has_error, out->error, 0);
}

/*
 * Where a faulting IRET hypercall is reported: the IRET slot of the ROM
 * copy the int $0x82 (2 bytes, before eip) belongs to, whichever place
 * in that copy made it (the slot, or the ROM's fast IRET falling back);
 * from anywhere else, the int $0x82 itself.
 */
static uint32_t iret_fault_eip(struct vcpu *v, const struct trap_frame *f)
{
	uint32_t int_eip = f->eip - 2, rom_off;

	if (vcpu_rom_offset(v, vcpu_seg_base(v, (uint16_t)f->cs) + int_eip, &rom_off))
		return int_eip - rom_off + VMI_CALL_IRET * VROM_CALL_LEN;
	return int_eip;
}

/* VMI IRET: the stack holds the guest's edi (the ROM's scratch
 * register), then the iret frame.  A frame the iret refuses is reported
 * to the guest with edi restored and the frame on top. */
enum emul_result vcpu_iret(struct vcpu *v, struct trap_frame *f, struct emul_outcome *out)
{
	uint32_t edi;
	enum emul_result r;

	vcpu_call_read(v, vcpu_seg_base(v, f->ss) + f->esp, &edi, 4, "the IRET frame");
	r = vcpu_iret_frame(v, f, f->esp + 4, out);
	if (r == EMUL_FAULT) {
		v->stats.iret_faults_hc++;
		f->edi = edi;
		vcpu_iret_fault(v, f, f->esp + 4, iret_fault_eip(v, f), out);
		return EMUL_OK;
	}
	if (r == EMUL_OK)
		f->edi = edi;
	return r;
}
