/*
 * pcpu.h - what belongs to a physical CPU.  Two parts:
 *   - struct pcpu_tables, one page per CPU in the switcher (pcpu_tables[],
 *     .switcher.data): what the CPU itself reads while a guest's page
 *     tables are loaded, its GDT, IDT and TSSes, and the two words the
 *     trap path needs to leave the guest (the saved hypervisor stack and
 *     CR3).  A guest's view maps only the page of the CPU its vCPU runs
 *     on (pcpu_enter);
 *   - struct pcpu, ordinary hypervisor data that no guest view maps: the
 *     vCPU it runs, the run loop's return point, its timer, counters,
 *     locks.
 * pcpus[0] is the boot CPU; the others are started by smp_boot.c.
 * Everything a guest changes in these tables (its GDT entries, its
 * switcher pages) is kept in its vCPU and copied in when that vCPU is
 * entered (pcpu_enter), as lguest's copy_in_guest_info does.
 *
 * PCPU_HOST_ESP and PCPU_HV_CR3 are the offsets in struct pcpu_tables
 * that switcher.S uses; it finds the page from GDTR's base (sgdt), which
 * lies in it.
 */
#ifndef VMI_HV_PCPU_H
#define VMI_HV_PCPU_H

#define PCPU_HOST_ESP 0
#define PCPU_HV_CR3   4

#ifndef __ASSEMBLER__
#include <stdint.h>
#include <stdbool.h>
#include "segments.h"
#include "layout.h"
#include "lock_types.h"

#define HV_NR_PCPUS HV_MAX_CPUS

struct tss {
	uint32_t link, esp0, ss0, esp1, ss1, esp2, ss2;
	uint32_t cr3, eip, eflags, eax, ecx, edx, ebx, esp, ebp, esi, edi;
	uint32_t es, cs, ss, ds, fs, gs, ldt;
	uint16_t trap, iomap_base;
} __attribute__((packed));

struct vcpu;

/* Where a guest stop returns to (jump.S): callee-saved registers, esp,
 * eip. */
struct hv_jmp {
	uint32_t ebx, esi, edi, ebp, esp, eip;
};

/* One page: a guest's view maps that of the CPU its vCPU runs on,
 * read-only, and no other; so it holds nothing but what the CPU must
 * reach with a guest's CR3 loaded.  The GDT is in it (switcher.S finds
 * the page from GDTR). */
struct pcpu_tables {
	/* Hypervisor stack inside switch_to_guest, restored by trap_common
	 * on an exit. */
	uint32_t host_esp;
	/* The hypervisor's page directory, loaded by trap_common. */
	uint32_t hv_cr3;
	uint64_t gdt[HV_GDT_ENTRIES] __attribute__((aligned(16)));
	uint64_t idt[256];
	struct tss tss;
	struct tss df_tss;
} __attribute__((aligned(HV_PAGE_SIZE)));

extern struct pcpu_tables pcpu_tables[HV_NR_PCPUS];

struct pcpu {
	/* The vCPU running on this CPU, or the one that ran last: its GDT
	 * entries and switcher pages are the ones loaded. */
	struct vcpu *current;
	/* The run loop's place to come back to when a guest dies. */
	struct hv_jmp run_jmp;
	/* TSC when the last exit came back to us, 0 once the CPU slept:
	 * the hypervisor's time per exit is from here to the next entry. */
	uint64_t exit_tsc;
	/* The stack the hypervisor runs on (boot.S's on the boot CPU). */
	uint32_t host_stack_top;
	/* Its index in pcpus[] and its local APIC's ID. */
	unsigned index;
	uint8_t apic_id;
	/* Started and running hypervisor code (set by the CPU itself). */
	volatile bool online;
	/* The locks it holds (kept with locks=check). */
	struct lock_stack locks;
	/* Its one-shot timer (hv_timer.c): the deadline armed (0: none),
	 * interrupts taken, shots armed. */
	volatile uint64_t timer_deadline;
	volatile uint64_t timer_interrupts, timer_arms;
	uint64_t ipis;			/* IPIs taken (lapic.c) */
	/* Its time since it joined the run loop, by where it went (the rest
	 * is the hypervisor's): Ctrl-] s. */
	uint64_t joined_tsc, guest_cycles, idle_cycles;
	/* Between an exit and the next entry or halt (vcpu.c): another CPU
	 * that finds it set counts its own exit as handled in parallel. */
	volatile bool in_exit;
	/* Its TSS.esp0 and hypercall gate are set for guests (pcpu_enter). */
	bool ready_for_guests;
	/* The vCPU in guest mode here: set before its guest's lock goes at
	 * an entry, cleared at the exit before the lock is taken again; and
	 * the exits so far.  A CPU that narrowed that guest's shadows waits
	 * for the count to move (vcpu_shootdown.c). */
	struct vcpu *volatile in_guest;
	volatile uint32_t guest_exits;
} __attribute__((aligned(64)));

extern struct pcpu pcpus[HV_NR_PCPUS];
/* How many of pcpus[] are online (the boot CPU and the started ones). */
extern unsigned nr_online_cpus;

/* CPU c's tables (c->index set: smp_boot.c, cpu_tables_init). */
static inline struct pcpu_tables *pcpu_tables_of(const struct pcpu *c)
{
	return &pcpu_tables[c->index];
}

/* Every hypervisor stack (the host stack, the double-fault task's) is
 * HV_STACK_SIZE bytes aligned to its size, with its CPU's pcpu in the
 * lowest word: a CPU finds itself from its stack pointer, with no
 * per-CPU segment and no memory access but that word. */
static inline struct pcpu *this_pcpu(void)
{
	uint32_t esp;

	__asm__("movl %%esp, %0" : "=r"(esp));
	return *(struct pcpu **)(esp & ~(uint32_t)(HV_STACK_SIZE - 1));
}

/* A stack of HV_STACK_SIZE at base (aligned to its size) for CPU c:
 * marks it as c's and returns its top. */
static inline uint32_t pcpu_stack_claim(struct pcpu *c, void *base)
{
	*(struct pcpu **)base = c;
	return (uint32_t)base + HV_STACK_SIZE;
}

#endif
#endif
