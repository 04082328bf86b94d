/*
 * tguest_smp_mmu.c - tguest=smpmmu (vcpus=2): two vCPUs of one guest on
 * page directories of their own after VMI activation (docs/SMP.md, "A
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
 *
 * tguest=smpmmu smpmmu_remap (vcpus=2 vcpus_at_once=on: the two vCPUs run
 * at once): both run on directory A.  vCPU 0 reads LIN in a loop; vCPU 1,
 * GENERATIONS times, builds the other of two page tables mapping LIN to
 * the other of two pages, marked MARK + generation, announces it, points
 * A's PDE 8 at it (SetPxE), releases the table vCPU 0 was reading
 * through (ReleasePage), then scribbles over that table and page (POISON:
 * they are no longer page tables or mapped) and publishes the
 * generation.  Every value vCPU 0 reads must be the mark of a generation
 * published around its read: POISON, or an older mark, is a stale TLB
 * entry on vCPU 0's CPU that the hypervisor left there.  With smpmmu_rom
 * vCPU 1 makes SetPxE and ReleasePage through the ROM (written and
 * queued in its shared page, no exit), then FlushTLB through the ROM, as
 * a guest must before it reuses a page it unmapped (the ROM makes that
 * call an exit while its queue holds entries, and the exit drains it).
 *
 * tguest=smpmmu smpmmu_trim=N (vcpus=2, before VMI Init: both vCPUs on
 * their virtual TLBs): a directory maps each 4 MiB region of PDEs
 * 4-1007 through one table to one page (MARK), so each region a vCPU
 * touches costs its vTLB one table from the guest's frame budget.  vCPU
 * 1 touches all 1004 and then reads them in a loop without an exit;
 * vCPU 0 touches N (the test computes N from the budget so that fewer
 * than the LDT copy's 16 frames are left), then loads an LDT: its copy
 * finds the budget spent and the caches are trimmed, vCPU 1's vTLB with
 * them, while vCPU 1 may be running on it on another CPU.  vCPU 1's
 * reads must all read MARK; the test reads the shootdowns in the report.
 *
 * tguest=smpmmu smpmmu_sparse (vcpus=3, after VMI Init): three
 * directories, each linking SPARSE_TABLES page tables of its own (PDEs
 * 4-743, each region one page, MARK + the directory's number), as three
 * processes that touch one page in every 4 MiB of ~3 GiB.  vCPU k loads
 * directory k and reads all its regions SPARSE_ROUNDS times, the three at
 * once: together they link more tables than the guest's frame budget
 * holds, every one of them in a loaded directory.
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
#define POISON	0xdeadbeefu
#define GENERATIONS 3000u

static uint32_t id_pt[4][1024] PAGE;
static uint32_t base_pd[1024] PAGE;
static uint32_t dir[2][1024] PAGE;
static uint32_t table[2][1024] PAGE;
static uint32_t page[2][1024] PAGE;

static uint32_t poison_page[1024] PAGE;
static volatile uint32_t bad[2], interleaved[2], done[2], last_runner, begun;
static volatile uint32_t generation, remap_reads, remap_stale, remap_poison;

static uint32_t hc(uint32_t call, uint32_t a, uint32_t d, uint32_t c, uint32_t b, uint32_t s)
{
	__asm__ volatile("int $0x82" : "+a"(a), "+d"(d), "+c"(c), "+b"(b), "+S"(s)
			 : "D"(call) : "memory", "cc");
	return a;
}

static int via_rom;

/* A ROM slot (the ROM at guest-physical 0xC0000, identity-mapped). */
static void rom(uint32_t call, uint32_t a, uint32_t d)
{
	uint32_t fn = 0xc0000u + call * 32, c = 0;

	__asm__ volatile("call *%3" : "+a"(a), "+d"(d), "+c"(c) : "r"(fn) : "memory", "cc");
}

static uint32_t pfn(const void *p)
{
	return (uint32_t)p >> 12;
}

/* vCPU k's rounds: CR3 to A or B, a pause (a slice may end here), the
 * read through the directory it loaded. */
static void rounds(uint32_t k)
{
	/* Both begin together: on one CPU the other is then runnable for
	 * all of them, taking turns at slice ends. */
	__atomic_fetch_add(&begun, 1, __ATOMIC_SEQ_CST);
	while (begun < 2)
		__asm__ volatile("pause");
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

/* smpmmu_ap_spins: vCPU 1 stays in guest mode after its rounds, spinning
 * without an exit, so that a stop of the guest finds it running. */
static volatile uint32_t ap_spins;

static void ap_rounds(uint32_t id)
{
	rounds(id);
	while (ap_spins)
		__asm__ volatile("pause");
	for (;;)
		hc(VMI_CALL_Halt, 0, 0, 0, 0, 0);
}

/* vCPU 1 of smpmmu_remap: table and page gen % 2 replace the other. */
static void remapper(uint32_t id)
{
	for (uint32_t g = 1; g <= GENERATIONS; g++) {
		uint32_t nw = g & 1, old = !nw;

		table[nw][0] = (uint32_t)page[nw] | PTE_P | PTE_W | PTE_A | PTE_D;
		page[nw][0] = MARK + g;
		hc(VMI_CALL_AllocatePage, pfn(table[nw]), VMI_PAGE_PT, 0, 0, 0);
		if (via_rom) {
			rom(VMI_CALL_SetPxE, (uint32_t)&dir[0][LIN >> 22],
			    (uint32_t)table[nw] | PTE_P | PTE_W | PTE_A);
			rom(VMI_CALL_ReleasePage, pfn(table[old]), VMI_PAGE_PT);
			rom(VMI_CALL_FlushTLB, VMI_FLUSH_TLB, 0);
		} else {
			hc(VMI_CALL_SetPxE, (uint32_t)&dir[0][LIN >> 22],
			   (uint32_t)table[nw] | PTE_P | PTE_W | PTE_A, 0, 0, 0);
			hc(VMI_CALL_ReleasePage, pfn(table[old]), VMI_PAGE_PT, 0, 0, 0);
		}
		table[old][0] = (uint32_t)poison_page | PTE_P | PTE_W | PTE_A | PTE_D;
		page[old][0] = POISON;
		__atomic_store_n(&generation, g, __ATOMIC_SEQ_CST);
	}
	done[id] = 1;
	for (;;)
		hc(VMI_CALL_Halt, 0, 0, 0, 0, 0);
}

/* vCPU 0 of smpmmu_remap: read LIN until vCPU 1 is done, with its
 * virtual IF set (no interrupt comes: nothing is wired to it), so that
 * the continuous audit knows it is not inside a ROM page-table call. */
static void reader(void)
{
	hc(VMI_CALL_EnableInterrupts, 0, 0, 0, 0, 0);
	while (!done[1]) {
		uint32_t before = __atomic_load_n(&generation, __ATOMIC_SEQ_CST), v, after;

		v = *(volatile uint32_t *)LIN;
		after = __atomic_load_n(&generation, __ATOMIC_SEQ_CST);
		remap_reads++;
		if (v == POISON)
			remap_poison++;
		else if (v < MARK + before || v > MARK + after + 1)
			remap_stale++;
	}
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
	poison_page[0] = POISON;
	for (unsigned d = 0; d < 2; d++)
		hc(VMI_CALL_AllocatePage, pfn(table[d]), VMI_PAGE_PT, 0, 0, 0);
	for (unsigned d = 0; d < 2; d++)
		hc(VMI_CALL_AllocatePage, pfn(dir[d]), VMI_PAGE_PD, pfn(base_pd), 0, 4);
	hc(VMI_CALL_SetCR3, (uint32_t)dir[0], 0, 0, 0, 0);
}

#define FAN_FIRST 4u		/* PDEs 4-1007: the regions of smpmmu_trim */
#define FAN_LAST 1007u

static uint32_t fan_pd[1024] PAGE;
static uint64_t trim_gdt[8] __attribute__((aligned(8)));
static uint64_t trim_ldt[2] __attribute__((aligned(8)));
static volatile uint32_t fan_filled, fan_stop, fan_bad, fan_rounds;

static uint32_t fan_read(uint32_t pde)
{
	return *(volatile uint32_t *)(pde << 22);
}

/* vCPU 1 of smpmmu_trim: every region, then round after round of them. */
static void fan_reader(uint32_t id)
{
	for (uint32_t i = FAN_FIRST; i <= FAN_LAST; i++)
		fan_bad += fan_read(i) != MARK;
	fan_filled = 1;
	while (!fan_stop) {
		for (uint32_t i = FAN_FIRST; i <= FAN_LAST; i++)
			fan_bad += fan_read(i) != MARK;
		fan_rounds++;
	}
	done[id] = 1;
	for (;;)
		hc(VMI_CALL_Halt, 0, 0, 0, 0, 0);
}

/* The LDT (selector 0x38) of a GDT like entry.S's: the copy's frames. */
static void load_an_ldt(void)
{
	extern char gdt[];
	uint32_t base = (uint32_t)trim_ldt, limit = sizeof(trim_ldt) - 1;
	struct __attribute__((packed)) { uint16_t limit; uint32_t base; } d = { sizeof(trim_gdt) - 1, (uint32_t)trim_gdt };

	for (unsigned i = 0; i < 4; i++)
		trim_gdt[i] = ((uint64_t *)gdt)[i];
	trim_gdt[7] = (limit & 0xffffu) | (uint64_t)(base & 0xffffffu) << 16 | 0x82ull << 40 |
		      (uint64_t)(base >> 24) << 56;
	trim_ldt[1] = 0x00cff2000000ffffull;	/* flat data, DPL 3 */
	__asm__ volatile("lgdt %0" : : "m"(d));
	__asm__ volatile("lldt %w0" : : "r"(0x38) : "memory");
}

static void smp_trim(uint32_t n)
{
	uint32_t bad0 = 0, spins = 0;

	for (unsigned t = 0; t < 4; t++)
		for (unsigned i = 0; i < 1024; i++)
			id_pt[t][i] = (t << 22 | i << 12) | PTE_P | PTE_W | PTE_A | PTE_D;
	page[0][0] = MARK;
	table[0][0] = (uint32_t)page[0] | PTE_P | PTE_W | PTE_A | PTE_D;
	for (unsigned t = 0; t < 4; t++)
		fan_pd[t] = (uint32_t)id_pt[t] | PTE_P | PTE_W | PTE_A;
	for (unsigned i = FAN_FIRST; i <= FAN_LAST; i++)
		fan_pd[i] = (uint32_t)table[0] | PTE_P | PTE_W | PTE_A;
	__asm__ volatile("movl %0, %%cr3" : : "r"(fan_pd));
	__asm__ volatile("movl %0, %%cr0" : : "r"(CR0_PG_WP_PE_ET));
	say_value("tguest: smpmmu: ", "SetInitialAPState on the fan directory",
		  smp_start_ap(1, fan_reader, CR0_PG_WP_PE_ET, (uint32_t)fan_pd));
	while (!fan_filled)
		__asm__ volatile("pause");
	for (uint32_t i = FAN_FIRST; i < FAN_FIRST + n && i <= FAN_LAST; i++)
		bad0 += fan_read(i) != MARK;
	load_an_ldt();
	say_value("tguest: smpmmu: ", "LDT loaded, vCPU 1 rounds so far at least one", fan_rounds > 0);
	/* vCPU 1 goes on through its trimmed vTLB for a while. */
	for (uint32_t r = fan_rounds; fan_rounds < r + 3 && ++spins < 200000000u;)
		__asm__ volatile("pause");
	fan_stop = 1;
	while (!done[1] && ++spins < 400000000u)
		__asm__ volatile("pause");
	say_value("tguest: smpmmu: ", "vCPU 1 done", done[1]);
	say_value("tguest: smpmmu: ", "vCPU 0 wrong reads", bad0);
	say_value("tguest: smpmmu: ", "vCPU 1 wrong reads", fan_bad);
	hc(VMI_CALL_Shutdown, 0, 0, 0, 0, 0);
}

#define SPARSE_TABLES 740u
#define SPARSE_ROUNDS 3u
#define SPARSE_BASE 0x400u	/* guest frames from 4 MiB: 3 directories, then their tables */

static uint32_t sparse_page[3][1024] PAGE;
static volatile uint32_t sparse_bad[3], sparse_done[3];

static uint32_t *sparse_frame(uint32_t n)
{
	return (uint32_t *)((SPARSE_BASE + n) << 12);
}

/* Directory d: the identity PDEs 0-3, then SPARSE_TABLES tables of its own. */
static void sparse_directory(uint32_t d)
{
	uint32_t *pd = sparse_frame(d);

	for (unsigned t = 0; t < 4; t++)
		pd[t] = base_pd[t];
	for (uint32_t j = 0; j < SPARSE_TABLES; j++) {
		uint32_t *pt = sparse_frame(3 + d * SPARSE_TABLES + j);

		pt[0] = (uint32_t)sparse_page[d] | PTE_P | PTE_W | PTE_A | PTE_D;
		pd[4 + j] = (uint32_t)pt | PTE_P | PTE_W | PTE_A;
	}
	sparse_page[d][0] = MARK + d;
}

static void sparse_reader(uint32_t k)
{
	for (uint32_t r = 0; r < SPARSE_ROUNDS; r++)
		for (uint32_t j = 0; j < SPARSE_TABLES; j++)
			sparse_bad[k] += *(volatile uint32_t *)((4 + j) << 22) != MARK + k;
	sparse_done[k] = 1;
	if (k)
		for (;;)
			hc(VMI_CALL_Halt, 0, 0, 0, 0, 0);
}

static void smp_sparse(void)
{
	uint32_t spins = 0;

	set_up();
	for (uint32_t d = 0; d < 3; d++)
		sparse_directory(d);
	hc(VMI_CALL_SetCR3, (uint32_t)sparse_frame(0), 0, 0, 0, 0);
	say_value("tguest: smpmmu: ", "sparse directory 0 loaded, reads", *(volatile uint32_t *)(4u << 22));
	for (uint32_t k = 1; k < 3; k++)
		say_value("tguest: smpmmu: ", "SetInitialAPState on a sparse directory",
			  smp_start_ap(k, sparse_reader, CR0_PG_WP_PE_ET, (uint32_t)sparse_frame(k)));
	sparse_reader(0);
	while (!(sparse_done[1] && sparse_done[2]) && ++spins < 400000000u)
		__asm__ volatile("pause");
	for (uint32_t k = 0; k < 3; k++)
		say_value("tguest: smpmmu: ", "sparse reader done", sparse_done[k]);
	for (uint32_t k = 0; k < 3; k++)
		say_value("tguest: smpmmu: ", "sparse reader wrong reads", sparse_bad[k]);
	hc(VMI_CALL_Shutdown, 0, 0, 0, 0, 0);
}

int smp_mmu_main(const char *cmdline)
{
	uint32_t spins = 0;

	if (!has_word(cmdline, "tguest=smpmmu"))
		return 0;
	if (cmdline_number(cmdline, "smpmmu_trim=", 0)) {
		smp_trim(cmdline_number(cmdline, "smpmmu_trim=", 0));
		return 1;
	}
	if (has_word(cmdline, "smpmmu_sparse")) {
		smp_sparse();
		return 1;
	}
	set_up();
	say_value("tguest: smpmmu: ", "read through A on vCPU 0", *(volatile uint32_t *)LIN);
	if (has_word(cmdline, "smpmmu_remap")) {
		via_rom = has_word(cmdline, "smpmmu_rom");
		/* Generation 0: A's PDE 8 -> table 0 -> page 0. */
		say_value("tguest: smpmmu: ", "SetInitialAPState on A",
			  smp_start_ap(1, remapper, CR0_PG_WP_PE_ET, (uint32_t)dir[0]));
		reader();
		say_value("tguest: smpmmu: ", "generations", generation);
		say_value("tguest: smpmmu: ", "reads at least a generation's",
			  remap_reads >= GENERATIONS);
		say_value("tguest: smpmmu: ", "poisoned reads", remap_poison);
		say_value("tguest: smpmmu: ", "stale reads", remap_stale);
		hc(VMI_CALL_Shutdown, 0, 0, 0, 0, 0);
		return 1;
	}
	if (has_word(cmdline, "smpmmu_cr3=bad")) {
		say_value("tguest: smpmmu: garbage ", "CR3 a page table",
			  smp_start_ap(1, ap_rounds, CR0_PG_WP_PE_ET, (uint32_t)table[1]));
		say_value("tguest: smpmmu: garbage ", "CR3 outside guest memory",
			  smp_start_ap(1, ap_rounds, CR0_PG_WP_PE_ET, 0xfff00000u));
	}
	ap_spins = has_word(cmdline, "smpmmu_ap_spins");
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
