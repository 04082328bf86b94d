/*
 * tguest_smp_queue.c - tguest=smpq (vcpus=2 vcpus_at_once=on): a
 * page-table write queued in one vCPU's shared page must reach the
 * shadows before another vCPU relies on them (docs/VROM.md, "Queues of
 * several vCPUs").
 *
 * Directory D maps linear 32 MiB (LIN) through table T to page 0 (MARK +
 * 0); directory A maps only the identity-mapped first 16 MiB.  vCPU 0 runs
 * on A (so D is not loaded there), vCPU 1 starts on D and reads LIN.  Then
 * three phases k = 1, 2, 3: vCPU 0 points T's entry at page k (MARK + k)
 * through the ROM's SwapPxE (written and queued in vCPU 0's shared page,
 * no exit), as Linux narrows an entry of an mm it does not run (page
 * migration, reclaim), then spins without an exit until vCPU 1 has read
 * LIN after:
 *   1. SetCR3 of D (vCPU 1 had left D for A: D loaded nowhere meanwhile);
 *   2. the ROM's FlushTLB, vCPU 1's own queue empty (a task that queued
 *      on one CPU and flushes on another);
 *   3. the ROM's InvalPage of LIN, likewise.
 * Each read must be MARK + k: the old frame means vCPU 1 ran on a shadow
 * that vCPU 0's queued write had not reached.  vCPU 0 also reports
 * whether its queue still held the write when vCPU 1 read (it must not:
 * with it still there, vCPU 1 cannot have seen it applied).
 *
 * Phase 4, lifecycle calls in two queues: vCPU 1 leaves D for A; vCPU 0
 * releases D through the ROM (queued), as Linux's pgd_free, and spins;
 * vCPU 1 announces D again through the ROM (queued: the frame reused as
 * a new process's directory) and loads it.  The release must be applied
 * first: applied after, it would find D loaded ("ReleasePage: page
 * directory ... is loaded in CR3", the guest stopped).  vCPU 1 reads LIN
 * through D (MARK + 3) and stays on D while vCPU 0 exits.
 */
#include <stdint.h>
#include "tguest.h"
#include "vmi_abi.h"

#define PTE_P	0x001u
#define PTE_W	0x002u
#define PTE_A	0x020u
#define PTE_D	0x040u
#define PTE_FLAGS (PTE_P | PTE_W | PTE_A | PTE_D)
#define PAGE __attribute__((aligned(4096)))

#define LIN	0x02000000u	/* PDE 8 */
#define MARK	0x5a5a0000u
#define PHASES	3u
#define LIFE	(PHASES + 1)	/* the lifecycle phase */
#define CR0_PG_WP_PE_ET 0x80010011u
#define SPIN_LIMIT 400000000u

static uint32_t id_pt[4][1024] PAGE;
static uint32_t base_pd[1024] PAGE;
static uint32_t dir_a[1024] PAGE, dir_d[1024] PAGE;
static uint32_t table_t[1024] PAGE;
static uint32_t pages[PHASES + 1][1024] PAGE;

static volatile uint32_t ready, queued, answered, answer[LIFE + 1], held[LIFE + 1];

static uint32_t hc5(uint32_t call, uint32_t a, uint32_t d, uint32_t c, uint32_t b, uint32_t s)
{
	__asm__ volatile("int $0x82" : "+a"(a), "+d"(d), "+c"(c), "+b"(b), "+S"(s)
			 : "D"(call) : "memory", "cc");
	return a;
}

static uint32_t hc(uint32_t call, uint32_t a, uint32_t d)
{
	return hc5(call, a, d, 0, 0, 0);
}

/* A ROM slot (the ROM at guest-physical 0xC0000, identity-mapped). */
static uint32_t rom(uint32_t call, uint32_t a, uint32_t d)
{
	uint32_t fn = 0xc0000u + call * 32, c = 0;

	__asm__ volatile("call *%3" : "+a"(a), "+d"(d), "+c"(c) : "r"(fn) : "memory", "cc");
	return a;
}

/* The ROM's AllocatePage: its last two arguments on the stack. */
static void rom_allocate(uint32_t ppn, uint32_t flags, uint32_t orig, uint32_t base, uint32_t count)
{
	uint32_t fn = 0xc0000u + VMI_CALL_AllocatePage * 32;

	__asm__ volatile("pushl %5\n\tpushl %4\n\tcall *%3\n\taddl $8, %%esp"
			 : "+a"(ppn), "+d"(flags), "+c"(orig) : "r"(fn), "r"(base), "r"(count) : "memory", "cc");
}

static uint32_t pfn(const void *p)
{
	return (uint32_t)p >> 12;
}

static uint32_t own_queue_count(void)
{
	uint32_t page = *(const volatile uint32_t *)(0xc0000u + VMI_OFF_VROMHeader_reserved3);

	return *(const volatile uint32_t *)(page + VMI_OFF_vmi_shared_page_pxe_count);
}

static void wait_for(volatile uint32_t *word, uint32_t value)
{
	for (uint32_t spins = 0; *word < value && spins < SPIN_LIMIT; spins++)
		__asm__ volatile("pause");
}

static uint32_t read_lin(void)
{
	return *(volatile uint32_t *)LIN;
}

/* vCPU 1: one read of LIN on D, then each phase's way of relying on it. */
static void relier(uint32_t id)
{
	(void)id;
	answer[0] = read_lin();		/* D's shadow entry for LIN filled */
	hc(VMI_CALL_SetCR3, (uint32_t)dir_a, 0);
	ready = 1;
	for (uint32_t k = 1; k <= PHASES; k++) {
		wait_for(&queued, k);
		if (k == 1)
			hc(VMI_CALL_SetCR3, (uint32_t)dir_d, 0);
		else if (k == 2)
			rom(VMI_CALL_FlushTLB, VMI_FLUSH_TLB, 0);
		else
			rom(VMI_CALL_InvalPage, LIN, 0);
		answer[k] = read_lin();
		__atomic_store_n(&answered, k, __ATOMIC_SEQ_CST);
		/* The shadow entry for the next phase: filled, whatever it says. */
		(void)read_lin();
		__atomic_store_n(&ready, k + 1, __ATOMIC_SEQ_CST);
	}
	hc(VMI_CALL_SetCR3, (uint32_t)dir_a, 0);
	__atomic_store_n(&ready, LIFE, __ATOMIC_SEQ_CST);
	wait_for(&queued, LIFE);
	rom_allocate(pfn(dir_d), VMI_PAGE_PD, pfn(base_pd), 0, 4);
	hc(VMI_CALL_SetCR3, (uint32_t)dir_d, 0);
	answer[LIFE] = read_lin();
	__atomic_store_n(&answered, LIFE, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ready, LIFE + 1, __ATOMIC_SEQ_CST);
	for (;;)
		hc(VMI_CALL_Halt, 0, 0);
}

static void set_up(void)
{
	uint32_t cr0;

	for (unsigned t = 0; t < 4; t++)
		for (unsigned i = 0; i < 1024; i++)
			id_pt[t][i] = (t << 22 | i << 12) | PTE_FLAGS;
	for (unsigned t = 0; t < 4; t++)
		dir_a[t] = dir_d[t] = base_pd[t] = (uint32_t)id_pt[t] | PTE_P | PTE_W | PTE_A;
	for (unsigned k = 0; k <= PHASES; k++)
		pages[k][0] = MARK + k;
	table_t[0] = (uint32_t)pages[0] | PTE_FLAGS;
	dir_d[LIN >> 22] = (uint32_t)table_t | PTE_P | PTE_W | PTE_A;
	__asm__ volatile("movl %0, %%cr3" : : "r"(base_pd));
	__asm__ volatile("movl %%cr0, %0" : "=r"(cr0));
	__asm__ volatile("movl %0, %%cr0" : : "r"(cr0 | 0x80010000u));	/* PG, WP */
	hc(VMI_CALL_Init, 0, 0);
	hc(VMI_CALL_AllocatePage, pfn(table_t), VMI_PAGE_PT);
	hc5(VMI_CALL_AllocatePage, pfn(dir_a), VMI_PAGE_PD, pfn(base_pd), 0, 4);
	hc5(VMI_CALL_AllocatePage, pfn(dir_d), VMI_PAGE_PD, pfn(base_pd), 0, 4);
	hc(VMI_CALL_SetCR3, (uint32_t)dir_a, 0);
}

static const char *const phase_name[LIFE + 1] = {
	"read on D before the phases",
	"read after SetCR3 of D",
	"read after the ROM's FlushTLB",
	"read after the ROM's InvalPage",
	"read after D released here, announced and loaded there",
};

int smp_queue_main(const char *cmdline)
{
	if (!has_word(cmdline, "tguest=smpq"))
		return 0;
	set_up();
	say_value("tguest: smpq: ", "SetInitialAPState on D",
		  smp_start_ap(1, relier, CR0_PG_WP_PE_ET, (uint32_t)dir_d));
	wait_for(&ready, 1);
	say_value("tguest: smpq: ", phase_name[0], answer[0]);
	for (uint32_t k = 1; k <= PHASES; k++) {
		wait_for(&ready, k);
		rom(VMI_CALL_SwapPxE, (uint32_t)&table_t[0], (uint32_t)pages[k] | PTE_FLAGS);
		__atomic_store_n(&queued, k, __ATOMIC_SEQ_CST);
		wait_for(&answered, k);		/* no exit: the write stays queued here */
		held[k] = own_queue_count();
		say_value("tguest: smpq: ", phase_name[k], answer[k]);	/* exits */
	}
	wait_for(&ready, LIFE);
	rom(VMI_CALL_ReleasePage, pfn(dir_d), VMI_PAGE_PD);
	__atomic_store_n(&queued, LIFE, __ATOMIC_SEQ_CST);
	wait_for(&answered, LIFE);
	held[LIFE] = own_queue_count();
	/* vCPU 1 is on D now: this exit would apply a release still queued. */
	say_value("tguest: smpq: ", phase_name[LIFE], answer[LIFE]);
	wait_for(&ready, LIFE + 1);
	for (uint32_t k = 1; k <= LIFE; k++)
		say_value("tguest: smpq: still queued at the ", phase_name[k], held[k]);
	hc(VMI_CALL_Shutdown, 0, 0);
	return 1;
}
