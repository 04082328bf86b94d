/*
 * hypercall.c - VMI calls: the ROM's "int $0x82" with the call number in
 * edi (docs/VROM.md, "Transport").
 *
 * Arguments are the caller's regparm(3) words: eax, edx, ecx, then stack
 * words 1 and 2 in ebx and esi.  Results in eax (edx:eax for 64-bit).  We
 * may change eax, edx, ecx and the arithmetic flags only (ebx too for
 * CPUID).
 *
 * A thin dispatcher, as lguest's do_hcall: each call is one call into
 * the file that owns the operation (descriptor tables: vcpu_desc.c;
 * control registers, MSRs, CPUID, debug registers: vcpu_ops.c; paging:
 * vcpu_mmu.c; port I/O: vcpu_io.c, the string forms through the
 * emulator's own loop; IRET and the kernel stack:
 * vcpu_exception.c; time: valarm.c, tsc.c, rtc.c; Halt: vcpu_ops.c;
 * Reboot and Shutdown: guest_stop.c), the same function the emulator
 * calls where the guest can also ask with an instruction.  What is here:
 * unpacking the arguments and packing the results, and what a failure
 * means, since a call cannot return a fault: the guest is stopped.  A
 * call of the table with no code, here or in the ROM, answers
 * "unsupported" (eax = -38, edx = 0xffffffff), as docs/VROM.md defines
 * it, so that the guest can probe it; a call number outside the table
 * stops the guest with "unimplemented VMI call N (out of range)".
 */
#include "vcpu_state.h"
#include "guest_report.h"
#include "guest_stop.h"
#include "vcpu_desc.h"
#include "vcpu_exception.h"
#include "vcpu_io.h"
#include "vcpu_mmu.h"
#include "vcpu_ops.h"
#include "vcpu_shared.h"
#include "console.h"
#include "stop.h"
#include "io.h"
#include "hvlib.h"
#include "timer.h"
#include "vmi_abi.h"
#include "ap_start.h"
#include "vcpu_lapic.h"
#include "valarm.h"

static void ret64(struct trap_frame *f, uint64_t v)
{
	f->eax = (uint32_t)v;
	f->edx = (uint32_t)(v >> 32);
}

static uint64_t arg64(uint32_t lo, uint32_t hi)
{
	return lo | (uint64_t)hi << 32;
}

/* An operation the call made did not succeed: the call cannot return
 * what the instruction would have raised, so the guest is stopped. */
static void must(struct vcpu *v, unsigned call, enum emul_result r, const struct emul_outcome *out)
{
	if (r == EMUL_OK)
		return;
	if (r == EMUL_FAULT)
		vcpu_stop(v, "VMI call %u (%s) raised exception %u (error %x), which the call cannot return",
			  call, vmi_call_name(call), out->vector, out->error);
	vcpu_stop(v, "VMI call %u (%s): %s", call, vmi_call_name(call), out->brk.why);
}

/*
 * Init: the guest is paravirtual from now on.  Once per vCPU (a vCPU
 * started by a paravirtual one is paravirtual already): a second Init
 * would change nothing but print the activation report again, so it is
 * refused with VMI_ERROR_INVALID, logged once per guest (whichever of its
 * vCPUs makes it: one line, not one per vCPU) and then only counted.
 * The activation report is the guest's, printed once; its shadow audit
 * runs before console_lock is taken.
 */
static uint32_t activate(struct vcpu *v)
{
	uint64_t now = rdtsc();
	struct console_hold hold;
	struct shadow_audit a;
	const struct shadow_audit *audit;

	if (v->paravirtual) {
		v->stats.init_refused++;
		if (!v->guest->init_refusal_logged)
			log_warn("guest %s: vCPU %u: VMI Init refused: VMI is active already (further refusals of this guest are only counted)",
				 v->guest->name, v->index);
		v->guest->init_refusal_logged = true;
		return VMI_ERROR_INVALID;
	}
	v->paravirtual = true;
	vcpu_mmu_activate(v);
	/* A vCPU started before its guest's first Init makes its own: the
	 * guest's report (its counters, a full audit, under console_lock)
	 * came with the first; up to 7 more would say nothing new. */
	for (unsigned j = 0; j < v->guest->nr_vcpus; j++) {
		if (j != v->index && v->guest->vcpus[j]->paravirtual) {
			log_info("guest %s: vCPU %u activated VMI too (the guest's activation report came with the first)",
				 v->guest->name, v->index);
			return 0;
		}
	}
	audit = vcpu_report_audit(v, &a);
	hold = console_enter();
	kprintf("vmi-hv: guest activated VMI after %llu emulated instructions, %llu shadow faults (%llu ms since hypervisor start, %llu ms since guest start)\n",
		(unsigned long long)v->stats.emulated,
		(unsigned long long)v->stats.hidden_faults,
		(unsigned long long)(tsc_to_us(now - tsc_at_start()) / 1000),
		(unsigned long long)(tsc_to_us(now - v->start_tsc) / 1000));
	vcpu_print_counters(v, audit);
	console_leave(hold);
	return 0;
}

static void call_cpuid(struct vcpu *v, struct trap_frame *f)
{
	uint32_t r[4];

	vcpu_cpuid(v, f->eax, f->ecx, r);
	f->eax = r[0]; f->ebx = r[1]; f->ecx = r[2]; f->edx = r[3];
}

/* An MSR the guest does not have: RDMSR and WRMSR answer unsupported
 * (edx:eax = 0xffffffff:-38; eax = -38), where the instruction would
 * raise #GP (vcpu_ops.c, the MSR policy; docs/VROM.md, "MSRs"). */
static uint64_t call_rdmsr(struct vcpu *v, uint32_t msr)
{
	uint64_t val;

	if (vcpu_rdmsr(v, msr, &val))
		return val;
	log_debug("guest VMI RDMSR 0x%x: no such MSR, answered unsupported", msr);
	return (uint64_t)0xffffffffu << 32 | VMI_ERROR_UNSUPPORTED;
}

static uint32_t call_wrmsr(struct vcpu *v, uint32_t msr, uint64_t val)
{
	if (vcpu_wrmsr(v, msr, val))
		return 0;
	log_debug("guest VMI WRMSR 0x%x <- %08x%08x: no such MSR, answered unsupported",
		  msr, (uint32_t)(val >> 32), (uint32_t)val);
	return VMI_ERROR_UNSUPPORTED;
}

/* The element size of IN/OUT and INS/OUTS in all their widths. */
static unsigned io_size(unsigned call)
{
	return call == VMI_CALL_IN || call == VMI_CALL_OUT ||
	       call == VMI_CALL_INS || call == VMI_CALL_OUTS ? 4 :
	       call == VMI_CALL_INW || call == VMI_CALL_OUTW ||
	       call == VMI_CALL_INSW || call == VMI_CALL_OUTSW ? 2 : 1;
}

/*
 * INS, INSB, INSW, OUTS, OUTSB, OUTSW(buf, port, count): count elements
 * of 4, 1, 2 bytes between the port and the guest-linear buffer, always
 * forward (the guest's DF is not looked at), as rep ins/outs with the
 * guest kernel's privilege (docs/VROM.md, "String port I/O").  The port
 * passes the IN/OUT rule first; the buffer goes through the emulator's
 * own string-I/O path (emul_string_io_batch: the guest's paging, never
 * beyond its memory).  At most EMUL_REP_BATCH elements per exit: the
 * rest is left in the registers (eax = buf, ecx = count, advanced) with
 * eip back on the int $0x82, which the guest executes again, as a CPU
 * leaves a rep string interrupted.  A #PF on the buffer is delivered to
 * the guest in the same state, at the int $0x82, so its handler can fix
 * the page and the call goes on, or the guest dies of it as it would of
 * its own rep ins/outs.  A buffer that breaks the hypervisor's rules
 * (the reserved top, outside its memory, the ROM) stops the guest.
 * Done: eax = 0.
 */
static void string_io(struct vcpu *v, struct trap_frame *f, unsigned call)
{
	bool out = call == VMI_CALL_OUTS || call == VMI_CALL_OUTSB || call == VMI_CALL_OUTSW;
	unsigned size = io_size(call);
	uint32_t buf = f->eax, port = f->edx, count = f->ecx, before = count;
	struct emul_ops ops;
	struct emul_outcome o;
	enum emul_result r;

	if (!count) {
		f->eax = 0;
		return;
	}
	if (port > 0xffff)
		vcpu_stop(v, "VMI call %u (%s): port 0x%x is not a 16-bit port (buffer %08x, count %u)",
			  call, vmi_call_name(call), port, buf, count);
	if (!vcpu_io_port_legal(port, size))
		vcpu_stop(v, "VMI call %u (%s): port %s 0x%x (%u bytes) is outside the legacy PC I/O range (0-0x%x): no device of this guest is there (buffer %08x, count %u)",
			  call, vmi_call_name(call), out ? "out" : "in", port, size, VCPU_LEGACY_IO_END - 1,
			  buf, count);
	memset(&o, 0, sizeof(o));
	vcpu_emul_ops(v, &ops);
	rule_break_clear(&v->brk);
	r = emul_string_io_batch(&ops, out, (uint16_t)port, size, &buf, &count, &o);
	v->stats.string_io_elements += before - count;
	f->eax = buf;
	f->ecx = count;
	if (r == EMUL_OK && !count) {
		f->eax = 0;
		return;
	}
	if (rule_broken(&v->brk))
		vcpu_stop(v, "VMI call %u (%s): buffer %08x (element at %08x, %u of %u left), port 0x%x: %s",
			  call, vmi_call_name(call), buf - (before - count) * size, buf, count, before,
			  port, v->brk.why);
	f->eip -= 2;			/* the int $0x82 again: the call goes on */
	if (r == EMUL_OK) {
		v->stats.string_io_restarts++;
		return;
	}
	if (r == EMUL_FAULT && o.vector == X86_VEC_PF) {
		v->stats.string_io_faults++;
		log_debug("VMI call %u (%s): page fault at %08x (error %x), %u elements left: delivered at the int $0x82",
			  call, vmi_call_name(call), o.cr2, o.error, count);
		v->cr2 = o.cr2;
		vcpu_deliver(v, o.vector, o.has_error, o.error, 0);
		return;
	}
	f->eip += 2;
	must(v, call, r, &o);
}

/* SetCR0..SetCR4, GetCR0..GetCR4: the register's number. */
static int cr_of(unsigned call, unsigned cr0_call)
{
	return call == cr0_call ? 0 : (int)(call - cr0_call + 1);
}


static uint32_t port_in(struct vcpu *v, uint32_t port, unsigned size)
{
	uint32_t val;

	vcpu_io_in(v, (uint16_t)port, size, &val);
	return val;
}

static uint64_t cycle_counter(struct vcpu *v, uint32_t which)
{
	uint64_t val;

	if (!valarm_counter(which, &v->sched, rdtsc(), &val))
		vcpu_stop(v, "GetCycleCounter: unknown counter %u", which);
	return val;
}

/*
 * A period or expiry nearer than VALARM_MIN_US is raised to it (docs/TIME.md,
 * "Rates a guest controls"), and counted for the end report.  A one-shot
 * expiry a few microseconds away is what Linux's clockevent asks for now
 * and then, so only a periodic alarm below the minimum, which no guest's
 * clock needs, is said in the log, once per guest: a line in the middle
 * of the user's typing for every Linux boot would be noise.
 */
static void set_alarm(struct vcpu *v, uint32_t flags, uint64_t expiry, uint64_t period)
{
	struct valarm *a = &v->valarm;
	bool raised;

	if (!valarm_set(a, flags, expiry, period, &v->sched, rdtsc(), &raised, &v->brk))
		vcpu_stop(v, "%s (flags %x)", v->brk.why, flags);
	if (raised && (flags & VMI_ALARM_IS_PERIODIC) && !a->period_raise_said) {
		a->period_raise_said = true;
		log_info("guest %s: SetAlarm (flags %x) period %llu cycles, expiry %llu: raised to the minimum, %u us",
			 v->guest->name, flags, (unsigned long long)period,
			 (unsigned long long)expiry, VALARM_MIN_US);
	}
}

static uint32_t cancel_alarm(struct vcpu *v, uint32_t flags)
{
	bool was;

	rule_break_clear(&v->brk);
	was = valarm_cancel(&v->valarm, flags, &v->brk);
	if (rule_broken(&v->brk))
		vcpu_stop(v, "%s (flags %x)", v->brk.why, flags);
	return was;
}

/*
 * SetIOPLMask(mask): the guest's IOPL is virtual (docs/HV.md, "The
 * virtual IOPL"): kept in the vCPU, shown by GetInterruptMask (here and
 * in the ROM's fast path, from the shared page), never put in the real
 * EFLAGS, and it grants nothing.  A mask with any bit outside IOPL is
 * refused: eax = -38 and the IOPL stays; taken: eax = 0.
 */
static uint32_t set_iopl_mask(struct vcpu *v, uint32_t mask)
{
	if (!iopl_mask_valid(mask)) {
		log_debug("guest VMI SetIOPLMask %08x: bits outside IOPL, refused", mask);
		return VMI_ERROR_UNSUPPORTED;
	}
	v->iopl = mask;
	return 0;
}

/*
 * GetWallclockTime and WallclockUpdated: the hypervisor's wall clock is
 * set once from the CMOS RTC at its start and then advances with the TSC
 * (rtc.c); it is never stepped.  So it has changed for a guest only
 * until the guest first reads it: WallclockUpdated answers 1 then (read
 * the clock), 0 from the first GetWallclockTime on, until the guest
 * starts again.
 */
static uint64_t read_wallclock(struct vcpu *v)
{
	__atomic_store_n(&v->guest->wallclock_read, true, __ATOMIC_RELAXED);
	return wallclock_ns();
}

static uint32_t wallclock_updated(struct vcpu *v)
{
	return !__atomic_load_n(&v->guest->wallclock_read, __ATOMIC_RELAXED);
}

/* The first unsupported answer to each call is logged, once a guest. */
static void log_unsupported_once(struct vcpu *v, uint32_t n, const char *why)
{
	struct guest *g = v->guest;

	if (g->unsupported_logged[n / 32] >> (n % 32) & 1)
		return;
	g->unsupported_logged[n / 32] |= 1u << (n % 32);
	log_info("guest %s: VMI call %u (%s) answered unsupported (%s)", g->name, n, vmi_call_name(n), why);
}

/*
 * The ROM's report of an unsupported call (docs/VROM.md, "Transport",
 * item 6): the slot has no code (reserved, or one of the PAE calls), or
 * vmi_refuse= made it so in this guest's copy.  Either way the stub goes
 * on and returns VMI_ERROR_UNSUPPORTED and 0xffffffff, as the ROM
 * defines it, so that a guest can probe the slot.  A report naming no
 * call of the table is not a slot's: false.
 */
static bool answer_unsupported_slot(struct vcpu *v, uint32_t n)
{
	if (n >= NUM_VMI_CALLS)
		return false;
	if (vmi_refused(&v->guest->refuse, n)) {
		v->stats.refused_answered++;
		log_unsupported_once(v, n, "vmi_refuse=");
	} else {
		v->stats.unsupported_answered++;
		log_unsupported_once(v, n, "the ROM has no code for it");
	}
	return true;
}

/*
 * A call of the table that reaches the hypervisor but has no code here
 * (SetPxELong and the other unsupported slots' numbers made straight
 * through int $0x82 instead of through their ROM slots) answers as an unsupported slot does: eax = -38, edx =
 * 0xffffffff.
 */
static bool answer_no_handler(struct vcpu *v, struct trap_frame *f, uint32_t n)
{
	if (n >= NUM_VMI_CALLS)
		return false;
	v->stats.unsupported_answered++;
	log_unsupported_once(v, n, "the hypervisor has no code for it");
	f->eax = VMI_ERROR_UNSUPPORTED;
	f->edx = 0xffffffffu;
	return true;
}

/* The diagnostics' "last VMI call" and the statistics. */
static void account(struct vcpu *v, const struct trap_frame *f, unsigned call)
{
	v->last_call.made = true;
	v->last_call.call = call;
	v->last_call.eax = f->eax; v->last_call.edx = f->edx; v->last_call.ecx = f->ecx;
	v->last_call.ebx = f->ebx; v->last_call.esi = f->esi;
	v->stats.hypercalls++;
	if (call < ARRAY_SIZE(v->stats.hypercalls_by_call))
		v->stats.hypercalls_by_call[call]++;
}

/* Arguments: eax, edx, ecx, then ebx and esi (a, d, c, b, s). */
/*
 * The VMI calls by family, each answering whether the call was its own.
 * a, d, c, b, s: the register arguments (eax, edx, ecx, ebx, esi; the ROM
 * slots load the stack words into the last two).
 */
#define ARGS(f) uint32_t a = (f)->eax, d = (f)->edx, c = (f)->ecx, b = (f)->ebx, s = (f)->esi; \
	(void)a; (void)d; (void)c; (void)b; (void)s

/* The VMI itself, and the hints that need nothing. */
static bool vmi_call(struct vcpu *v, struct trap_frame *f, unsigned call)
{
	switch (call) {
	case VMI_CALL_Init:		f->eax = activate(v); return true;
	case VMI_CALL_FlushDeferredCalls: f->eax = 0; return true;	/* drained at every exit (vcpu_mmu_drain) */
	case VMI_CALL_INVD:
	case VMI_CALL_WBINVD:
	case VMI_CALL_Pause:
	case VMI_CALL_IODelay:
	case VMI_CALL_SetLinearMapping:	/* a hint; the shadows need none */
		return true;
	}
	return false;
}

/* A control register written (SetCRn, CLTS): the one CPU-state call with
 * an outcome to check, so the others do not clear one (a rule-break
 * record) at every call. */
static void write_cr(struct vcpu *v, unsigned call, int n, uint32_t val)
{
	struct emul_outcome out = { 0 };

	must(v, call, vcpu_write_cr(v, n, val, &out), &out);
}

/* CPU state, the virtual interrupt flag and waiting: vcpu_ops.c. */
static bool cpu_call(struct vcpu *v, struct trap_frame *f, unsigned call)
{
	ARGS(f);

	switch (call) {
	case VMI_CALL_CPUID:		call_cpuid(v, f); return true;
	case VMI_CALL_RDMSR:		ret64(f, call_rdmsr(v, a)); return true;
	case VMI_CALL_WRMSR:		f->eax = call_wrmsr(v, a, arg64(d, c)); return true;
	case VMI_CALL_SetCR0: case VMI_CALL_SetCR2: case VMI_CALL_SetCR3: case VMI_CALL_SetCR4:
		write_cr(v, call, cr_of(call, VMI_CALL_SetCR0), a);
		return true;
	case VMI_CALL_GetCR0: case VMI_CALL_GetCR2: case VMI_CALL_GetCR3: case VMI_CALL_GetCR4:
		f->eax = vcpu_read_cr(v, cr_of(call, VMI_CALL_GetCR0));
		return true;
	case VMI_CALL_CLTS:
		write_cr(v, call, 0, v->cr0 & ~X86_CR0_TS);
		return true;
	case VMI_CALL_SetDR:		vcpu_write_dr(v, a, d); return true;
	case VMI_CALL_GetDR:		f->eax = vcpu_read_dr(v, a); return true;
	case VMI_CALL_RDTSC:		ret64(f, rdtsc()); return true;
	case VMI_CALL_EnableInterrupts:	v->vif = true; return true;
	case VMI_CALL_DisableInterrupts: v->vif = false; return true;
	case VMI_CALL_GetInterruptMask:	f->eax = guest_visible_eflags(f->eflags, v->vif, v->iopl); return true;
	case VMI_CALL_SetInterruptMask:	v->vif = (a & X86_EFLAGS_IF) != 0; return true;
	case VMI_CALL_SetIOPLMask:	f->eax = set_iopl_mask(v, a); return true;
	case VMI_CALL_RDPMC:		ret64(f, 0); return true;	/* a virtual zero: docs/VROM.md */
	case VMI_CALL_Halt:		vcpu_halt_call(v); return true;
	}
	return false;
}

/* The descriptor calls with an outcome to check (a load the CPU would
 * refuse, a faulting IRET); the others do not clear one at every call. */
static void checked_descriptor_call(struct vcpu *v, struct trap_frame *f, unsigned call)
{
	struct emul_outcome out = { 0 };
	enum emul_result r = EMUL_OK;

	switch (call) {
	case VMI_CALL_SetGDT:	r = vcpu_set_dtr_from(v, VCPU_GDTR, f->eax, &out); break;
	case VMI_CALL_SetIDT:	r = vcpu_set_dtr_from(v, VCPU_IDTR, f->eax, &out); break;
	case VMI_CALL_SetLDT:	r = vcpu_load_ldtr(v, (uint16_t)f->eax, &out); break;
	case VMI_CALL_SetTR:	r = vcpu_load_tr(v, (uint16_t)f->eax, &out); break;
	case VMI_CALL_IRET:	r = vcpu_iret(v, f, &out); break;
	}
	must(v, call, r, &out);
}

/* Descriptor tables (vcpu_desc.c), delivery and return (vcpu_exception.c). */
static bool descriptor_call(struct vcpu *v, struct trap_frame *f, unsigned call)
{
	ARGS(f);

	switch (call) {
	case VMI_CALL_SetGDT: case VMI_CALL_SetLDT: case VMI_CALL_SetTR: case VMI_CALL_IRET:
		checked_descriptor_call(v, f, call);
		return true;
	case VMI_CALL_SetIDT:
		checked_descriptor_call(v, f, call);
		vcpu_syscall_gate_refresh(v);
		return true;
	case VMI_CALL_GetGDT:		vcpu_store_dtr(v, VCPU_GDTR, a); return true;
	case VMI_CALL_GetIDT:		vcpu_store_dtr(v, VCPU_IDTR, a); return true;
	case VMI_CALL_GetLDT:		f->eax = v->ldtr; return true;
	case VMI_CALL_GetTR:		f->eax = v->tr; return true;
	case VMI_CALL_WriteGDTEntry:	vcpu_write_desc(v, true, a, d, c, b); return true;
	case VMI_CALL_WriteLDTEntry:	vcpu_write_desc(v, false, a, d, c, b);
					vcpu_ldt_entry_written(v, a, d); return true;
	case VMI_CALL_WriteIDTEntry:
		vcpu_write_desc(v, false, a, d, c, b);
		vcpu_syscall_gate_refresh(v);	/* the guest IDT's vector 0x80 may have changed */
		return true;
	case VMI_CALL_UpdateKernelStack: vcpu_set_kernel_stack(v, a, d); return true;
	}
	return false;
}

/* Paging: vcpu_mmu.c. */
static bool paging_call(struct vcpu *v, struct trap_frame *f, unsigned call)
{
	ARGS(f);

	switch (call) {
	case VMI_CALL_AllocatePage:	vcpu_mmu_announce(v, a, d, c, b, s); return true;
	case VMI_CALL_ReleasePage:	vcpu_mmu_release(v, a); return true;
	case VMI_CALL_SetPxE:		vcpu_mmu_set_pxe(v, a, d); return true;
	case VMI_CALL_GetPxE:		f->eax = vcpu_mmu_get_pxe(v, a); return true;
	case VMI_CALL_SwapPxE:		f->eax = vcpu_mmu_swap_pxe(v, a, d); return true;
	case VMI_CALL_TestAndSetPxEBit:	f->eax = vcpu_mmu_change_pxe_bit(v, a, d, true); return true;
	case VMI_CALL_TestAndClearPxEBit: f->eax = vcpu_mmu_change_pxe_bit(v, a, d, false); return true;
	case VMI_CALL_InvalPage:	vcpu_mmu_invlpg(v, a); return true;
	case VMI_CALL_FlushTLB:		vcpu_mmu_flush(v); return true;
	}
	return false;
}

/* Port I/O (vcpu_io.c) and time (tsc.c, valarm.c, rtc.c). */
static bool device_call(struct vcpu *v, struct trap_frame *f, unsigned call)
{
	ARGS(f);

	switch (call) {
	case VMI_CALL_IN: case VMI_CALL_INB: case VMI_CALL_INW:
		f->eax = port_in(v, a, io_size(call));
		return true;
	case VMI_CALL_OUT: case VMI_CALL_OUTB: case VMI_CALL_OUTW:
		vcpu_io_out(v, (uint16_t)d, io_size(call), a);
		return true;
	case VMI_CALL_INS: case VMI_CALL_INSB: case VMI_CALL_INSW:
	case VMI_CALL_OUTS: case VMI_CALL_OUTSB: case VMI_CALL_OUTSW:
		string_io(v, f, call);
		return true;
	case VMI_CALL_GetCycleFrequency: ret64(f, tsc_hz()); return true;
	case VMI_CALL_GetCycleCounter:	ret64(f, cycle_counter(v, a)); return true;
	case VMI_CALL_SetAlarm:		set_alarm(v, a, arg64(d, c), arg64(b, s)); return true;
	case VMI_CALL_CancelAlarm:	f->eax = cancel_alarm(v, a); return true;
	case VMI_CALL_GetWallclockTime:	ret64(f, read_wallclock(v)); return true;
	case VMI_CALL_WallclockUpdated:	f->eax = wallclock_updated(v); return true;
	case VMI_CALL_SetInitialAPState: f->eax = vcpu_set_initial_ap_state(v, a, d); return true;
	case VMI_CALL_APICRead:		f->eax = vcpu_apic_read(v, a); return true;
	case VMI_CALL_APICWrite:	f->eax = vcpu_apic_write(v, a, d); return true;
	}
	return false;
}

/*
 * Reboot(how): soft or hard, the guest starts again from its modules
 * either way (guest_restart.c); how is only reported, so any value will
 * do, and the log says which call it was.
 */
__attribute__((noreturn))
static void guest_called_reboot(struct vcpu *v, uint32_t how)
{
	char why[48];

	fmt_snprintf(why, sizeof(why), "the guest called Reboot (%s, how %u)",
		     how == VMI_REBOOT_HARD ? "hard" : how == VMI_REBOOT_SOFT ? "soft" : "unknown", how);
	vcpu_guest_reboot(v, why);
}

void vcpu_hypercall(struct vcpu *v)
{
	struct trap_frame *f = v->frame;
	unsigned call = f->edi;

	account(v, f, call);
	if ((f->cs & 3) != 1)
		vcpu_stop(v, "VMI hypercall from ring %u", f->cs & 3);
	/* The families are disjoint; the busiest (port I/O and alarms, then
	 * paging) are asked first. */
	if (device_call(v, f, call) || paging_call(v, f, call) || cpu_call(v, f, call) ||
	    descriptor_call(v, f, call) || vmi_call(v, f, call))
		return;
	/* The end of the guest: guest_stop.c. */
	switch (call) {
	case VMI_CALL_Shutdown:		vcpu_guest_shutdown(v, "the guest called Shutdown");
	case VMI_CALL_Reboot:		guest_called_reboot(v, f->eax);
	case VMI_HC_REPORT_UNSUPPORTED:
		if (answer_unsupported_slot(v, f->eax))
			return;
		vcpu_stop(v, "unsupported-call report for VMI call %u (out of range)", f->eax);
	}
	if (answer_no_handler(v, f, call))
		return;
	vcpu_stop(v, "unimplemented VMI call %u (out of range)", call);
}
