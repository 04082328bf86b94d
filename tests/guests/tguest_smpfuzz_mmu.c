/*
 * tguest_smpfuzz_mmu.c - the SMP fuzzer's paravirtual MMU calls
 * (tguest=smpfuzz, tguest_smpfuzz.c), the shadow fuzzer's shapes
 * (tguest_sfuzz.c) made per vCPU.
 *
 * Every vCPU has page tables, directories, a junk page and data pages of
 * its own, and writes only those: so what it checks (SwapPxE's and the
 * TestAnd calls' old values, GetPxE, and that an access through the
 * fuzzed region, linear 32-64 MiB, faults exactly when its own tables
 * say) is not changed under it by another vCPU.  What makes it SMP: its
 * directories' PDEs may link the other vCPUs' page tables (which their
 * owners rewrite, release and announce again while it runs on them:
 * the shootdowns), all vCPUs' calls and exits interleave on the host's
 * CPUs, and interrupts (alarms, IPIs) come in between.  An access
 * through another vCPU's table is never made: its entries may name a
 * frame outside memory at any moment, which is a rule break to touch.
 *
 * PDEs 0-3 of every directory are the identity map of the first 16 MiB
 * (our code, data and every table), whichever directory is loaded.
 */
#include <stdint.h>
#include "tguest.h"
#include "tguest_smpfuzz.h"
#include "vmi_abi.h"

#define PTE_P	0x001u
#define PTE_W	0x002u
#define PTE_A	0x020u
#define PTE_D	0x040u
#define PTE_PS	0x080u

#define NPT	6		/* page tables per vCPU */
#define NPD	3		/* directories per vCPU */
#define NDATA	2		/* the only pages written through the fuzzed region */
#define FUZZ_PDE	8	/* PDEs 8..15: linear 32-64 MiB */
#define FUZZ_NPDE	8
#define TOUCH_PTES	16

#define PAGE __attribute__((aligned(4096)))
static uint32_t base_pd[1024] PAGE;
static uint32_t id_pt[4][1024] PAGE;
static uint32_t pool_pt[SFZ_MAX][NPT][1024] PAGE;
static uint32_t pool_pd[SFZ_MAX][NPD][1024] PAGE;
static uint32_t junk[SFZ_MAX][1024] PAGE;
static uint8_t data[SFZ_MAX][NDATA][4096] PAGE;

/* The #PF handler: count it for the vCPU whose stack it is on, skip the
 * 2-byte access (tguest_smpfuzz.c finds the vCPU). */
struct sfz *sfz_self(void);
void sfz_pf_handler(void);
void sfz_pf_handler(void) { sfz_add((uint32_t *)&sfz_self()->pf, 1); }

/* ---- shapes ------------------------------------------------------------ */

static uint32_t pte_frame(struct sfz *c)
{
	switch (sfz_pick(c, 12)) {
	case 0: case 1: case 2: return sfz_pfn(data[sfz_pick(c, sfz_nvcpus)][sfz_pick(c, NDATA)]);
	case 3: return sfz_pick(c, sfz_npages);
	case 4: return sfz_npages - 1;
	case 5: return sfz_npages + sfz_pick(c, 2);
	case 6: return 0xfffff - sfz_pick(c, 4);
	case 7: return 0xc0 + sfz_pick(c, 0x20);		/* the ROM area */
	case 8: return sfz_pfn(pool_pt[sfz_pick(c, SFZ_MAX)][sfz_pick(c, NPT)]);
	case 9: return sfz_pfn(pool_pd[sfz_pick(c, SFZ_MAX)][sfz_pick(c, NPD)]);
	case 10: return sfz_pfn(id_pt[sfz_pick(c, 4)]);
	default: return sfz_pick(c, 0x100);
	}
}

static uint32_t pte_flags(struct sfz *c)
{
	uint32_t f = sfz_rnd(c) & 0xfff;

	if (sfz_chance(c, 80))
		f |= PTE_P;
	if (sfz_chance(c, 60))
		f |= PTE_A;
	if (sfz_chance(c, 40))
		f |= PTE_W | PTE_D;
	return f;
}

/* A PDE for the fuzzed region: its own tables mostly, another vCPU's
 * now and then; never present and accessed naming a directory. */
static uint32_t pde_value(struct sfz *c)
{
	uint32_t f = pte_flags(c) & ~PTE_PS, frame;

	switch (sfz_pick(c, 10)) {
	case 0: frame = sfz_pfn(junk[c->id]); break;
	case 1: frame = sfz_npages + sfz_pick(c, 2); break;
	case 2: frame = 0xfffff; break;
	case 3: frame = sfz_pfn(pool_pd[sfz_pick(c, SFZ_MAX)][sfz_pick(c, NPD)]); f &= ~PTE_A; break;
	case 4: return sfz_pick(c, 2) ? 0 : sfz_rnd(c) & ~(PTE_P | PTE_A);
	case 5: case 6: frame = sfz_pfn(pool_pt[sfz_pick(c, sfz_nvcpus)][sfz_pick(c, NPT)]); break;
	default: frame = sfz_pfn(pool_pt[c->id][sfz_pick(c, NPT)]); break;
	}
	if (sfz_chance(c, 3))
		f |= PTE_PS;		/* a 4 MiB page: never touched */
	return frame << 12 | f;
}

static uint32_t *entry_ptr(struct sfz *c, int *is_pde)
{
	*is_pde = 0;
	if (sfz_chance(c, 70))
		return &pool_pt[c->id][sfz_pick(c, NPT)][sfz_chance(c, 80) ? sfz_pick(c, TOUCH_PTES) : sfz_pick(c, 1024)];
	if (sfz_chance(c, 85)) {
		*is_pde = 1;
		return &pool_pd[c->id][sfz_pick(c, NPD)][FUZZ_PDE + sfz_pick(c, FUZZ_NPDE)];
	}
	return (uint32_t *)&data[c->id][sfz_pick(c, NDATA)][sfz_pick(c, 1024) * 4];
}

static uint32_t value_for(struct sfz *c, int is_pde) { return is_pde ? pde_value(c) : pte_frame(c) << 12 | pte_flags(c); }

/* ---- the shared page's queue, by hand (as tguest_sfuzz.c) ----------- */

static volatile uint32_t *q_count(struct sfz *c) { return (volatile uint32_t *)(c->shared + VMI_OFF_vmi_shared_page_pxe_count); }
static volatile uint32_t *q_slot(struct sfz *c, unsigned i) { return (volatile uint32_t *)(c->shared + VMI_OFF_vmi_shared_page_pxe_queue) + i; }

/* An exit (an interrupt's EOI, a host tick, another vCPU's drain of this
 * queue) may drain the queue between any two instructions: a count stored
 * after it re-queues a few drained slots, which the next drain derives
 * again, harmless. */
static void append(struct sfz *c, uint32_t *e)
{
	uint32_t n = *q_count(c);

	*q_slot(c, n) = (uint32_t)e;
	*q_count(c) = n + 1;
}

/* As the ROM: the virtual IF clear in the page from an entry's write to
 * its queueing, so that an exit in between (this vCPU's, or one another
 * vCPU's drain makes) shows a write may be in flight and the continuous
 * audit waits (docs/SMP.md, "Concurrent vCPUs": the deferred queues). */
static volatile uint32_t *q_if(struct sfz *c) { return (volatile uint32_t *)(c->shared + VMI_OFF_vmi_shared_page_eflags_if); }

static void if_restore(struct sfz *c, uint32_t was)
{
	*q_if(c) = was;
	if (was && *(volatile uint32_t *)(c->shared + VMI_OFF_vmi_shared_page_irq_pending))
		sfz_hc(c, VMI_CALL_EnableInterrupts, 0, 0, 0, 0, 0);
}

static void queue_writes(struct sfz *c)
{
	unsigned n = 1 + sfz_pick(c, sfz_chance(c, 3) ? VMI_SHARED_PXE_QUEUE_LEN - 1 : 8);

	for (unsigned k = 0; k < n && *q_count(c) < VMI_SHARED_PXE_QUEUE_LEN - 1; k++) {
		int is_pde;
		uint32_t *e = entry_ptr(c, &is_pde), q, was = *q_if(c);

		*q_if(c) = 0;
		*e = value_for(c, is_pde);
		append(c, e);
		q = *q_count(c);
		if (sfz_chance(c, 20)) {
			*e = value_for(c, is_pde);
			if (*q_count(c) != q)
				append(c, e);	/* drained in between */
		}
		if_restore(c, was);
	}
}

/* ---- an access through the fuzzed region, on its own tables only ----- */

static int is_data(uint32_t frame)
{
	return frame >= sfz_pfn(data[0][0]) && frame < sfz_pfn(data[0][0]) + SFZ_MAX * NDATA;
}

static int own_table(struct sfz *c, uint32_t frame)
{
	if (frame == sfz_pfn(junk[c->id]))
		return 1;
	return frame >= sfz_pfn(pool_pt[c->id][0]) && frame < sfz_pfn(pool_pt[c->id][0]) + NPT;
}

static void touch(struct sfz *c)
{
	uint32_t pdx = FUZZ_PDE + sfz_pick(c, FUZZ_NPDE), ptx = sfz_pick(c, TOUCH_PTES);
	uint32_t lin = pdx << 22 | ptx << 12 | (sfz_pick(c, 1024) * 4), pde, pte = 0, v, before;
	const uint32_t *pd = (const uint32_t *)(c->cur_pd << 12);
	int write, expect_fault;

	sfz_hc(c, VMI_CALL_FlushTLB, 0, 0, 0, 0, 0);	/* an exit: the queue drained */
	pde = pd[pdx];
	if (pde & PTE_P) {
		if ((pde & PTE_PS) || !own_table(c, pde >> 12))
			return;		/* a rule break, or another vCPU's table */
		pte = ((const uint32_t *)((pde >> 12) << 12))[ptx];
		if ((pte & PTE_P) && ((pte >> 12) >= sfz_npages || (pte >> 12) >= 0xfff00))
			return;		/* a frame outside memory: a rule break */
	}
	write = (pde & PTE_P) && (pte & PTE_P) && is_data(pte >> 12) && sfz_chance(c, 50);
	expect_fault = !(pde & PTE_P) || !(pte & PTE_P) || (write && !((pde & PTE_W) && (pte & PTE_W)));
	before = c->pf;
	c->touches++;
	if (write)
		__asm__ volatile("movl %%eax, (%%ecx)" : : "a"(sfz_rnd(c)), "c"(lin) : "memory");
	else
		__asm__ volatile("movl (%%ecx), %%eax" : "=a"(v) : "c"(lin) : "memory");
	c->faults += c->pf - before;
	sfz_check(c, (c->pf != before) == expect_fault, write ? "write fault" : "read fault", c->pf - before, lin);
}

/* ---- the calls ----------------------------------------------------------- */

static void op_set(struct sfz *c)
{
	int is_pde;
	uint32_t *e = entry_ptr(c, &is_pde), v = value_for(c, is_pde);

	if (c->shared && sfz_chance(c, 50))
		sfz_rom(c, VMI_CALL_SetPxE, (uint32_t)e, v, 0, 0, 0);
	else
		sfz_hc(c, VMI_CALL_SetPxE, (uint32_t)e, v, 0, 0, 0);
	sfz_check(c, *e == v, "SetPxE", *e, v);
}

static void op_swap(struct sfz *c)
{
	int is_pde;
	uint32_t *e = entry_ptr(c, &is_pde), v = value_for(c, is_pde), old = *e, r;

	r = c->shared && sfz_chance(c, 50) ? (uint32_t)sfz_rom(c, VMI_CALL_SwapPxE, (uint32_t)e, v, 0, 0, 0)
					   : sfz_hc(c, VMI_CALL_SwapPxE, (uint32_t)e, v, 0, 0, 0);
	sfz_check(c, r == old, "SwapPxE old", r, old);
	sfz_check(c, *e == v, "SwapPxE new", *e, v);
}

static void op_bit(struct sfz *c)
{
	int is_pde, set = sfz_chance(c, 50);
	uint32_t *e = entry_ptr(c, &is_pde), bit = sfz_pick(c, 32), old = *e, r, want;
	uint32_t call = set ? VMI_CALL_TestAndSetPxEBit : VMI_CALL_TestAndClearPxEBit;

	if (is_pde && (bit >= 12 || (set && (bit == 0 || bit == 5 || bit == 7))))
		return;
	r = c->shared && sfz_chance(c, 50) ? (uint32_t)sfz_rom(c, call, (uint32_t)e, bit, 0, 0, 0)
					   : sfz_hc(c, call, (uint32_t)e, bit, 0, 0, 0);
	want = set ? old | 1u << bit : old & ~(1u << bit);
	sfz_check(c, r == ((old >> bit) & 1), "TestAndXPxEBit old bit", r, (old >> bit) & 1);
	sfz_check(c, *e == want, "TestAndXPxEBit entry", *e, want);
}

static void op_get(struct sfz *c)
{
	int is_pde;
	uint32_t *e = entry_ptr(c, &is_pde), r = sfz_hc(c, VMI_CALL_GetPxE, (uint32_t)e, 0, 0, 0, 0);

	sfz_check(c, r == *e, "GetPxE", r, *e);
}

/* AllocatePage(PD) of one of its directories that is not loaded, as a
 * fresh one (released first), cloning PDEs from another of its own. */
static void op_alloc_pd(struct sfz *c)
{
	unsigned i = sfz_pick(c, NPD), o = sfz_pick(c, NPD), base = 0, count = 0;
	uint32_t *pd = pool_pd[c->id][i], *orig = pool_pd[c->id][o];

	if (sfz_pfn(pd) == c->cur_pd)
		return;
	if (sfz_chance(c, 30))
		orig = base_pd;
	switch (sfz_pick(c, 3)) {
	case 0: break;
	case 1: base = 0; count = 4 + sfz_pick(c, 12); break;
	default: base = FUZZ_PDE + sfz_pick(c, FUZZ_NPDE); count = 1 + sfz_pick(c, FUZZ_PDE + FUZZ_NPDE - base); break;
	}
	if (orig == pd)
		count = 0;
	if (count) {
		sfz_hc(c, VMI_CALL_ReleasePage, sfz_pfn(pd), VMI_PAGE_PD, 0, 0, 0);
		for (unsigned k = base; k < base + count; k++)
			pd[k] = 0;
	}
	sfz_hc(c, VMI_CALL_AllocatePage, sfz_pfn(pd), VMI_PAGE_PD, sfz_pfn(orig), base, count);
	for (unsigned k = base; k < base + count; k++)
		pd[k] = orig[k];
}

static void op_release(struct sfz *c)
{
	if (sfz_chance(c, 70)) {
		sfz_hc(c, VMI_CALL_ReleasePage, sfz_pfn(pool_pt[c->id][sfz_pick(c, NPT)]), VMI_PAGE_PT, 0, 0, 0);
	} else {
		uint32_t *pd = pool_pd[c->id][sfz_pick(c, NPD)];

		if (sfz_pfn(pd) != c->cur_pd)
			sfz_hc(c, VMI_CALL_ReleasePage, sfz_pfn(pd), VMI_PAGE_PD, 0, 0, 0);
	}
}

static void op_cr3(struct sfz *c)
{
	uint32_t *pd = pool_pd[c->id][sfz_pick(c, NPD)];

	sfz_hc(c, VMI_CALL_SetCR3, (uint32_t)pd | (sfz_chance(c, 10) ? 0x18 : 0), 0, 0, 0, 0);
	c->cur_pd = sfz_pfn(pd);
}

static void op_inval(struct sfz *c)
{
	uint32_t lin = sfz_chance(c, 70) ? (FUZZ_PDE + sfz_pick(c, FUZZ_NPDE)) << 22 | sfz_pick(c, TOUCH_PTES) << 12
				      : sfz_rnd(c);

	if (c->shared && sfz_chance(c, 50))
		sfz_rom(c, VMI_CALL_InvalPage, lin, 0, 0, 0, 0);
	else
		sfz_hc(c, VMI_CALL_InvalPage, lin, 0, 0, 0, 0);
}

void sfz_mmu_op(struct sfz *c)
{
	switch (sfz_pick(c, 20)) {
	case 0: case 1: case 2: case 3: op_set(c); break;
	case 4: case 5: op_swap(c); break;
	case 6: case 7: op_bit(c); break;
	case 8: op_get(c); break;
	case 9: case 10: if (c->shared) queue_writes(c); break;
	case 11:
		sfz_hc(c, VMI_CALL_AllocatePage, sfz_pfn(pool_pt[c->id][sfz_pick(c, NPT)]), VMI_PAGE_PT, 0, 0, 0);
		break;
	case 12: op_alloc_pd(c); break;
	case 13: op_release(c); break;
	case 14: op_cr3(c); break;
	case 15: op_inval(c); break;
	case 16: sfz_hc(c, VMI_CALL_FlushTLB, sfz_rnd(c), 0, 0, 0, 0); break;
	default: touch(c); break;
	}
}

/* ---- set-up ------------------------------------------------------------ */

uint32_t sfz_mmu_dir(unsigned id) { return (uint32_t)pool_pd[id % SFZ_MAX][0]; }
uint32_t sfz_mmu_table(unsigned id) { return (uint32_t)id_pt[id % 4]; }	/* never released */

void sfz_mmu_ap_init(struct sfz *c)
{
	c->shared = *(const uint32_t *)(0xc0000u + VMI_OFF_VROMHeader_reserved3);
	c->cur_pd = sfz_pfn(pool_pd[c->id][0]);
}

void sfz_mmu_setup(struct sfz *c0)
{
	uint32_t cr0;

	for (unsigned t = 0; t < 4; t++) {
		for (unsigned i = 0; i < 1024; i++)
			id_pt[t][i] = (t << 22 | i << 12) | PTE_P | PTE_W | PTE_A | PTE_D;
		base_pd[t] = (uint32_t)id_pt[t] | PTE_P | PTE_W | PTE_A;
	}
	for (unsigned v = 0; v < SFZ_MAX; v++) {
		for (unsigned d = 0; d < NPD; d++)
			for (unsigned t = 0; t < 4; t++)
				pool_pd[v][d][t] = base_pd[t];
		for (unsigned i = 0; i < 1024; i++)
			junk[v][i] = sfz_rnd(c0);
	}
	__asm__ volatile("movl %0, %%cr3" : : "r"(base_pd));
	__asm__ volatile("movl %%cr0, %0" : "=r"(cr0));
	__asm__ volatile("movl %0, %%cr0" : : "r"(cr0 | 0x80010000u));	/* PG, WP */
	__asm__ volatile("int $0x82" : "=a"(cr0) : "D"(VMI_CALL_Init) : "memory");
	for (unsigned v = 0; v < sfz_nvcpus; v++) {
		for (unsigned t = 0; t < NPT; t++)
			sfz_hc(c0, VMI_CALL_AllocatePage, sfz_pfn(pool_pt[v][t]), VMI_PAGE_PT, 0, 0, 0);
		for (unsigned d = 0; d < NPD; d++)
			sfz_hc(c0, VMI_CALL_AllocatePage, sfz_pfn(pool_pd[v][d]), VMI_PAGE_PD, sfz_pfn(base_pd), 0, 4);
	}
	sfz_hc(c0, VMI_CALL_SetCR3, (uint32_t)pool_pd[0][0], 0, 0, 0, 0);
	sfz_mmu_ap_init(c0);
}
