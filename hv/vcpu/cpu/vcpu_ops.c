/*
 * vcpu_ops.c - the emulator's view of the vCPU: guest memory (through
 * vcpu_mem.c), virtual control registers, CPUID and MSR filtering, the
 * virtual interrupt flag, hlt.
 *
 * The instruction emulator (hv/emul/) is pure: every effect it has on the
 * CPU or on memory goes through struct emul_ops, implemented here.
 */
#include "vcpu_state.h"
#include "valarm.h"
#include "guest_stop.h"
#include "vcpu_desc.h"
#include "vcpu_io.h"
#include "vcpu_mem.h"
#include "vcpu_mmu.h"
#include "vcpu_ops.h"
#include "debug_delay.h"
#include "vpic.h"
#include "console.h"
#include "stop.h"
#include "io.h"
#include "hvlib.h"
#include "timer.h"

static struct vcpu *V(void *ctx)
{
	return ctx;
}

static bool op_read_lin(void *ctx, uint32_t lin, void *buf, unsigned len, uint32_t *fault_error)
{
	return vcpu_read_lin(V(ctx), lin, buf, len, V(ctx)->frame->cs & 3, fault_error);
}

static bool op_write_lin(void *ctx, uint32_t lin, const void *buf, unsigned len, uint32_t *fault_error)
{
	return vcpu_write_lin(V(ctx), lin, buf, len, V(ctx)->frame->cs & 3, fault_error);
}

static uint32_t op_seg_base(void *ctx, int seg)
{
	struct trap_frame *f = V(ctx)->frame;
	uint32_t sel;

	switch (seg) {
	case SEG_ES: sel = f->es; break;
	case SEG_CS: sel = f->cs; break;
	case SEG_SS: sel = f->ss; break;
	case SEG_DS: sel = f->ds; break;
	case SEG_FS: sel = f->fs; break;
	case SEG_GS: sel = f->gs; break;
	default: return 0;
	}
	return vcpu_seg_base(V(ctx), (uint16_t)sel);
}

uint32_t vcpu_read_cr(struct vcpu *v, int n)
{
	switch (n) {
	case 0: return v->cr0;
	case 2: return v->cr2;
	case 3: return v->cr3;
	case 4: return v->cr4;
	}
	return 0;
}

static uint32_t op_read_cr(void *ctx, int n)
{
	return vcpu_read_cr(V(ctx), n);
}

static enum emul_result unsupported(struct emul_outcome *out, const char *fmt, uint32_t a)
{
	rule_break_note(&out->brk, fmt, a);
	return EMUL_UNSUPPORTED;
}

enum emul_result vcpu_check_cr(int n, uint32_t val, struct emul_outcome *out)
{
	if (n == 0 && !(val & X86_CR0_PE))
		return unsupported(out, "mov to cr0 %08x: leaving protected mode", val);
	if (n == 4 && (val & X86_CR4_PAE))
		return unsupported(out, "mov to cr4 %08x: PAE (vmi-hv guests are non-PAE)", val);
	if (n != 0 && n != 2 && n != 3 && n != 4)
		return unsupported(out, "mov to cr%u", (uint32_t)n);
	return EMUL_OK;
}

enum emul_result vcpu_write_cr(struct vcpu *v, int n, uint32_t val, struct emul_outcome *out)
{
	enum emul_result r = vcpu_check_cr(n, val, out);

	if (r != EMUL_OK)
		return r;
	switch (n) {
	case 0:
		v->cr0 = val | X86_CR0_ET;
		vcpu_paging_changed(v, false);
		return EMUL_OK;
	case 2:
		v->cr2 = val;
		return EMUL_OK;
	case 3:
		v->cr3 = val;
		vcpu_paging_changed(v, true);	/* a CR3 write flushes the TLB */
		return EMUL_OK;
	case 4:
		/* SSE needs the real OSFXSR/OSXMMEXCPT: the guest owns the
		 * FPU/SSE state (the hypervisor is built without them), so
		 * they may simply stay on once the guest asks for them. */
		if (val & (X86_CR4_OSFXSR | X86_CR4_OSXMMEXCPT)) {
			uint32_t real = read_cr4() | (val & (X86_CR4_OSFXSR | X86_CR4_OSXMMEXCPT));

			__asm__ volatile("mov %0, %%cr4" : : "r"(real) : "memory");
		}
		if ((val ^ v->cr4) & X86_CR4_PGE)
			vcpu_paging_changed(v, true);
		v->cr4 = val;
		vcpu_paging_changed(v, false);
		return EMUL_OK;
	}
	return unsupported(out, "mov to cr%u", (uint32_t)n);
}

static enum emul_result op_write_cr(void *ctx, int n, uint32_t val, struct emul_outcome *out)
{
	return vcpu_write_cr(V(ctx), n, val, out);
}

static enum emul_result op_load_seg(void *ctx, struct trap_frame *f, int seg, uint16_t sel,
				    struct emul_outcome *out)
{
	return vcpu_load_seg(V(ctx), f, seg, sel, out);
}

static enum emul_result op_load_dtr(void *ctx, int which, uint32_t base, uint16_t limit,
				    struct emul_outcome *out)
{
	return vcpu_load_dtr(V(ctx), which, base, limit, out);
}

static enum emul_result op_load_ldtr(void *ctx, uint16_t sel, struct emul_outcome *out)
{
	return vcpu_load_ldtr(V(ctx), sel, out);
}

static enum emul_result op_load_tr(void *ctx, uint16_t sel, struct emul_outcome *out)
{
	return vcpu_load_tr(V(ctx), sel, out);
}

static enum emul_result op_io_in(void *ctx, uint16_t port, unsigned size, uint32_t *val,
				 struct emul_outcome *out)
{
	return vcpu_io_in(V(ctx), port, size, val);
}

/* A byte to the console UART waits for the real one: slow (string I/O
 * batches end early, emulate.h EMUL_REP_SLOW_MAX). */
static enum emul_result op_io_out(void *ctx, uint16_t port, unsigned size, uint32_t val,
				  struct emul_outcome *out)
{
	uint64_t sent = V(ctx)->guest->vuart.tx_bytes;
	enum emul_result r = vcpu_io_out(V(ctx), port, size, val);

	out->slow_io += (unsigned)(V(ctx)->guest->vuart.tx_bytes - sent);
	return r;
}

/*
 * CPUID as the real CPU answers, minus what the guest must not use under
 * us: features whose state we do not virtualize (APIC, x2APIC, MCE/MCA,
 * MTRR, XSAVE/AVX, PCID, MONITOR, VMX, SEP, PAE's NX, the PMU), plus the "running
 * on a hypervisor" bit.
 */
void vcpu_cpuid(struct vcpu *v, uint32_t leaf, uint32_t subleaf, uint32_t r[4])
{
	uint32_t max;

	cpuid(0, 0, &max, &r[1], &r[2], &r[3]);
	if ((leaf < 0x80000000u && leaf > max) || (leaf >= 0x40000000u && leaf < 0x80000000u)) {
		r[0] = r[1] = r[2] = r[3] = 0;
		return;
	}
	cpuid(leaf, subleaf, &r[0], &r[1], &r[2], &r[3]);
	switch (leaf) {
	case 1:
		r[2] &= ~((1u << 3) | (1u << 5) | (1u << 17) | (1u << 21) | (1u << 24) |
			  (1u << 26) | (1u << 27) | (1u << 28));
		r[2] |= 1u << 31;
		/* PSE too: guest 4 MiB pages are not machine-contiguous, and
		 * the paravirtual shadows (mm/shadow_notify.c) shadow 4 KiB tables. */
		r[3] &= ~((1u << 7) | (1u << 9) | (1u << 11) | (1u << 12) | (1u << 14) |
			  (1u << 6) | (1u << 3));	/* MCE APIC SEP MTRR MCA PAE PSE */
		/* The initial APIC ID is the vCPU's (its vLAPIC's and MP table's),
		 * not that of the CPU it happens to run on. */
		r[1] = (r[1] & 0x00ffffffu) | (uint32_t)v->index << 24;
		break;
	case 7:
		/* SMEP, SMAP, INVPCID, AVX2, AVX-512...: keep only basic bits. */
		r[1] &= (1u << 0) | (1u << 3) | (1u << 8) | (1u << 9) | (1u << 18) | (1u << 19);
		r[2] = r[3] = 0;
		break;
	case 0xa:	/* no architectural PMU: its counters read 0 (rdpmc) */
	case 0xd:
		r[0] = r[1] = r[2] = r[3] = 0;
		break;
	case 0x80000001u:
		r[3] &= ~((1u << 20) | (1u << 11));	/* NX, SYSCALL */
		break;
	}
}

static void op_cpuid(void *ctx, uint32_t leaf, uint32_t subleaf, uint32_t regs_out[4])
{
	vcpu_cpuid(V(ctx), leaf, subleaf, regs_out);
}

/*
 * The MSR policy, for rdmsr/wrmsr (the emulator) and the VMI RDMSR/WRMSR
 * calls alike.  MSRs are not virtualized, except the microcode revision
 * (0x8b: Linux writes 0, runs CPUID, reads it), which reads as 0.  Any
 * other does not exist for the guest: false (and 0 read).  The emulator
 * raises #GP then, which Linux's rdmsr_safe/wrmsr_safe expect for an MSR
 * that does not exist.  The VMI calls cannot fault (the seed's RDMSR and
 * WRMSR say nothing of faults; a #GP at the ROM's slot would find no
 * exception-table entry in the guest), so they answer "unsupported"
 * instead, which the guest's read_msr_safe/write_msr_safe turn into the
 * error a fault gives natively (hypercall.c; docs/VROM.md, "MSRs").
 * Either way nothing reaches the real CPU.
 */
bool vcpu_rdmsr(struct vcpu *v, uint32_t msr, uint64_t *val)
{
	*val = 0;
	return msr == X86_MSR_IA32_UCODE_REV;
}

bool vcpu_wrmsr(struct vcpu *v, uint32_t msr, uint64_t val)
{
	return msr == X86_MSR_IA32_UCODE_REV;
}

static enum emul_result gp0(struct emul_outcome *out)
{
	out->vector = X86_VEC_GP;
	out->has_error = true;
	out->error = 0;
	return EMUL_FAULT;
}

static enum emul_result op_rdmsr(void *ctx, uint32_t msr, uint64_t *val, struct emul_outcome *out)
{
	if (vcpu_rdmsr(V(ctx), msr, val))
		return EMUL_OK;
	log_debug("guest rdmsr 0x%x denied (#GP)", msr);
	return gp0(out);
}

static enum emul_result op_wrmsr(void *ctx, uint32_t msr, uint64_t val, struct emul_outcome *out)
{
	if (vcpu_wrmsr(V(ctx), msr, val))
		return EMUL_OK;
	log_debug("guest wrmsr 0x%x <- %llx denied (#GP)", msr, (unsigned long long)val);
	return gp0(out);
}

/* Debug registers are kept, not loaded (VMI SetDR/GetDR): the guest's
 * breakpoints would fire in the hypervisor too.  The emulator has no
 * mov to/from DR op, so before activation such an instruction stops
 * the guest as unsupported. */
void vcpu_write_dr(struct vcpu *v, uint32_t n, uint32_t val)
{
	if (n < 8)
		v->dr[n] = val;
}

uint32_t vcpu_read_dr(struct vcpu *v, uint32_t n)
{
	return n < 8 ? v->dr[n] : 0;
}

/* The guest's view of its EFLAGS: the real ones with the virtual IF. */
static bool op_get_if(void *ctx)
{
	return V(ctx)->vif;
}

static void op_set_if(void *ctx, bool on)
{
	V(ctx)->vif = on;
}

static enum emul_result op_invlpg(void *ctx, uint32_t lin)
{
	vcpu_mmu_invlpg(V(ctx), lin);
	return EMUL_OK;
}

static enum emul_result op_halt(void *ctx)
{
	return EMUL_HALT;
}

/*
 * A vCPU that halts with interrupts off while another of its guest runs
 * is parked: nothing wakes it, and, as a CPU in cli; hlt still takes INIT
 * and STARTUP, SetInitialAPState starts it again.  That is how a guest
 * takes a CPU offline and back (docs/SMP.md), and how the CPUs that a
 * panic stops wait while the panicking one restarts the machine (vCPU 0
 * too, when the panic is an AP's).  Its local APIC and alarms are reset as
 * INIT resets a CPU's: nothing it armed before fires into the next start.
 * Its own exit, with its guest's lock; IPIs skip it from now on
 * (vcpu_lapic.c).
 */
static void park(struct vcpu *v)
{
	struct rule_break unused;	/* every counter's cancel is valid */

	log_info("vcpu %u: hlt with interrupts off at %04x:%08x: parked until the guest starts it again (SetInitialAPState)",
		 v->index, v->frame->cs & 0xffff, v->frame->eip);
	for (uint32_t c = 0; c < VMI_ALARM_COUNTERS; c++)
		valarm_cancel(&v->valarm, c, &unused);
	vlapic_reset(&v->lapic, v->index);
	v->wake_requested = false;
	v->awaiting_start = true;
	v->halted = true;
}

/* Another vCPU of v's guest started and not parked (read under the
 * guest's lock, which this exit holds: starts and parks take it). */
static bool another_vcpu_runs(const struct vcpu *v)
{
	const struct guest *g = v->guest;

	for (unsigned i = 0; i < g->nr_vcpus; i++)
		if (g->vcpus[i] != v && !g->vcpus[i]->awaiting_start)
			return true;
	return false;
}

/*
 * hlt.  With the virtual IF clear nothing can ever wake the vCPU.  The
 * last one of its guest to do so ends the guest: that
 * is how Linux powers off and halts when it has no other way (its
 * machine_halt and power-off end in stop_this_cpu's hlt loop with
 * interrupts off, after "reboot: System halted"), so it is the guest's
 * power-off (docs/HV.md, "Power-off and reboot").  Its early code dies
 * the same way ("error(); while (1) hlt"): the end line names the eip.
 * With IF set the vCPU is halted: the run loop enters it no more until
 * its vPIC has an interrupt to deliver, and idles the CPU meanwhile.
 */
void vcpu_halt(struct vcpu *v)
{
	debug_delay(debug_halt_delay_us);	/* test-only: a long exit */
	/* One that halts with interrupts off while another vCPU runs waits
	 * there until the guest starts it again, as a CPU waits for INIT
	 * (Linux's stop_this_cpu, CPU offline, a panic's stop of the other
	 * CPUs): its guest goes on (docs/SMP.md, "A guest of several
	 * vCPUs"). */
	if (!v->vif && another_vcpu_runs(v)) {
		park(v);
		return;
	}
	if (!v->vif) {
		char why[96];

		fmt_snprintf(why, sizeof(why), "hlt with interrupts off at %04x:%08x (how Linux powers off or halts)",
			     v->frame->cs & 0xffff, v->frame->eip);
		vcpu_guest_shutdown(v, why);
	}
	v->halted = true;
}

/*
 * VMI Halt: enable interrupts and halt in one step, as "sti; hlt"
 * (docs/VROM.md, "Halt").  A guest's idle loop checks for work with
 * interrupts off and then halts; an interrupt that came in between is
 * still pending here, so the vCPU wakes at once and takes it right after
 * the call.  With EnableInterrupts first it would have been delivered
 * before the Halt, which then slept until the next one.
 */
void vcpu_halt_call(struct vcpu *v)
{
	if (v->vif)
		v->stats.halts_if_set++;
	else
		v->stats.halts_if_clear++;
	if (vcpu_irq_pending(v))
		v->stats.halts_pending++;
	v->vif = true;
	vcpu_halt(v);
}

void vcpu_emul_ops(struct vcpu *v, struct emul_ops *ops)
{
	*ops = (struct emul_ops){
		.ctx = v,
		.read_lin = op_read_lin, .write_lin = op_write_lin,
		.seg_base = op_seg_base,
		.read_cr = op_read_cr, .write_cr = op_write_cr,
		.load_seg = op_load_seg, .load_dtr = op_load_dtr,
		.load_ldtr = op_load_ldtr, .load_tr = op_load_tr,
		.io_in = op_io_in, .io_out = op_io_out,
		.cpuid = op_cpuid, .rdmsr = op_rdmsr, .wrmsr = op_wrmsr,
		.get_if = op_get_if, .set_if = op_set_if,
		.invlpg = op_invlpg, .halt = op_halt,
	};
}
