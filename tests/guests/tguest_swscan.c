/*
 * tguest_swscan.c - tguest=swscan: what of the switcher a guest kernel
 * (ring 1) can read (tests/cases/test_hv_switcher_view.py).
 *
 * Paging on (the first 16 MiB identity-mapped with 4 MiB pages, PDE 1023
 * absent: the hypervisor's), an IDT of its own whose #PF handler skips
 * the faulting read, so that a page the hypervisor does not map in our
 * view is a #PF we count, not an end.  Then SWSCAN_ROUNDS rounds, each
 * reading the first word of every page of the switcher (PDE 1023,
 * 0xFFC00000 up) and printing
 *     swscan: readable A-B on G       each run of pages readable on G
 *     swscan: tables P tss T on G     each page holding a CPU's GDT
 *     swscan: round R gdt G readable N tables K other-cpu O moves M
 * G is the GDT base sgdt gives (the real GDTR: sgdt does not trap
 * without UMIP), which names the CPU we run on; each page is read with
 * the same G before and after, else again (and again after a fault, see
 * probe).  A page holding a CPU's GDT
 * is recognised by the hypervisor's code and data descriptors at their
 * slots; whose it is, by the base of the TSS descriptor in it (each
 * CPU's TSS sits beside its GDT): one whose TSS is not on G's page is
 * another CPU's.  M counts the probes that found the vCPU on another CPU
 * than the probe before.
 * Between rounds it spins a while so that the scheduler may move it to
 * another CPU; after SWSCAN_ROUNDS rounds it goes on, up to
 * SWSCAN_MAX_ROUNDS, until it has seen itself on another CPU (a move
 * during a scan, or a round started elsewhere), so that a scan across a
 * move is seen.  Then Shutdown.
 */
#include <stdint.h>
#include "tguest.h"
#include "vmi_abi.h"
#include "segments.h"

#define SWSCAN_ROUNDS 6
#define SWSCAN_MAX_ROUNDS 40
#define SW_BASE 0xffc00000u
#define SW_PAGES 1024u
#define HV_CODE_DESC 0x00cf9b000000ffffull
#define HV_DATA_DESC 0x00cf93000000ffffull

static uint32_t sw_pd[1024] __attribute__((aligned(4096)));
static uint64_t sw_idt[32];
static volatile uint32_t sw_faults;
void sw_pf_entry(void);
uint32_t sw_read(uint32_t addr);
/* sw_read's movl (%ecx), %eax is 2 bytes: the handler resumes after it
 * with eax = 0 and counts the fault. */
__asm__(".text\n"
	"sw_read:\n"
	"	movl 4(%esp), %ecx\n"
	"	xorl %eax, %eax\n"
	"	movl (%ecx), %eax\n"
	"	ret\n"
	"sw_pf_entry:\n"
	"	incl sw_faults\n"
	"	addl $4, %esp\n"		/* the error code */
	"	addl $2, (%esp)\n"
	"	iret\n");

struct __attribute__((packed)) sw_dtr { uint16_t limit; uint32_t base; };

static void paging_and_idt(void)
{
	uint32_t off = (uint32_t)sw_pf_entry, cr0;
	struct sw_dtr d = { sizeof(sw_idt) - 1, (uint32_t)sw_idt };

	sw_idt[14] = (uint64_t)(off & 0xffff) | (0x10ull << 16) | (0x8eull << 40) |
		     ((uint64_t)(off >> 16) << 48);
	__asm__ volatile("lidt %0" : : "m"(d));
	for (uint32_t i = 0; i < 4; i++)
		sw_pd[i] = (i << 22) | 0x83;	/* P, W, PS */
	__asm__ volatile("movl %%cr4, %%eax; orl $0x10, %%eax; movl %%eax, %%cr4" ::: "eax");
	__asm__ volatile("movl %0, %%cr3" : : "r"(sw_pd));
	__asm__ volatile("movl %%cr0, %0" : "=r"(cr0));
	__asm__ volatile("movl %0, %%cr0" : : "r"(cr0 | 0x80010000u));
}

static uint32_t own_gdt(void)
{
	struct sw_dtr d;

	__asm__ volatile("sgdt %0" : "=m"(d));
	return d.base;
}

static uint32_t desc_base(uint64_t d)
{
	return (uint32_t)((d >> 16) & 0xffffff) | (uint32_t)(d >> 56) << 24;
}

/* The base of the TSS descriptor of a CPU's GDT in this (readable) page,
 * 1 if the page holds no GDT of the hypervisor's. */
static uint32_t tables_tss(uint32_t page)
{
	const volatile uint64_t *q = (const volatile uint64_t *)page;

	for (uint32_t g = 0; g + HV_GDT_ENTRIES <= 512; g++)
		if (q[g + HV_GDT_CS_INDEX] == HV_CODE_DESC && q[g + HV_GDT_DS_INDEX] == HV_DATA_DESC)
			return desc_base(q[g + HV_GDT_TSS_INDEX]);
	return 1;
}

static void say_range(uint32_t first, uint32_t end, uint32_t gdt)
{
	puts("swscan: readable ");
	puthex(first);
	puts("-");
	puthex(end - 1);
	puts(" on ");
	puthex(gdt);
	puts("\n");
}

/* Read page; *gdt is the CPU it was read on (the same GDT before and
 * after: a move in between reads it again); *tss its TSS descriptor's
 * base if it holds a CPU's GDT, else 1.  Returns 0 if not mapped.  A
 * read that faults is an exit, where the vCPU may move to another CPU
 * and back before the GDT is read again; so a fault is believed only
 * the third time. */
static int probe(uint32_t page, uint32_t *gdt, uint32_t *tss)
{
	for (unsigned faults = 0;;) {
		uint32_t before = sw_faults, g = own_gdt();
		int readable;

		(void)sw_read(page);
		readable = sw_faults == before;
		*tss = readable ? tables_tss(page) : 1;
		if (own_gdt() != g || (!readable && ++faults < 3))
			continue;
		*gdt = g;
		return readable;
	}
}

/* One pass over the switcher: each run of readable pages read on one
 * CPU, each page with a CPU's GDT, then the round's counts. */
static uint32_t scan(uint32_t round)
{
	uint32_t start = own_gdt(), last = start, moves = 0;
	uint32_t readable = 0, tables = 0, other = 0, run = 0, run_gdt = 0;

	for (uint32_t p = 0; p <= SW_PAGES; p++) {
		uint32_t page = SW_BASE + p * 4096u, gdt = last, tss = 1;
		int ok = p < SW_PAGES && probe(page, &gdt, &tss);

		moves += gdt != last;
		last = gdt;

		if (run && (!ok || gdt != run_gdt)) {
			say_range(run, page, run_gdt);
			run = 0;
		}
		if (!ok)
			continue;
		readable++;
		if (!run)
			run = page, run_gdt = gdt;
		if (tss == 1)
			continue;
		tables++;
		if ((tss & ~0xfffu) != (gdt & ~0xfffu))
			other++;
		puts("swscan: tables ");
		puthex(page);
		puts(" tss ");
		puthex(tss);
		puts(" on ");
		puthex(gdt);
		puts("\n");
	}
	puts("swscan: round ");
	puthex(round);
	puts(" gdt ");
	puthex(start);
	puts(" readable ");
	puthex(readable);
	puts(" tables ");
	puthex(tables);
	puts(" other-cpu ");
	puthex(other);
	puts(" moves ");
	puthex(moves);
	puts("\n");
	return moves;
}

int swscan_main(const char *cmdline)
{
	uint32_t moved = 0, first;

	if (!has_word(cmdline, "tguest=swscan"))
		return 0;
	paging_and_idt();
	first = own_gdt();
	for (uint32_t r = 0; r < SWSCAN_MAX_ROUNDS && (r < SWSCAN_ROUNDS || !moved); r++) {
		moved += scan(r) + (own_gdt() != first);
		for (volatile uint32_t i = 0; i < 3000000; i++)
			;
	}
	puts("swscan: done\n");
	vmi_call5(VMI_CALL_Shutdown, 0, 0, 0, 0, 0);
	for (;;)
		;
}
