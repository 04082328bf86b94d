/*
 * vcpu_state.h - a virtual CPU: what the guest believes about its CPU that the
 * real CPU does not hold while the guest runs deprivileged.  What its
 * vCPUs share (memory, shadows, devices) is in struct guest.
 *
 * The guest's general registers, segment selectors, EIP and EFLAGS live
 * in the trap frame in the switcher (vcpu_layout.h): the real CPU holds
 * them while the guest runs, and the frame holds them while we handle an
 * exit.  Everything else the guest thinks it controls is virtual and
 * lives here: CR0/CR2/CR3/CR4, the interrupt flag, the descriptor-table
 * registers, the paging state the virtual TLB shadows.
 */
#ifndef VMI_HV_VCPU_STATE_H
#define VMI_HV_VCPU_STATE_H

#include "fpu.h"
#include "sched.h"
#include <stdint.h>
#include <stdbool.h>
#include "trap_frame.h"
#include "vtlb.h"
#include "shadow.h"
#include "emulate.h"
#include "guest_desc.h"
#include "guest.h"
#include "segments.h"
#include "x86.h"
#include "virtual_flags.h"
#include "vlapic.h"
#include "vcpu_counters.h"

struct desc_reg {
	uint32_t base;
	uint16_t limit;
};

struct vcpu_stats {
	/* The plain counters, each with its report line (vcpu_counters.h). */
	VCPU_COUNTER_LINES(VCPU_COUNTER_FIELDS)
	uint64_t exits, exits_by_vector[256];
	uint64_t emulated, emulated_by_kind[EMUL_KIND_COUNT];
	uint64_t tlb_flushes_ignored;	/* FlushTLB after activation: shadows need none */
	uint64_t reflected_by_vector[32];	/* exceptions delivered through the guest's IDT */
	uint64_t hypercalls, hypercalls_by_call[128];
	uint64_t injected;		/* virtual interrupts delivered */
	uint64_t pxe_by_kind[VMI_SHARED_PXE_KIND_MASK + 1];	/* by VMI_SHARED_PXE_* */
	uint64_t pxe_calls[2];	/* F_PTLIFE: queued AllocatePage, ReleasePage */
	/* Exits at the first instruction of the direct int $0x80 handler,
	 * where the hypervisor cleared the virtual IF (vcpu_syscall.c). */
	uint64_t int80_entry_window;
	/* The hypervisor's own time between an exit and the next entry
	 * (run loop included, sleeps excluded), over hv_timed_exits exits:
	 * what one exit costs besides the world switch itself. */
	uint64_t hv_cycles, hv_timed_exits;
	/* The longest of them, and how many took longer than a millisecond:
	 * what one exit can keep the guest's lock (and, waiting for it, the
	 * other CPUs) busy for. */
	uint64_t hv_max_cycles, hv_long_exits;
	/* Exits after which the run loop entered the vCPU again at once,
	 * with nothing to poll or decide (run.c, quiet_exit). */
	uint64_t quiet_exits;
	/* Exits whose handling began while another CPU was between an exit
	 * and its next entry too (vcpu.c, exit_handling_begin). */
	uint64_t parallel_exits;
	/* The work of one exit bounded (vcpu_mmu.c): drains that left part of
	 * the queue for the next exit, exits not handled meanwhile (their
	 * instruction made again). */
	uint64_t drains_split, exits_deferred;
	/* F_PIC: exits whose shared page showed a mask or in-service bits
	 * the ROM had changed since the entry (vcpu_shared.c). */
	uint64_t rom_pic_changes;
};

/* The guest's LDT as the CPU uses it (vcpu_ldt.c): its entries converted
 * like the GDT's into frames of ours, mapped read-only in the switcher at
 * HV_VCPU_LDT_BASE while the vCPU runs.  Allocated at the first non-empty
 * LDT. */
#define VCPU_LDT_PAGES 16
struct vcpu_ldt {
	uint64_t *page[VCPU_LDT_PAGES];	/* 512 entries each, by the 1:1 map */
	unsigned count;			/* entries of the loaded LDT; 0: none */
	uint32_t base;			/* its guest-linear base */
	bool remap;			/* pages allocated since the last entry */
};

struct vcpu {
	struct guest *guest;
	/* Its number in the guest, which is its APIC ID; vCPU 0 starts at
	 * the kernel's entry, the others wait (not runnable) until the
	 * guest starts them (docs/SMP.md, "A guest of several vCPUs"). */
	unsigned index;
	bool awaiting_start;
	/* Halted, and something for it other than the vPIC (its start):
	 * the run loop wakes it (set under its guest's lock). */
	bool wake_requested;
	/* Its virtual local APIC (APICRead/APICWrite, vcpu_lapic.c) and the
	 * IPIs it sent and took. */
	struct vlapic lapic;
	uint64_t ipis_sent, ipis_taken;
	/* Its alarms (SetAlarm, CancelAlarm): wired to IRQ0 (vCPU 0 only)
	 * or its LVT timer; polled by the CPU it runs on or ran on last. */
	struct valarm valarm;
	/* Its FPU/SSE registers while another vCPU has the CPU (fpu.h). */
	struct fpu_area fpu;
	/* Its pages, mapped in the switcher (HV_VCPU_STACK_PAGE and
	 * HV_VCPU_SHARED_PAGE) while it runs: the ring-0 stack whose top is
	 * the trap frame, and the VMI shared page. */
	void *stack_page, *shared_page;
	struct trap_frame *frame;	/* the guest's registers, at the stack page's top */
	/* Its own page table for PDE 1023 of its address spaces: the
	 * switcher read-only, its stack, shared and LDT pages, and the page of
	 * the CPU it runs on that the trap path reads (vcpu_switcher.c). */
	uint32_t *switcher_pt;
	struct pcpu *switcher_cpu;	/* whose page switcher_pt maps now */
	struct vtlb vtlb;		/* shadow paging before activation */
	bool shadows_active;		/* guest->shadow serves from activation on */
	/* This exit's drain left part of the queue (vcpu_mmu_drain): the
	 * shadows are not yet exact, so nothing that needs them is handled. */
	bool drain_left;
	/* A directory whose build the work limit cut: its frame and the PDE
	 * to go on from at the next AllocatePage of it (0: none). */
	uint32_t pd_build_gfn, pd_build_next;
	struct guest_paging paging;	/* derived from cr0/cr3/cr4 below */
	uint32_t cr0, cr2, cr3, cr4;	/* the guest's virtual control registers */
	bool vif;			/* the guest's virtual EFLAGS.IF */
	/* The guest's virtual EFLAGS.IOPL, in the IOPL bits (SetIOPLMask):
	 * what GetInterruptMask shows, never put in the real EFLAGS, and it
	 * grants nothing (docs/HV.md, "The virtual IOPL"). */
	uint32_t iopl;
	/* The VMI shared page (vcpu_layout.h): with its fast paths on, the
	 * ROM keeps the virtual IF and CR2 there while the guest runs, so
	 * vif and cr2 are copied in before each entry and out after each
	 * exit (vcpu_run). */
	struct vmi_shared_page *shared;
	/* The vUART's gen when its plain registers were last published in
	 * the shared page (inb_cache); published_ports false: never yet. */
	uint32_t published_ports_gen;
	bool published_ports;
	/* F_ALARM: the floors last published and the token written with
	 * them into alarm_lazy; the CPU whose timer was armed for the
	 * promise they make, and for when (vcpu_shared.c).  F_PIC: the
	 * vPIC's vpic_rom_key at its last publication (vCPU 0).  Each
	 * *_published false: never yet, publish. */
	uint64_t alarm_floor[VMI_ALARM_COUNTERS];
	uint64_t alarm_armed_at;
	struct pcpu *alarm_armed_cpu;
	uint32_t alarm_token;
	bool alarm_published, pic_published;
	uint64_t pic_key;
	struct desc_reg gdtr, idtr;
	/* The guest's GDT entries as the CPU gets them (vcpu_desc.c): copied
	 * into the GDT of the CPU that enters this vCPU; the hypervisor's
	 * own slots hold its descriptors here, never copied. */
	uint64_t gdt[HV_GDT_ENTRIES];
	bool gdt_changed;		/* since the last copy */
	/* The last frame vcpu_check_frame passed, one returning to the
	 * guest kernel and one to user mode (exits alternate between them):
	 * its selectors (cs, ss, ds, es, fs, gs) with the descriptors they
	 * named then, and cs's limit.  The same selectors naming the same
	 * descriptors pass again without the checks. */
	struct frame_ok {
		bool valid;
		uint16_t sel[6];
		uint64_t desc[6];
		uint32_t cs_limit;
	} frame_ok[2];
	bool boot_gdt;			/* the boot protocol's GDT, not in guest memory */
	uint16_t ldtr, tr;
	struct vcpu_ldt ldt;
	uint32_t tr_base;		/* the guest's TSS (for ring-3 -> ring-0 stack) */
	uint32_t kernel_ss, kernel_esp;	/* VMI UpdateKernelStack */
	/* System calls without an exit (vcpu_syscall.c): the guest's IDT
	 * entry 0x80 as last read, whether the CPU's vector 0x80 goes to it
	 * for this entry, and the handler's offset. */
	uint64_t int80_gate;
	bool int80_direct;
	uint32_t int80_target;
	/* What decided int80_direct, and the gate it gave: the decision is
	 * taken again only when one of these changes (vcpu_syscall.c). */
	struct int80_inputs {
		uint64_t gate, code, stack;	/* the gate, its CS's and SS's descriptors */
		uint32_t kernel_ss;
		bool allowed;			/* paravirtual, fast paths, F_INT80, G_INT80 */
	} int80_inputs;
	bool int80_decided;
	uint16_t int80_sel;
	uint32_t int80_ss1;
	uint32_t dr[8];			/* VMI SetDR/GetDR: stored only */
	bool paravirtual;		/* the ROM's Init call has been made */
	/* The last VMI call and its register arguments, for diagnostics. */
	struct {
		bool made;
		uint32_t call, eax, edx, ecx, ebx, esi;
	} last_call;
	/* Halted (hlt, VMI Halt) until an interrupt can be delivered: the
	 * run loop enters it no more and idles the CPU. */
	bool halted;
	/* Ctrl-] q while it ran on another CPU: that CPU stops it at its
	 * next exit (the guest's frames must not go while a CPU uses them). */
	const char *stop_requested;
	/* The vector of the last exit (the trap frame's, as the switcher
	 * pushed it), for the run loop: an external interrupt needs it. */
	unsigned exit_vector;
	/* Why it ended its guest (lib/rule_break.h): filled by whoever found
	 * the break (a memory callback notes it here, so that its caller stops
	 * the guest instead of reflecting a fault), and by the stop itself. */
	struct rule_break brk;
	uint32_t last_fault_lin;		/* where the last guest #PF of a memory access was */
	uint64_t start_tsc;		/* when the guest started */
	struct vcpu_stats stats;
	/* Its place in the scheduler, and where its time went. */
	struct sched_entity sched;
};

/* An interrupt it would take with its IF set: its local APIC's (IPIs, its
 * LVTT alarms), or the vPIC's for vCPU 0, which the 8259 reaches alone. */
static inline bool vcpu_irq_pending(const struct vcpu *v)
{
	return vlapic_pending(&v->lapic) >= 0 || (!v->index && vpic_pending(&v->guest->vpic));
}

/* EFLAGS as the frames the hypervisor pushes for the guest show them:
 * eflags with the virtual IF.  (The virtual IOPL shows in GetInterruptMask
 * only: the frames the CPU pushes itself, the direct int $0x80 among them,
 * carry the real IOPL 0, and these must look the same.) */
static inline uint32_t vcpu_virtual_eflags(const struct vcpu *v, uint32_t eflags)
{
	return guest_visible_eflags(eflags, v->vif, 0);
}

#endif
