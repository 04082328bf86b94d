/*
 * cpu_tables.c - the hypervisor's GDT, IDT and TSSes.
 *
 * All of them live in the switcher (section .switcher.data), because the
 * CPU reads them while a guest's page tables are loaded, when an
 * interrupt or exception leaves the guest.
 */
#include "traps.h"
#include "segments.h"
#include "layout.h"
#include "hvlib.h"
#include "io.h"

#define SWITCHER_DATA __attribute__((section(".switcher.data"), aligned(16)))

struct tss {
	uint32_t link, esp0, ss0, esp1, ss1, esp2, ss2;
	uint32_t cr3, eip, eflags, eax, ecx, edx, ebx, esp, ebp, esi, edi;
	uint32_t es, cs, ss, ds, fs, gs, ldt;
	uint16_t trap, iomap_base;
} __attribute__((packed));

/* Flat 4 GiB ring-0 code and data, granularity 4 KiB, 32-bit.  The
 * accessed bit is set already: the CPU would otherwise write it on the
 * first load, and a trap from a guest loads these while the guest's view
 * of the switcher (read-only, with CR0.WP) is in force. */
uint64_t hv_gdt[HV_GDT_ENTRIES] SWITCHER_DATA = {
	[HV_GDT_CS_INDEX] = 0x00cf9b000000ffffull,
	[HV_GDT_DS_INDEX] = 0x00cf93000000ffffull,
};

struct dtr {
	uint16_t limit;
	uint32_t base;
} __attribute__((packed));

/* boot.S loads this before any C runs. */
const struct dtr hv_gdt_desc = {
	sizeof(hv_gdt) - 1, (uint32_t)hv_gdt
};

static uint64_t hv_idt[256] SWITCHER_DATA;
struct tss hv_tss SWITCHER_DATA;
struct tss hv_df_tss SWITCHER_DATA;

extern char trap_stubs[], boot_stack_top[];
extern uint32_t switcher_hv_cr3;
extern void df_task_entry(void);

/* The double-fault task's own stack: a #DF often means the main stack
 * is unusable. */
static uint8_t df_stack[8192] __attribute__((aligned(16)));

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
	hv_df_tss.cr3 = cr3;
	switcher_hv_cr3 = cr3;	/* trap_common loads it on a trap from a guest */
}

void cpu_tables_set_ring0_stack(uint32_t esp0)
{
	hv_tss.esp0 = esp0;
}

/* The VMI hypercall gate: DPL 1, so the guest kernel (ring 1) may use
 * it and ring 3 gets #GP; an interrupt gate, so we enter with IF clear. */
void cpu_tables_install_hypercall_gate(unsigned vector)
{
	hv_idt[vector] = interrupt_gate(trap_stub_address(vector)) | (1ull << 45);
}

void cpu_tables_init(void)
{
	struct dtr idtr = { sizeof(hv_idt) - 1, (uint32_t)hv_idt };

	/* ss0:esp0 is where the CPU switches stacks on a trap from ring 1 or
	 * 3.  No guest runs yet; vcpu_init points it at the per-vCPU page.  No
	 * I/O bitmap (iomap_base beyond the limit): with IOPL 0, every port
	 * access from ring 1 or 3 traps. */
	hv_tss.ss0 = HV_DS;
	hv_tss.esp0 = (uint32_t)boot_stack_top;
	hv_tss.iomap_base = sizeof(struct tss);

	hv_df_tss.eip = (uint32_t)df_task_entry;
	hv_df_tss.esp = (uint32_t)(df_stack + sizeof(df_stack));
	hv_df_tss.cs = HV_CS;
	hv_df_tss.ds = hv_df_tss.es = hv_df_tss.ss = HV_DS;
	hv_df_tss.fs = hv_df_tss.gs = HV_DS;
	hv_df_tss.eflags = 0x2;			/* interrupts off */
	hv_df_tss.cr3 = read_cr3();
	switcher_hv_cr3 = read_cr3();
	hv_df_tss.iomap_base = sizeof(struct tss);

	hv_gdt[HV_GDT_TSS_INDEX] = tss_descriptor(&hv_tss);
	hv_gdt[HV_GDT_DFTSS_INDEX] = tss_descriptor(&hv_df_tss);
	__asm__ volatile("ltr %w0" : : "r"(HV_TSS_SEL));

	for (unsigned v = 0; v < 256; v++)
		hv_idt[v] = interrupt_gate(trap_stub_address(v));
	hv_idt[8] = task_gate(HV_DFTSS_SEL);
	__asm__ volatile("lidt %0" : : "m"(idtr));
}
