/*
 * hypercall.c - VMI calls: the ROM's "int $0x82" with the call number in
 * edi (docs/VROM.md, "Transport").
 *
 * Arguments are the caller's regparm(3) words: eax, edx, ecx, then stack
 * words 1 and 2 in ebx and esi.  Results in eax (edx:eax for 64-bit).  We
 * may change eax, edx, ecx and the arithmetic flags only (ebx too for
 * CPUID).
 *
 * Issue 7 adds the time device (valarm.c, rtc.c), Reboot and Shutdown.
 * Issue 6 scope: Init, which marks the vCPU paravirtual and logs the
 * activation, and the calls a guest makes right after it that map onto
 * machinery the pre-activation path has anyway (control registers,
 * descriptor tables, the virtual IF, page-table writes into guest memory
 * with the vTLB as the TLB, port I/O, CPUID, the TSC).  Anything else
 * stops the guest with "unimplemented VMI call N (Name)" and its
 * registers: never a silent wrong answer, never a hang.
 */
#include "vcpu.h"
#include "console.h"
#include "stop.h"
#include "io.h"
#include "hvlib.h"
#include "timer.h"
#include "vmi_abi.h"
#include "valarm.h"

extern uint64_t hv_start_tsc;

static void set64(struct trap_frame *f, uint64_t v)
{
	f->eax = (uint32_t)v;
	f->edx = (uint32_t)(v >> 32);
}

/* Guest memory for a call's pointer argument: a fault the guest cannot
 * take here (the call has no error path) stops it. */
static void guest_read(struct vcpu *v, uint32_t lin, void *buf, unsigned len, const char *what)
{
	uint32_t pf;

	if (!vcpu_read_lin(v, lin, buf, len, 1, &pf))
		vcpu_stop(v, "VMI call: cannot read %s at %08x (%s)", what, lin,
			  v->violation ? v->violation_why : "page fault");
}

static void guest_write(struct vcpu *v, uint32_t lin, const void *buf, unsigned len, const char *what)
{
	uint32_t pf;

	if (!vcpu_write_lin(v, lin, buf, len, 1, &pf))
		vcpu_stop(v, "VMI call: cannot write %s at %08x (%s)", what, lin,
			  v->violation ? v->violation_why : "page fault");
}

/* Linux writes its GDT through the per-CPU mapping and loads a read-only
 * fixmap alias of it: the same guest-physical bytes at two linear
 * addresses.  True if lin_a and lin_b reach the same guest-physical byte. */
static bool same_page(struct vcpu *v, uint32_t lin_a, uint32_t lin_b)
{
	struct vtlb_outcome out;
	uint32_t pa, pb;

	if (lin_a == lin_b)
		return true;
	if (vtlb_translate(&v->vtlb, &v->paging, lin_a, false, 1, &pa, &out) != VTLB_FILLED ||
	    vtlb_translate(&v->vtlb, &v->paging, lin_b, false, 1, &pb, &out) != VTLB_FILLED)
		return false;
	return pa == pb;
}

static void check(struct vcpu *v, enum emul_result r, struct emul_outcome *out, unsigned call)
{
	if (r == EMUL_OK)
		return;
	if (r == EMUL_FAULT)
		vcpu_stop(v, "VMI call %u (%s) raised exception %u (error %x), which the call cannot return",
			  call, vmi_call_name(call), out->vector, out->error);
	vcpu_stop(v, "VMI call %u (%s): %s", call, vmi_call_name(call), out->why);
}

static void activate(struct vcpu *v)
{
	uint64_t now = rdtsc();

	v->paravirtual = true;
	vcpu_mmu_activate(v);
	kprintf("vmi-hv: guest activated VMI after %llu emulated instructions, %llu shadow faults (%llu ms since hypervisor start, %llu ms since guest start)\n",
		(unsigned long long)v->stats.emulated,
		(unsigned long long)v->stats.hidden_faults,
		(unsigned long long)(tsc_to_us(now - hv_start_tsc) / 1000),
		(unsigned long long)(tsc_to_us(now - v->start_tsc) / 1000));
	vcpu_print_counters(v);
}

/* IRET: [esp] = the guest's edi, then eip, cs, eflags [, esp, ss]. */
static void vmi_iret(struct vcpu *v, struct trap_frame *f)
{
	uint32_t w[6];
	struct emul_outcome out;
	struct trap_frame nf = *f;
	enum emul_result r;

	guest_read(v, vcpu_seg_base(v, f->ss) + f->esp, w, 4 * 4, "the IRET frame");
	nf.edi = w[0];
	nf.eip = w[1];
	nf.eflags = w[3];
	nf.esp = f->esp + 16;
	memset(&out, 0, sizeof(out));
	if ((w[2] & 3) == 3) {
		guest_read(v, vcpu_seg_base(v, f->ss) + f->esp + 16, &w[4], 8, "the IRET frame");
		nf.esp = w[4];
		r = vcpu_load_seg(v, &nf, SEG_CS, (uint16_t)w[2], &out);
		if (r == EMUL_OK)
			r = vcpu_load_seg(v, &nf, SEG_SS, (uint16_t)w[5], &out);
	} else {
		r = vcpu_load_seg(v, &nf, SEG_CS, (uint16_t)w[2], &out);
	}
	check(v, r, &out, VMI_CALL_IRET);
	/* The CPU's iret raises #GP(0) here; the ROM call cannot return a
	 * fault to its caller, so the guest is stopped. */
	if (!vcpu_eip_in_cs(v, (uint16_t)nf.cs, nf.eip))
		vcpu_stop(v, "VMI call %u (IRET): eip %08x is beyond the limit %08x of cs %04x (#GP)",
			  VMI_CALL_IRET, nf.eip, vcpu_cs_limit(v, (uint16_t)nf.cs), nf.cs & 0xffff);
	v->vif = (w[3] & X86_EFLAGS_IF) != 0;
	*f = nf;
}

void vcpu_hypercall(struct vcpu *v)
{
	struct trap_frame *f = v->frame;
	unsigned call = f->edi;
	struct emul_outcome out;
	uint32_t regs[4], a = f->eax, d = f->edx, c = f->ecx;
	uint8_t dtr[6];

	memset(&out, 0, sizeof(out));
	v->last_call.made = true;
	v->last_call.call = call;
	v->last_call.eax = a; v->last_call.edx = d; v->last_call.ecx = c;
	v->last_call.ebx = f->ebx; v->last_call.esi = f->esi;
	v->stats.hypercalls++;
	if (call < ARRAY_SIZE(v->stats.hypercalls_by_call))
		v->stats.hypercalls_by_call[call]++;
	if ((f->cs & 3) != 1)
		vcpu_stop(v, "VMI hypercall from ring %u", f->cs & 3);

	switch (call) {
	case VMI_CALL_Init:
		activate(v);
		f->eax = 0;
		return;
	case VMI_CALL_CPUID:
		vcpu_cpuid(v, a, c, regs);
		f->eax = regs[0]; f->ebx = regs[1]; f->ecx = regs[2]; f->edx = regs[3];
		return;
	case VMI_CALL_RDMSR:
		log_debug("guest VMI RDMSR 0x%x: not virtualized, reads 0", a);
		set64(f, 0);
		return;
	case VMI_CALL_WRMSR:
		/* MSRs are not virtualized (RDMSR reads 0): the write is
		 * dropped and reported done, so the guest's feature-control
		 * lock and the like do not reach the real CPU. */
		log_debug("guest VMI WRMSR 0x%x <- %08x%08x: not virtualized, dropped", a, c, d);
		f->eax = 0;
		return;
	case VMI_CALL_SetGDT:
	case VMI_CALL_SetIDT:
		guest_read(v, a, dtr, 6, "a descriptor-table pointer");
		if (call == VMI_CALL_SetGDT) {
			check(v, vcpu_load_gdt(v, dtr[2] | dtr[3] << 8 | dtr[4] << 16 | (uint32_t)dtr[5] << 24,
					       (uint16_t)(dtr[0] | dtr[1] << 8), &out), &out, call);
		} else {
			v->idtr.limit = (uint16_t)(dtr[0] | dtr[1] << 8);
			v->idtr.base = dtr[2] | dtr[3] << 8 | dtr[4] << 16 | (uint32_t)dtr[5] << 24;
		}
		return;
	case VMI_CALL_GetGDT:
	case VMI_CALL_GetIDT: {
		struct desc_reg *r = call == VMI_CALL_GetGDT ? &v->gdtr : &v->idtr;

		dtr[0] = (uint8_t)r->limit; dtr[1] = (uint8_t)(r->limit >> 8);
		memcpy(&dtr[2], &r->base, 4);
		guest_write(v, a, dtr, 6, "a descriptor-table pointer");
		return;
	}
	case VMI_CALL_SetLDT:
		check(v, vcpu_load_ldtr(v, (uint16_t)a, &out), &out, call);
		return;
	case VMI_CALL_SetTR:
		check(v, vcpu_load_tr(v, (uint16_t)a, &out), &out, call);
		return;
	case VMI_CALL_GetLDT:
		f->eax = v->ldtr;
		return;
	case VMI_CALL_GetTR:
		f->eax = v->tr;
		return;
	case VMI_CALL_WriteGDTEntry:
	case VMI_CALL_WriteLDTEntry:
	case VMI_CALL_WriteIDTEntry: {
		uint32_t desc[2] = { c, f->ebx };

		guest_write(v, a + d * 8, desc, 8, "a descriptor");
		if (call == VMI_CALL_WriteGDTEntry && d * 8 + 7 <= v->gdtr.limit &&
		    same_page(v, a + d * 8, v->gdtr.base + d * 8))
			vcpu_gdt_entry_changed(v, d);
		return;
	}
	case VMI_CALL_UpdateKernelStack:
		v->kernel_ss = a;
		v->kernel_esp = d;
		return;
	case VMI_CALL_SetCR0: case VMI_CALL_SetCR2: case VMI_CALL_SetCR3: case VMI_CALL_SetCR4:
		check(v, vcpu_write_cr(v, call == VMI_CALL_SetCR0 ? 0 : (int)(call - VMI_CALL_SetCR0 + 1),
				       a, &out), &out, call);
		return;
	case VMI_CALL_GetCR0: f->eax = v->cr0; return;
	case VMI_CALL_GetCR2: f->eax = v->cr2; return;
	case VMI_CALL_GetCR3: f->eax = v->cr3; return;
	case VMI_CALL_GetCR4: f->eax = v->cr4; return;
	case VMI_CALL_INVD:
	case VMI_CALL_WBINVD:
	case VMI_CALL_Pause:
	case VMI_CALL_IODelay:
	case VMI_CALL_SetLinearMapping:	/* a hint; the shadows need none */
		return;
	case VMI_CALL_AllocatePage:
		vcpu_mmu_announce(v, a, d, c, f->ebx, f->esi);
		return;
	case VMI_CALL_ReleasePage:
		vcpu_mmu_release(v, a);
		return;
	case VMI_CALL_FlushDeferredCalls:
		f->eax = 0;
		return;
	case VMI_CALL_SetDR:
		/* Kept, not loaded: the guest's breakpoints would fire in
		 * the hypervisor too.  Debug registers are not virtualized. */
		if (a < 8)
			v->dr[a] = d;
		return;
	case VMI_CALL_GetDR:
		f->eax = a < 8 ? v->dr[a] : 0;
		return;
	case VMI_CALL_RDTSC:
		set64(f, rdtsc());
		return;
	case VMI_CALL_CLTS:
		v->cr0 &= ~X86_CR0_TS;
		return;
	case VMI_CALL_EnableInterrupts:
		v->vif = true;
		return;
	case VMI_CALL_DisableInterrupts:
		v->vif = false;
		return;
	case VMI_CALL_GetInterruptMask:
		f->eax = (f->eflags & ~X86_EFLAGS_IF) | (v->vif ? X86_EFLAGS_IF : 0);
		return;
	case VMI_CALL_SetInterruptMask:
		v->vif = (a & X86_EFLAGS_IF) != 0;
		return;
	case VMI_CALL_IRET:
		vmi_iret(v, f);
		return;
	case VMI_CALL_Halt:
		vcpu_halt(v);
		return;
	case VMI_CALL_SetPxE:
		guest_write(v, a, &d, 4, "a page-table entry");
		vcpu_mmu_entry_written(v, a);
		return;
	case VMI_CALL_GetPxE:
		guest_read(v, a, &f->eax, 4, "a page-table entry");
		return;
	case VMI_CALL_SwapPxE: {
		uint32_t old;

		guest_read(v, a, &old, 4, "a page-table entry");
		guest_write(v, a, &d, 4, "a page-table entry");
		vcpu_mmu_entry_written(v, a);
		f->eax = old;
		return;
	}
	case VMI_CALL_TestAndSetPxEBit:
	case VMI_CALL_TestAndClearPxEBit: {
		uint32_t pte, mask = 1u << (d & 31);

		guest_read(v, a, &pte, 4, "a page-table entry");
		f->eax = (pte & mask) != 0;
		pte = call == VMI_CALL_TestAndSetPxEBit ? pte | mask : pte & ~mask;
		guest_write(v, a, &pte, 4, "a page-table entry");
		vcpu_mmu_entry_written(v, a);
		return;
	}
	case VMI_CALL_InvalPage:
		vcpu_mmu_invlpg(v, a);
		return;
	case VMI_CALL_FlushTLB:
		vcpu_mmu_flush(v);
		return;
	case VMI_CALL_IN: case VMI_CALL_INB: case VMI_CALL_INW: {
		uint32_t val;

		vcpu_io_in(v, (uint16_t)a, call == VMI_CALL_IN ? 4 : call == VMI_CALL_INW ? 2 : 1, &val);
		f->eax = val;
		return;
	}
	case VMI_CALL_OUT: case VMI_CALL_OUTB: case VMI_CALL_OUTW:
		vcpu_io_out(v, (uint16_t)d, call == VMI_CALL_OUT ? 4 : call == VMI_CALL_OUTW ? 2 : 1, a);
		return;
	case VMI_CALL_GetCycleFrequency:
		set64(f, tsc_hz());
		return;
	case VMI_CALL_GetCycleCounter: {
		uint64_t val;

		if (!valarm_counter(a, &val))
			vcpu_stop(v, "GetCycleCounter: unknown counter %u", a);
		set64(f, val);
		return;
	}
	case VMI_CALL_SetAlarm: {
		const char *why = valarm_set(&v->guest->valarm, a, d | (uint64_t)c << 32,
					     f->ebx | (uint64_t)f->esi << 32);

		if (why)
			vcpu_stop(v, "%s (flags %x)", why, a);
		return;
	}
	case VMI_CALL_CancelAlarm: {
		const char *why;
		bool was = valarm_cancel(&v->guest->valarm, a, &why);

		if (why)
			vcpu_stop(v, "%s (flags %x)", why, a);
		f->eax = was;
		return;
	}
	case VMI_CALL_GetWallclockTime:
		set64(f, wallclock_ns());
		return;
	case VMI_CALL_Shutdown:
		vcpu_guest_shutdown(v, "the guest called Shutdown");
	case VMI_CALL_Reboot:
		vcpu_guest_reboot(v, "the guest called Reboot");
	case VMI_HC_REPORT_UNSUPPORTED:
		vcpu_stop(v, "unimplemented VMI call %u (%s): the ROM has no code for it",
			  a, a < NUM_VMI_CALLS ? vmi_call_name(a) : "out of range");
	}
	vcpu_stop(v, "unimplemented VMI call %u (%s)", call,
		  call < NUM_VMI_CALLS ? vmi_call_name(call) : "out of range");
}
