/*
 * tguest_smp_mmu.c - tguest=smpmmu (vcpus=2): two vCPUs of one guest on
 * page directories of their own after VMI activation (docs/HV.md, "A
 * guest of several vCPUs").
 *
 * vCPU 0 identity-maps the first 16 MiB through four page tables, turns
 * paging on, activates VMI, announces two directories A and B (clones of
 * the identity map's PDEs 0-3) whose PDE 8 maps linear 32 MiB (LIN) to a
 * page of their own through a table of their own, marked MARK + 0 and
 * MARK + 1, and loads A.  It starts vCPU 1 on B (SetInitialAPState with
 * paging on).  Then both, for ROUNDS rounds, switch CR3 between A and B
 * in opposite phase and read LIN after each switch: each must read the
 * mark of the directory it loaded, whatever the other vCPU loaded
 * meanwhile.  Rounds in which the other vCPU ran between one's CR3 load
 * and its read are counted (interleaved): the test needs some.  vCPU 0
 * prints the mismatches and then, with smpmmu_final=release, releases B
 * while vCPU 1 still has it loaded (the hypervisor must stop the guest);
 * otherwise it powers off.  With smpmmu_cr3=bad it first tries to start
 * vCPU 1 on a CR3 naming one of its page tables and on one outside its
 * memory (both refused: a foreign CR3).
 */
#include <stdint.h>
#include "tguest.h"
#include "vmi_abi.h"

#define PTE_P	0x001u
#define PTE_W	0x002u
#define PTE_A	0x020u
#define PTE_D	0x040u
#define PAGE __attribute__((aligned(4096)))

#define LIN	0x02000000u	/* PDE 8 */
#define MARK	0x5a5a0000u
#define ROUNDS	2000u
#define CR0_PG_WP_PE_ET 0x80010011u

static uint32_t id_pt[4][1024] PAGE;
static uint32_t base_pd[1024] PAGE;
static uint32_t dir[2][1024] PAGE;
static uint32_t table[2][1024] PAGE;
static uint32_t page[2][1024] PAGE;

static volatile uint32_t bad[2], interleaved[2], done[2], last_runner;

static uint32_t hc(uint32_t call, uint32_t a, uint32_t d, uint32_t c, uint32_t b, uint32_t s)
{
	__asm__ volatile("int $0x82" : "+a"(a), "+d"(d), "+c"(c), "+b"(b), "+S"(s)
			 : "D"(call) : "memory", "cc");
	return a;
}

static uint32_t pfn(const void *p)
{
	return (uint32_t)p >> 12;
}

/* vCPU k's rounds: CR3 to A or B, a pause (a slice may end here), the
 * read through the directory it loaded. */
static void rounds(uint32_t k)
{
	for (uint32_t r = 0; r < ROUNDS; r++) {
		uint32_t which = (r + k) & 1, seen;

		hc(VMI_CALL_SetCR3, (uint32_t)dir[which], 0, 0, 0, 0);
		last_runner = k;
		for (volatile unsigned spin = 0; spin < 20000; spin++)
			;
		seen = *(volatile uint32_t *)LIN;
		if (seen != MARK + which)
			bad[k]++;
		if (last_runner != k)
			interleaved[k]++;
	}
	done[k] = 1;
}

static void ap_rounds(uint32_t id)
{
	rounds(id);
	for (;;)
		hc(VMI_CALL_Halt, 0, 0, 0, 0, 0);
}

static void set_up(void)
{
	uint32_t cr0;

	for (unsigned t = 0; t < 4; t++)
		for (unsigned i = 0; i < 1024; i++)
			id_pt[t][i] = (t << 22 | i << 12) | PTE_P | PTE_W | PTE_A | PTE_D;
	for (unsigned t = 0; t < 4; t++)
		base_pd[t] = (uint32_t)id_pt[t] | PTE_P | PTE_W | PTE_A;
	for (unsigned d = 0; d < 2; d++) {
		page[d][0] = MARK + d;
		table[d][0] = (uint32_t)page[d] | PTE_P | PTE_W | PTE_A | PTE_D;
		for (unsigned t = 0; t < 4; t++)
			dir[d][t] = base_pd[t];
		dir[d][LIN >> 22] = (uint32_t)table[d] | PTE_P | PTE_W | PTE_A;
	}
	__asm__ volatile("movl %0, %%cr3" : : "r"(base_pd));
	__asm__ volatile("movl %%cr0, %0" : "=r"(cr0));
	__asm__ volatile("movl %0, %%cr0" : : "r"(cr0 | 0x80010000u));	/* PG, WP */
	hc(VMI_CALL_Init, 0, 0, 0, 0, 0);
	for (unsigned d = 0; d < 2; d++)
		hc(VMI_CALL_AllocatePage, pfn(table[d]), VMI_PAGE_PT, 0, 0, 0);
	for (unsigned d = 0; d < 2; d++)
		hc(VMI_CALL_AllocatePage, pfn(dir[d]), VMI_PAGE_PD, pfn(base_pd), 0, 4);
	hc(VMI_CALL_SetCR3, (uint32_t)dir[0], 0, 0, 0, 0);
}

int smp_mmu_main(const char *cmdline)
{
	uint32_t spins = 0;

	if (!has_word(cmdline, "tguest=smpmmu"))
		return 0;
	set_up();
	say_value("tguest: smpmmu: ", "read through A on vCPU 0", *(volatile uint32_t *)LIN);
	if (has_word(cmdline, "smpmmu_cr3=bad")) {
		say_value("tguest: smpmmu: garbage ", "CR3 a page table",
			  smp_start_ap(1, ap_rounds, CR0_PG_WP_PE_ET, (uint32_t)table[1]));
		say_value("tguest: smpmmu: garbage ", "CR3 outside guest memory",
			  smp_start_ap(1, ap_rounds, CR0_PG_WP_PE_ET, 0xfff00000u));
	}
	say_value("tguest: smpmmu: ", "SetInitialAPState on B",
		  smp_start_ap(1, ap_rounds, CR0_PG_WP_PE_ET, (uint32_t)dir[1]));
	rounds(0);
	while (!done[1] && ++spins < 100000000u)
		__asm__ volatile("pause");
	say_value("tguest: smpmmu: ", "vCPU 1 done", done[1]);
	say_value("tguest: smpmmu: ", "vCPU 0 wrong reads", bad[0]);
	say_value("tguest: smpmmu: ", "vCPU 1 wrong reads", bad[1]);
	say_value("tguest: smpmmu: ", "interleaved rounds", interleaved[0] + interleaved[1]);
	if (has_word(cmdline, "smpmmu_final=release")) {
		/* vCPU 1's last round loaded A or B; vCPU 0 loads the other. */
		uint32_t theirs = (ROUNDS - 1 + 1) & 1;

		hc(VMI_CALL_SetCR3, (uint32_t)dir[!theirs], 0, 0, 0, 0);
		say_value("tguest: smpmmu: ", "releasing vCPU 1's directory", pfn(dir[theirs]));
		hc(VMI_CALL_ReleasePage, pfn(dir[theirs]), VMI_PAGE_PD, 0, 0, 0);
		say_value("tguest: smpmmu: ", "still running after the release", 1);
	}
	hc(VMI_CALL_Shutdown, 0, 0, 0, 0, 0);
	return 1;
}
