/*
 * vcpu.c - start the guest and run it: the exit loop.
 *
 * The guest runs in ring 1 (its kernel) or ring 3 (its user space) on the
 * shadow page directory of the virtual TLB, with the real EFLAGS.IF = 1 and
 * IOPL 0, so that every interrupt, every exception and every privileged
 * instruction (#GP) leaves it.  switch_to_guest (switcher.S) enters it
 * from the frame at HV_VCPU_FRAME (the vCPU's own stack page, which
 * pcpu_enter maps there) and returns on the next trap with the frame
 * refilled.  The run loop (run.c) calls vcpu_run_once for each entry;
 * here we decide what the trap means:
 *
 *   #PF            -> the vTLB: hidden fill, or a #PF for the guest
 *   #GP, #UD       -> the instruction emulator (hv/emul/)
 *   int $0x82      -> a VMI hypercall (hypercall.c)
 *   IRQ 0-15       -> the hypervisor's own drivers (timer, keyboard, serial)
 *   NMI, #MC, #DF  -> the machine's problem, not the guest's
 *   anything else  -> the guest's own IDT, as hardware would deliver it
 */
#include "vcpu.h"
#include "guest_frames.h"
#include "traps.h"
#include "guest_stop.h"
#include "vcpu_desc.h"
#include "vcpu_exception.h"
#include "vcpu_io.h"
#include "vcpu_mem.h"
#include "vcpu_mmu.h"
#include "vcpu_ops.h"
#include "vcpu_shared.h"
#include "vcpu_layout.h"
#include "address_space.h"
#include "machine_mem.h"
#include "segments.h"
#include "console.h"
#include "stop.h"
#include "io.h"
#include "timer.h"
#include "hvlib.h"
#include "vmi_abi.h"
#include "vpic.h"
#include "vuart.h"
#include "valarm.h"
#include "pcpu.h"
#include "vcpu_switcher.h"
#include "run_internal.h"
#include "smp.h"

void switch_to_guest(uint32_t shadow_cr3, struct pcpu_tables *t);
uint32_t vcpu_switcher_init(struct vcpu *v);

struct vcpu *vcpu_create(struct guest *g)
{
	struct vcpu *v;

	HV_ASSERT(g->nr_vcpus < GUEST_MAX_VCPUS);
	v = guest_alloc_at_load(g, sizeof(*v), "a vCPU");
	v->index = g->nr_vcpus;
	vcpu_init(v, g);
	g->vcpus[g->nr_vcpus++] = v;
	if (v->index == 1)
		g->ap_scratch = guest_alloc_at_load(g, sizeof(*v), "SetInitialAPState's scratch vCPU");
	return v;
}

void vcpu_init(struct vcpu *v, struct guest *g)
{
	/* A new vCPU has none yet; a rebooted one keeps its pages. */
	void *stack_page = v->stack_page, *shared_page = v->shared_page;
	uint32_t *switcher_pt = v->switcher_pt;
	unsigned index = v->index;
	struct trap_frame *f;
	struct emul_outcome out;

	memset(v, 0, sizeof(*v));
	v->stack_page = stack_page;
	v->shared_page = shared_page;
	v->switcher_pt = switcher_pt;
	v->guest = g;
	v->index = index;
	v->awaiting_start = index > 0;
	vlapic_reset(&v->lapic, index);
	/* Its alarms wired as guest_devices_reset wires them: no path
	 * that builds a vCPU leaves its alarm device without its wires. */
	valarm_init(&v->valarm, index ? 0 : &g->vpic, &v->lapic);
	fpu_area_reset(&v->fpu);
	vcpu_mmu_init(v, vcpu_switcher_init(v));
	f = v->frame;
	vcpu_shared_init(v, g->fastpaths);
	log_info("vcpu: VMI shared page at %08x, ROM fast paths %s",
		 HV_VCPU_SHARED_PAGE,
		 g->fastpaths ? "on (virtual IF, CR2, page-table updates and lifecycle calls, cycle counters, port reads, IRET, empty flushes and invalidations)" :
		 "off (fastpaths=off)");

	/* Protected mode, paging off: the vTLB maps guest-physical 1:1 on
	 * demand ("physical mode").  ET is hard-wired on every CPU since the
	 * 486. */
	v->cr0 = X86_CR0_PE | X86_CR0_ET;
	vcpu_paging_changed(v, true);

	/* The 32-bit boot protocol's promise: a flat __BOOT_CS/__BOOT_DS
	 * GDT.  It is the guest's GDT in name only (no guest memory holds
	 * it); head_32.S and the decompressor load their own at once. */
	memset(f, 0, sizeof(*f));
	f->eip = g->boot.eip;
	f->esi = g->boot.esi;
	f->eflags = X86_EFLAGS_FIXED;
	v->vif = false;
	/* Empty but for the hypervisor's own slots, which read as the CPU's
	 * GDT has them.  Nothing else of the CPU's: after a reboot it holds
	 * the descriptors of the vCPU it entered last, of any guest. */
	memset(v->gdt, 0, sizeof(v->gdt));
	for (unsigned i = 0; i < HV_GDT_ENTRIES; i++)
		if (guest_desc_hv_slot(i))
			v->gdt[i] = pcpu_tables_of(this_pcpu())->gdt[i];
	if (vcpu_boot_gdt(v, &out) != EMUL_OK)
		hv_panic("boot GDT refused: %s", out.brk.why);
	f->cs = 0x10 | 1;
	f->ds = f->es = f->ss = 0x18;
	f->fs = f->gs = 0;
	f->ss = 0x18 | 1;
	if (v->awaiting_start) {
		log_info("vcpu %u: waits for the guest to start it (SetInitialAPState)", index);
		return;
	}
	log_info("vcpu: guest entry eip=%08x esi=%08x cs=%04x ds=%04x, ring 1, paging off (vTLB physical mode), shadow cr3 %08x",
		 f->eip, f->esi, f->cs, f->ds, vcpu_mmu_cr3(v));
}

/*
 * Its guest rebooted (guest_restart.c): the vCPU as vcpu_init built it,
 * on the frames it already holds (its stack and shared pages, zeroed;
 * the vTLB's directory given back and taken again).  The CPU must not
 * take it for the vCPU it last entered: that one's FPU registers and
 * GDT are still loaded.
 */
void vcpu_restart(struct vcpu *v)
{
	struct pcpu *c = this_pcpu();

	if (c->current == v)
		c->current = 0;
	vtlb_destroy(&v->vtlb);
	vcpu_init(v, v->guest);
}

/* Real EFLAGS for the guest: IF always on (its IF is virtual), IOPL 0 so
 * that cli/sti/in/out trap, never VM86.  NT: never in the guest kernel's
 * ring (its iret would be a task return); in user mode it is the
 * program's, which popf sets natively and every exit must keep (docs/HV.md,
 * "vCPU and world switch"): there its only effect is that the program's
 * own iret is a task return through our TSS's link, which is 0, so the
 * CPU raises #TS(0), delivered to the guest as natively. */
static void sanitize_eflags(struct trap_frame *f)
{
	f->eflags |= X86_EFLAGS_IF | X86_EFLAGS_FIXED;
	f->eflags &= ~(X86_EFLAGS_IOPL | X86_EFLAGS_VM);
	if ((f->cs & 3) != 3)
		f->eflags &= ~X86_EFLAGS_NT;
}

static unsigned frame_cpl(const struct trap_frame *f)
{
	return f->cs & 3;
}

static const char *vector_name(unsigned vector)
{
	if (vector < 32 && exception_names[vector])
		return exception_names[vector];
	return "interrupt";
}

static void emulate(struct vcpu *v, struct trap_frame *f)
{
	struct emul_ops ops;
	struct emul_outcome out;
	enum emul_result r;
	uint32_t cs = f->cs, eip = f->eip;
	const struct trap_frame before = *f;

	vcpu_emul_ops(v, &ops);
	memset(&out, 0, sizeof(out));
	rule_break_clear(&v->brk);
	r = emulate_one(f, frame_cpl(f), &ops, &out);
	if (v->paravirtual)
		log_debug("trapped after activation: %s at guest eip %04x:%08x (result %d)",
			  out.kind < EMUL_KIND_COUNT ? emul_kind_name(out.kind) : "?", cs, eip, (int)r);
	if (rule_broken(&v->brk))
		vcpu_stop_insn(v, out.bytes, out.len, "%s", v->brk.why);
	/* A far jmp/call/ret or iret to an EIP beyond the new CS's limit:
	 * the CPU raises #GP(0) at the instruction, before it completes. */
	if (r == EMUL_OK && !vcpu_eip_in_cs(v, (uint16_t)f->cs, f->eip)) {
		const char *more = guest_log_take(&v->guest->cs_limit_log, "transfers beyond a code segment's limit");

		/* Ring 3 can repeat it at will (a signal handler that jumps
		 * back): logged within a limit. */
		if (more)
			log_warn("guest: %04x:%08x is beyond the limit %08x of its code segment: #GP%s",
				 f->cs & 0xffff, f->eip, vcpu_cs_limit(v, (uint16_t)f->cs), more);
		*f = before;
		vcpu_deliver(v, 13, true, 0, 0);
		return;
	}
	switch (r) {
	case EMUL_OK:
	case EMUL_HALT:
		v->stats.emulated++;
		if (v->paravirtual)
			v->stats.emulated_after_activation++;
		if (out.kind < EMUL_KIND_COUNT)
			v->stats.emulated_by_kind[out.kind]++;
		if (r == EMUL_HALT)
			vcpu_halt(v);
		return;
	case EMUL_FAULT:
		if (out.vector == 14)
			v->cr2 = out.cr2;
		vcpu_deliver(v, out.vector, out.has_error, out.error, 0);
		return;
	case EMUL_UNSUPPORTED:
		/* A #UD the emulator does not know is an invalid opcode for
		 * the guest too (ud2 in BUG(), a probe): hardware would have
		 * raised it, so we do. */
		if (f->vector == 6) {
			vcpu_deliver(v, 6, false, 0, 0);
			return;
		}
		/* From user space, the CPU's own fault is what the guest
		 * would have had natively (misaligned SSE, a null-segment
		 * access, rdpmc, sysenter with SYSENTER_CS 0, a selector
		 * of the hypervisor's or the LDT): its kernel decides, and
		 * signals the process.  Only the guest kernel's unknown
		 * instructions stop the guest (docs/HV.md, "What the guest can reach"). */
		if (frame_cpl(f) == 3) {
			v->stats.user_faults_reflected++;
			vcpu_deliver(v, f->vector, true, f->error, 0);
			return;
		}
		/* Said once: the emulator's reasons begin with it already. */
		vcpu_stop_insn(v, out.bytes, out.len, "%s%s",
			       strncmp(out.brk.why, EMUL_UNSUPPORTED_WHY, sizeof(EMUL_UNSUPPORTED_WHY) - 1) ?
			       EMUL_UNSUPPORTED_WHY ": " : "", out.brk.why);
	}
	vcpu_stop_insn(v, out.bytes, out.len, "emulator returned %d", (int)r);
}

/* #GP with the IDT bit in the error code: an "int n" (or int3/into)
 * whose gate in our IDT has DPL 0.  Deliver vector n through the guest's
 * IDT as the software interrupt it is. */
static void software_interrupt(struct vcpu *v, struct trap_frame *f)
{
	unsigned vector = (f->error >> 3) & 0xff, n = 0, len;
	uint8_t b[15];
	uint32_t pf;

	/* Byte by byte up to the opcode: prefixes first (66 cd 80 is a
	 * system call too; docs/HV.md, "What the guest can reach"), never further than the CPU fetched. */
	do {
		if (!vcpu_read_lin(v, vcpu_seg_base(v, f->cs) + f->eip + n, &b[n], 1, frame_cpl(f), &pf))
			vcpu_stop(v, "cannot read the instruction of software interrupt %u", vector);
		len = emul_soft_int_length(b, ++n);
	} while (!len && n < sizeof(b));
	if (!len)
		vcpu_stop_insn(v, b, n, "software interrupt %u from an instruction that is not int", vector);
	vcpu_deliver(v, vector, false, 0, len);
}

static void handle_exit(struct vcpu *v, struct trap_frame *f, uint32_t cr2, bool interrupt)
{
	unsigned vector = f->vector;

	v->stats.exits++;
	v->stats.exits_by_vector[vector & 0xff]++;
	if (interrupt)
		return;		/* its driver ran at the exit (vcpu_run_once) */
	switch (vector) {
	case X86_VEC_PF:
		vcpu_strict_pt_write(v, cr2, f->error, frame_cpl(f));
		vcpu_mmu_fault(v, cr2, f->error, frame_cpl(f));
		return;
	case X86_VEC_GP:
		if (f->error & 2) {
			software_interrupt(v, f);
			return;
		}
		/* Privileged instructions (error 0) and selector faults of
		 * segment loads and far transfers: the emulator decides, it
		 * knows the instruction. */
		emulate(v, f);
		return;
	case X86_VEC_UD:
		emulate(v, f);
		return;
	case X86_VEC_DF:
		vcpu_stop(v, "double fault while the guest ran (a hypervisor bug)");
	case X86_VEC_NMI:
		/* A real NMI (the guest's own "int $2" arrives as #GP): the
		 * machine's, not the guest's. */
		log_warn("NMI while the guest ran; ignored");
		return;
	case X86_VEC_MC:
		hv_panic("machine check while the guest ran");
	}
	if (vector == VMI_HYPERCALL_VECTOR) {
		vcpu_hypercall(v);
		return;
	}
	if (vector < 32) {
		bool has_error = vector == X86_VEC_TS || vector == X86_VEC_NP || vector == X86_VEC_SS ||
				 vector == X86_VEC_AC;

		vcpu_deliver(v, vector, has_error, f->error, 0);
		return;
	}
	vcpu_stop(v, "unexpected trap vector %u (%s) from the guest", vector, vector_name(vector));
}

/* At an instruction boundary with the virtual IF set: the vPIC's best
 * request goes through the guest's IDT like a hardware interrupt (no
 * error code, gate DPL not checked; an interrupt gate clears the IF). */
static void inject_interrupt(struct vcpu *v)
{
	int lapic = v->vif ? vlapic_pending(&v->lapic) : -1;

	/* Its local APIC's IPIs first (their vectors are above the
	 * 8259's in a Linux guest). */
	if (lapic >= 0) {
		vlapic_ack(&v->lapic, (uint8_t)lapic);
		v->ipis_taken++;
		v->stats.injected++;
		vcpu_deliver(v, (unsigned)lapic, false, 0, 0);
		return;
	}
	/* The vPIC is wired to vCPU 0, as a PC's 8259 is to the boot CPU. */
	if (v->index || !v->vif || !vpic_pending(&v->guest->vpic))
		return;
	if (v->paravirtual && !v->stats.hypercalls_by_call[VMI_CALL_IRET] && !v->stats.rom_irets)
		v->stats.injected_before_iret++;
	v->stats.injected++;
	vcpu_deliver(v, vpic_ack(&v->guest->vpic), false, 0, 0);
}

/*
 * The interrupt just injected was an alarm's, latched until now: the loop
 * armed this CPU's timer for none of v's alarms meanwhile (valarm_next
 * skips a latched one, run.c), and the guest may now run on without an
 * exit (its EOI, IRET and a periodic alarm's next tick need none), so the
 * timer is armed here for v's next alarm, before the entry.  Without it,
 * a vCPU alone on its CPU (vcpus_at_once=on: no sibling's slice end comes)
 * ran on with no tick at all.
 */
static void arm_for_unlatched_alarm(struct vcpu *v, unsigned latched_before)
{
	uint64_t next;

	if (!(latched_before & ~valarm_irq_latched(&v->valarm)))
		return;
	next = valarm_next(&v->valarm, &v->sched, rdtsc());
	if (next != UINT64_MAX)
		hv_timer_arm(next);
}

/* The time since the last exit, to the vCPU that made it, unless the CPU
 * slept in between (run.c zeroes exit_tsc before a halt). */
static void count_hv_time(struct pcpu *c)
{
	if (c->exit_tsc && c->current) {
		struct vcpu_stats *st = &c->current->stats;
		uint64_t took = rdtsc() - c->exit_tsc;

		st->hv_cycles += took;
		st->hv_timed_exits++;
		if (took > st->hv_max_cycles)
			st->hv_max_cycles = took;
		if (took > tsc_per_ms())
			st->hv_long_exits++;
	}
	c->exit_tsc = 0;
}

/*
 * This CPU is now in the hypervisor for v's exit.  If another CPU is too
 * (between its exit and its next entry or halt), the exit counts as
 * handled in parallel: the proof that the locks let two guests' exits
 * proceed at once (docs/ARCHITECTURE.md, "Who owns what on several
 * CPUs").  The store is ordered before the loads (seq_cst), so of two
 * CPUs that begin at once at least one sees the other.
 */
static void exit_handling_begin(struct pcpu *c, struct vcpu *v)
{
	__atomic_store_n(&c->in_exit, true, __ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < nr_online_cpus; i++)
		if (i != c->index && __atomic_load_n(&pcpus[i].in_exit, __ATOMIC_SEQ_CST)) {
			v->stats.parallel_exits++;
			return;
		}
}

void vcpu_exit_handling_end(struct pcpu *c)
{
	__atomic_store_n(&c->in_exit, false, __ATOMIC_RELEASE);
}

void vcpu_run_once(struct vcpu *v)
{
	struct trap_frame *f = v->frame;
	struct pcpu *c = this_pcpu();
	char why[128];
	uint32_t cr2, cr3;
	uint64_t entry_tsc;
	unsigned latched;
	bool interrupt;

	/* Its guest died on another CPU meanwhile (vcpus_at_once): back to
	 * the loop, which reaps it once no CPU is inside it. */
	if (!guest_alive(v->guest))
		vcpu_leave_dead_guest(v);
	latched = valarm_irq_latched(&v->valarm);
	inject_interrupt(v);
	arm_for_unlatched_alarm(v, latched);
	sanitize_eflags(f);
	if (!vcpu_check_frame(v, why, sizeof(why)))
		vcpu_stop(v, "cannot resume the guest: %s", why);
	vcpu_share_state(v);
	pcpu_enter(c, v);
	vcpu_syscall_gate_install(v);
	count_hv_time(c);
	cr3 = vcpu_mmu_cr3(v);
	/* The guest runs beside the other CPUs' hypervisor work. */
	vcpu_exit_handling_end(c);
	/* In guest mode from here until the exit, for the CPUs that change
	 * its guest's shadows under the lock (vcpu_shootdown.c). */
	__atomic_store_n(&c->in_guest, v, __ATOMIC_SEQ_CST);
	spin_unlock(&v->guest->lock);
	locks_assert_none_held();
	entry_tsc = rdtsc();
	switch_to_guest(cr3, pcpu_tables_of(c));
	/* Interrupts are off: nothing can fault in between. */
	cr2 = read_cr2();
	__atomic_store_n(&c->in_guest, 0, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&c->guest_exits, 1, __ATOMIC_SEQ_CST);
	c->exit_tsc = rdtsc();
	c->guest_cycles += c->exit_tsc - entry_tsc;
	spin_lock(&v->guest->lock);
	exit_handling_begin(c, v);
	/* An interrupt that made the exit is the machine's, whatever becomes
	 * of the guest at it: its driver runs, and its EOI, before anything
	 * can leave the exit.  (Left for the guest's death, the IPI that
	 * brought a CPU out of a dying guest stayed in service: that CPU
	 * took no IPI or timer interrupt again, and slept through every
	 * kick.) */
	interrupt = interrupt_dispatch(f->vector);
	if (!guest_alive(v->guest))
		vcpu_leave_dead_guest(v);
	if (v->stop_requested)
		vcpu_stop(v, "%s", v->stop_requested);
	v->exit_vector = f->vector;
	vcpu_mmu_exit_begin(v);
	vcpu_take_shared_state(v);
	vcpu_syscall_entry_window(v, f);
	if (v->guest->audit.opt.mode == AUDIT_EXIT)
		vcpu_mmu_audit_exit(v);
	if (!vcpu_finish_rom_iret(v, f)) {
		v->stats.exits++;
		v->stats.exits_by_vector[f->vector & 0xff]++;
	} else if (!vcpu_mmu_defer_exit(v, f)) {
		handle_exit(v, f, cr2, interrupt);
	}
	/* What this exit removed or narrowed in the shadows is gone from
	 * every other CPU running the guest before it runs on. */
	vcpu_mmu_sync_remote(v);
}
