/*
 * cpu_tables.c - each physical CPU's GDT, IDT and TSSes (struct
 * pcpu_tables, a page each).
 *
 * They live in the switcher (section .switcher.data), because the CPU
 * reads them while a guest's page tables are loaded, when an interrupt or
 * exception leaves the guest; a guest's view maps only its own CPU's page
 * (vcpu_switcher.c).  The rest of struct pcpu is ordinary data, here too.
 * Every CPU's GDT holds the hypervisor's code and data segments from the
 * start: a started CPU loads its GDT before it runs any C (trampoline.S).
 */
#include "traps.h"
#include "segments.h"
#include "layout.h"
#include "hvlib.h"
#include "io.h"
#include "pcpu.h"
#include "stop.h"
#include <stddef.h>

#define SWITCHER_DATA __attribute__((section(".switcher.data"), aligned(16)))

/* Flat 4 GiB ring-0 code and data, granularity 4 KiB, 32-bit.  The
 * accessed bit is set already: the CPU would otherwise write it on the
 * first load, and a trap from a guest loads these while the guest's view
 * of the switcher (read-only, with CR0.WP) is in force. */
struct pcpu_tables pcpu_tables[HV_NR_PCPUS] SWITCHER_DATA = {
	[0 ... HV_NR_PCPUS - 1] = { .gdt = {
		[HV_GDT_CS_INDEX] = 0x00cf9b000000ffffull,
		[HV_GDT_DS_INDEX] = 0x00cf93000000ffffull,
	} },
};

struct pcpu pcpus[HV_NR_PCPUS];

_Static_assert(offsetof(struct pcpu_tables, host_esp) == PCPU_HOST_ESP, "switcher.S");
_Static_assert(offsetof(struct pcpu_tables, hv_cr3) == PCPU_HV_CR3, "switcher.S");
/* One page each (the unit a guest's view maps), GDT included: switcher.S
 * finds the page from GDTR's base. */
_Static_assert(sizeof(struct pcpu_tables) == HV_PAGE_SIZE, "a page per CPU");

struct dtr {
	uint16_t limit;
	uint32_t base;
} __attribute__((packed));

/* boot.S loads CPU 0's GDT with this before any C runs. */
const struct dtr hv_gdt_desc = {
	sizeof(pcpu_tables[0].gdt) - 1, (uint32_t)pcpu_tables[0].gdt
};

extern char trap_stubs[], boot_stack_top[], boot_df_stack[];
extern void df_task_entry(void);

static uint64_t tss_descriptor(struct tss *t)
{
	uint32_t base = (uint32_t)t, limit = sizeof(*t) - 1;

	return (uint64_t)(limit & 0xffff) |
	       ((uint64_t)(base & 0xffffff) << 16) |
	       (0x89ull << 40) |			/* present, 32-bit TSS, available */
	       ((uint64_t)((limit >> 16) & 0xf) << 48) |
	       ((uint64_t)(base >> 24) << 56);
}

static uint64_t interrupt_gate(uint32_t offset)
{
	return (uint64_t)(offset & 0xffff) |
	       ((uint64_t)HV_CS << 16) |
	       (0x8eull << 40) |			/* present, DPL 0, 32-bit interrupt gate */
	       ((uint64_t)(offset >> 16) << 48);
}

static uint64_t task_gate(uint16_t tss_selector)
{
	return ((uint64_t)tss_selector << 16) | (0x85ull << 40);
}

uint32_t trap_stub_address(unsigned vector)
{
	return (uint32_t)trap_stubs + vector * 16;
}

void cpu_tables_set_cr3(uint32_t cr3)
{
	struct pcpu_tables *t = pcpu_tables_of(this_pcpu());

	t->df_tss.cr3 = cr3;
	t->hv_cr3 = cr3;	/* trap_common loads it on a trap from a guest */
}

void cpu_tables_set_ring0_stack(uint32_t esp0)
{
	pcpu_tables_of(this_pcpu())->tss.esp0 = esp0;
}

/* The VMI hypercall gate: DPL 1, so the guest kernel (ring 1) may use
 * it and ring 3 gets #GP; an interrupt gate, so we enter with IF clear. */
void cpu_tables_install_hypercall_gate(unsigned vector)
{
	pcpu_tables_of(this_pcpu())->idt[vector] = interrupt_gate(trap_stub_address(vector)) | (1ull << 45);
}

/* A guest's system-call gate (vcpu_syscall.c checked sel and ss1: ring
 * 1, never ours).  A trap gate: the real IF stays 1 in the guest. */
void cpu_tables_set_direct_gate(unsigned n, uint16_t sel, uint32_t offset, uint32_t ss1, uint32_t esp1)
{
	struct pcpu_tables *t = pcpu_tables_of(this_pcpu());

	HV_ASSERT((sel & 3) == 1 && (ss1 & 3) == 1);
	t->idt[n] = (uint64_t)(offset & 0xffff) | ((uint64_t)sel << 16) |
		    (0xefull << 40) |			/* present, DPL 3, 32-bit trap gate */
		    ((uint64_t)(offset >> 16) << 48);
	t->tss.ss1 = ss1;
	t->tss.esp1 = esp1;
}

void cpu_tables_clear_direct_gate(unsigned n)
{
	struct pcpu_tables *t = pcpu_tables_of(this_pcpu());

	t->idt[n] = interrupt_gate(trap_stub_address(n));
	t->tss.ss1 = t->tss.esp1 = 0;
}

/* CPU c's GDT, TSSes and IDT, loaded: the hypervisor's code and data
 * segments, its TSS (ring-0 stack stack_top until a vCPU runs), the
 * double-fault task on a stack of its own (a #DF often means the main
 * stack is unusable), every vector to its stub, #DF to the task. */
void cpu_tables_init_cpu(struct pcpu *c, uint32_t stack_top, uint32_t df_stack_top)
{
	struct pcpu_tables *t = pcpu_tables_of(c);
	struct dtr gdtr = { sizeof(t->gdt) - 1, (uint32_t)t->gdt };
	struct dtr idtr = { sizeof(t->idt) - 1, (uint32_t)t->idt };

	__asm__ volatile("lgdt %0" : : "m"(gdtr));

	/* ss0:esp0 is where the CPU switches stacks on a trap from ring 1 or
	 * 3.  No guest runs yet; vcpu_init points it at the per-vCPU page.  No
	 * I/O bitmap (iomap_base beyond the limit): with IOPL 0, every port
	 * access from ring 1 or 3 traps. */
	c->host_stack_top = stack_top;
	t->tss.ss0 = HV_DS;
	t->tss.esp0 = c->host_stack_top;
	t->tss.iomap_base = sizeof(struct tss);

	t->df_tss.eip = (uint32_t)df_task_entry;
	t->df_tss.esp = df_stack_top;
	t->df_tss.cs = HV_CS;
	t->df_tss.ds = t->df_tss.es = t->df_tss.ss = HV_DS;
	t->df_tss.fs = t->df_tss.gs = HV_DS;
	t->df_tss.eflags = 0x2;			/* interrupts off */
	t->df_tss.cr3 = read_cr3();
	t->hv_cr3 = read_cr3();
	t->df_tss.iomap_base = sizeof(struct tss);

	t->gdt[HV_GDT_TSS_INDEX] = tss_descriptor(&t->tss);
	t->gdt[HV_GDT_DFTSS_INDEX] = tss_descriptor(&t->df_tss);
	__asm__ volatile("ltr %w0" : : "r"(HV_TSS_SEL));

	for (unsigned v = 0; v < 256; v++)
		t->idt[v] = interrupt_gate(trap_stub_address(v));
	t->idt[8] = task_gate(HV_DFTSS_SEL);
	__asm__ volatile("lidt %0" : : "m"(idtr));
}

/* The boot CPU's, on boot.S's stacks (which it claimed for pcpus[0]). */
void cpu_tables_init(void)
{
	struct pcpu *c = &pcpus[0];

	c->index = 0;
	cpu_tables_init_cpu(c, (uint32_t)boot_stack_top,
			    pcpu_stack_claim(c, boot_df_stack));
}
