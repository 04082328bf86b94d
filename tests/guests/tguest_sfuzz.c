/*
 * tguest_sfuzz.c - tguest=sfuzz:SEED[:CALLS]: a shape-aware fuzzer of the
 * paravirtual MMU, run with paging on and the hypervisor's shadows active
 * (docs/HV.md, "Tests").  The older tguest=fuzz activates with paging off,
 * so the shadow code is never reached there.
 *
 * Set-up: a page directory identity-mapping the first 16 MiB (us, and
 * every table below) through four page tables, paging on, VMI Init (the
 * directory is adopted), then the pools announced (AllocatePage) and CR3
 * loaded (SetCR3).  The fuzzed region is linear 32-64 MiB, PDEs 8-15 of
 * each pool directory; PDEs 0-3 stay the identity map in every directory,
 * so whichever one is loaded, our code runs on.
 *
 * Then operations until CALLS VMI calls are made (hypercalls, and calls
 * of the ROM's slots, whose fast paths write and queue entries without an
 * exit), with entries queued by hand on the shared page in between, with
 * arguments of the right shape: mostly valid, sometimes at or just past
 * a limit.  Entries: frames inside memory, the last one, just past it,
 * far outside, the ROM area, our own page tables (recursive mappings),
 * junk pages and directories used as page tables; tables announced and
 * not, announced twice, released while linked; descriptors of each type.
 *
 * The main phase keeps away from what stops a guest by design (a table
 * outside memory announced, the loaded directory released, CR3 outside
 * memory or naming a page table, a directory linked as a page table, a
 * 4 MiB page or a frame outside memory touched, gates in the loaded
 * tables, a queue count past its length): the hypervisor must answer all
 * of it.  The guest checks what it can see itself: SwapPxE, GetPxE and
 * the TestAnd calls return the entry's old value, and each read or write
 * it makes through the fuzzed region faults exactly when its own tables
 * say it must (a shadow allowing more, or less, than the guest's entries
 * shows there).  Then one final action, chosen by the seed, that may stop
 * the guest (or Shutdown when the seed picks none); the test checks the
 * stop reason blames the guest, the audit and the machine frames.
 */
#include <stdint.h>
#include "tguest.h"
#include "vmi_abi.h"

#define PTE_P	0x001u
#define PTE_W	0x002u
#define PTE_U	0x004u
#define PTE_A	0x020u
#define PTE_D	0x040u
#define PTE_PS	0x080u

#define NPT	12		/* pool page tables */
#define NPD	4		/* pool directories, besides base_pd */
#define NJUNK	2		/* pages of random words, used as page tables */
#define NDATA	4		/* the only pages written through the fuzzed region */
#define FUZZ_PDE	8	/* PDEs 8..15: linear 32-64 MiB */
#define FUZZ_NPDE	8
#define TOUCH_PTES	16	/* touches use PTEs 0..15 of each table */

#define PAGE __attribute__((aligned(4096)))
static uint32_t base_pd[1024] PAGE;
static uint32_t id_pt[4][1024] PAGE;
static uint32_t pool_pt[NPT][1024] PAGE;
static uint32_t pool_pd[NPD][1024] PAGE;
static uint32_t junk[NJUNK][1024] PAGE;
static uint8_t data[NDATA][4096] PAGE;
/* Descriptor tables of ours for WriteGDT/LDT/IDTEntry. */
static uint64_t gdt[16] __attribute__((aligned(8)));
static uint64_t ldt[16] __attribute__((aligned(8)));
static uint64_t idt[256] __attribute__((aligned(8)));

static uint32_t rng;
static uint32_t npages;		/* guest memory, from the e820 map */
static uint32_t shared;		/* the shared page's linear address, 0: none */
static uint32_t cur_pd;		/* the loaded directory's frame */
static uint8_t pt_announced[NPT], pd_announced[NPD + 1];	/* [NPD]: base_pd */

static struct {
	uint32_t calls, hypercalls, rom, queued, changed_after_queue;
	uint32_t touches, faults, checks, bad;
	uint32_t by_op[16];
} st;

/* Set by the #PF handler: the fault it took, and that it took one. */
volatile uint32_t sf_pf_count;

static uint32_t rnd(void)
{
	return xorshift32(&rng);
}

static uint32_t pick(uint32_t n) { return rnd() % n; }
static int chance(uint32_t pct) { return pick(100) < pct; }
static uint32_t pfn(const void *p) { return (uint32_t)p >> 12; }

/* ---- the #PF handler: count, then skip the 2-byte access ------------- */
void sf_pf_entry(void);
__asm__(".text\n"
	"sf_pf_entry:\n"
	"	incl sf_pf_count\n"
	"	addl $4, %esp\n"		/* the error code */
	"	addl $2, (%esp)\n"		/* movl (%ecx),%eax or movl %eax,(%ecx) */
	"	iret\n");

static void set_gate(uint64_t *table, unsigned v, uint32_t off, uint32_t type_dpl_p)
{
	table[v] = (uint64_t)(off & 0xffff) | (0x10ull << 16) | ((uint64_t)type_dpl_p << 40) |
		   ((uint64_t)(off >> 16) << 48);
}

static int trace;

static uint32_t hc(uint32_t call, uint32_t a, uint32_t d, uint32_t c, uint32_t b, uint32_t s)
{
	st.hypercalls++;
	if (trace) {
		puts("hc ");
		puthex(call);
		putc(' ');
		puthex(a);
		putc(' ');
		puthex(d);
		putc(' ');
		puthex(c);
		putc(' ');
		puthex(b);
		putc(' ');
		puthex(s);
		puts("\n");
	}
	__asm__ volatile("int $0x82" : "+a"(a), "+d"(d), "+c"(c), "+b"(b), "+S"(s)
			 : "D"(call) : "memory", "cc");
	return a;
}

/* A ROM slot (the ROM is at guest-physical 0xC0000, identity-mapped). */
static uint32_t rom(uint32_t call, uint32_t a, uint32_t d)
{
	uint32_t fn = 0xc0000u + call * 32, c = 0;

	st.rom++;
	if (trace) {
		puts("rom ");
		puthex(call);
		putc(' ');
		puthex(a);
		putc(' ');
		puthex(d);
		puts("\n");
	}
	__asm__ volatile("call *%3" : "+a"(a), "+d"(d), "+c"(c) : "r"(fn) : "memory", "cc");
	return a;
}

/* ---- shapes ------------------------------------------------------------ */

/* A frame for a page-table entry: anywhere, for mappings are harmless as
 * long as we write only through data[]. */
static uint32_t pte_frame(void)
{
	switch (pick(12)) {
	case 0: case 1: case 2: return pfn(data[pick(NDATA)]);
	case 3: return pick(npages);				/* inside memory */
	case 4: return npages - 1;				/* the last frame */
	case 5: return npages + pick(2);			/* just past */
	case 6: return 0xfffff - pick(4);			/* far outside */
	case 7: return 0xc0 + pick(0x20);			/* the ROM area */
	case 8: return pfn(pool_pt[pick(NPT)]);		/* recursive */
	case 9: return pfn(pool_pd[pick(NPD)]);		/* a directory */
	case 10: return pfn(id_pt[pick(4)]);
	default: return pick(0x100);				/* low memory */
	}
}

static uint32_t pte_flags(void)
{
	uint32_t f = rnd() & 0xfff;

	if (chance(80))
		f |= PTE_P;
	if (chance(60))
		f |= PTE_A;
	if (chance(40))
		f |= PTE_W | PTE_D;
	return f;
}

/* A page-directory entry for the fuzzed region.  Never present and
 * accessed naming a directory (a rule break: the final phase does it). */
static uint32_t pde_value(void)
{
	uint32_t f = pte_flags() & ~PTE_PS, frame;

	switch (pick(10)) {
	case 0: frame = pfn(junk[pick(NJUNK)]); break;
	case 1: frame = npages + pick(2); break;
	case 2: frame = 0xfffff; break;
	case 3: frame = pfn(pool_pd[pick(NPD)]); f &= ~PTE_A; break;
	case 4: return pick(2) ? 0 : rnd() & ~(PTE_P | PTE_A);	/* not present */
	default: frame = pfn(pool_pt[pick(NPT)]); break;
	}
	if (chance(3))
		f |= PTE_PS;		/* a 4 MiB page: not linked, and never touched */
	return frame << 12 | f;
}

static uint32_t *directory(unsigned i) { return i == NPD ? base_pd : pool_pd[i]; }

/* An entry to write: mostly a pool table's, sometimes a fuzzed PDE of a
 * directory, now and then another page (an untracked write). */
static uint32_t *entry_ptr(int *is_pde)
{
	*is_pde = 0;
	if (chance(70))
		return &pool_pt[pick(NPT)][chance(80) ? pick(TOUCH_PTES) : pick(1024)];
	if (chance(85)) {
		*is_pde = 1;
		return &directory(pick(NPD + 1))[FUZZ_PDE + pick(FUZZ_NPDE)];
	}
	return (uint32_t *)&data[pick(NDATA)][pick(1024) * 4];
}

static uint32_t value_for(int is_pde) { return is_pde ? pde_value() : pte_frame() << 12 | pte_flags(); }

static void check(int ok, const char *what, uint32_t got, uint32_t want)
{
	st.checks++;
	if (ok)
		return;
	if (st.bad++ < 8) {
		puts("sfuzz: CHECK FAILED: ");
		puts(what);
		puts(" got ");
		puthex(got);
		puts(" want ");
		puthex(want);
		puts("\n");
	}
}

/* ---- the shared page's queue, by hand -------------------------------- */

static volatile uint32_t *q_count(void) { return (volatile uint32_t *)(shared + VMI_OFF_vmi_shared_page_pxe_count); }
static volatile uint32_t *q_slot(unsigned i) { return (volatile uint32_t *)(shared + VMI_OFF_vmi_shared_page_pxe_queue) + i; }

/* Append e to the queue.  An exit may come between any two instructions
 * here (a host interrupt) and drain the queue, setting the count to 0; a
 * count stored after that re-queues a few drained slots, which the next
 * drain derives again: harmless (the ROM uses cmpxchg to avoid even that). */
static void append(uint32_t *e)
{
	uint32_t c = *q_count();

	*q_slot(c) = (uint32_t)e;
	*q_count() = c + 1;
}

/* Write entries and queue their addresses as the ROM does, up to a few
 * at once, sometimes changing an entry again after queueing it: the
 * drain must derive what is there at the exit, not what was queued.  If
 * an exit drained it in between, the change is queued again, so that
 * the guest never leaves an entry changed without telling. */
static void queue_writes(void)
{
	unsigned n = 1 + pick(chance(3) ? VMI_SHARED_PXE_QUEUE_LEN - 1 : 8);

	for (unsigned k = 0; k < n && *q_count() < VMI_SHARED_PXE_QUEUE_LEN - 1; k++) {
		int is_pde;
		uint32_t *e = entry_ptr(&is_pde), c;

		*e = value_for(is_pde);
		append(e);
		c = *q_count();
		st.queued++;
		if (chance(20)) {
			*e = value_for(is_pde);
			if (*q_count() != c)
				append(e);	/* drained in between */
			st.changed_after_queue++;
		}
		if (trace) {
			puts("queued ");
			puthex((uint32_t)e);
			putc(' ');
			puthex(*e);
			puts("\n");
		}
	}
}

/* ---- touches: an access through the fuzzed region ---------------------- */

static int is_pool_pd(uint32_t frame)
{
	for (unsigned i = 0; i < NPD; i++)
		if (frame == pfn(pool_pd[i]))
			return 1;
	return frame == pfn(base_pd);
}

static int is_data(uint32_t frame)
{
	return frame >= pfn(data[0]) && frame < pfn(data[0]) + NDATA;
}

/* Read (or write, where the page is ours to write) one linear address of
 * the fuzzed region, when the hypervisor allows it without a stop; it
 * must fault exactly when the guest's tables say.  Only after an exit,
 * since entries the ROM queued are applied at the next one, like a TLB
 * the guest has not flushed. */
static void touch(void)
{
	uint32_t pdx = FUZZ_PDE + pick(FUZZ_NPDE), ptx = pick(TOUCH_PTES);
	uint32_t lin = pdx << 22 | ptx << 12 | (pick(1024) * 4), pde, pte, frame, before;
	const uint32_t *pd = (const uint32_t *)(cur_pd << 12);
	int write, expect_fault;

	hc(VMI_CALL_FlushTLB, 0, 0, 0, 0, 0);	/* an exit: the queue drained */
	pde = pd[pdx];
	if (pde & PTE_P) {
		frame = pde >> 12;
		if ((pde & PTE_PS) || frame >= npages || is_pool_pd(frame) || frame >= 4096)
			return;		/* a rule break to touch, or not ours to read */
		pte = ((const uint32_t *)(frame << 12))[ptx];
		if ((pte & PTE_P) && ((pte >> 12) >= npages || (pte >> 12) >= 0xfff00))
			return;		/* a frame outside memory: a rule break */
	} else {
		pte = 0;
	}
	write = (pde & PTE_P) && (pte & PTE_P) && is_data(pte >> 12) && chance(50);
	expect_fault = !(pde & PTE_P) || !(pte & PTE_P) ||
		       (write && !((pde & PTE_W) && (pte & PTE_W)));
	before = sf_pf_count;
	st.touches++;
	if (write)
		__asm__ volatile("movl %%eax, (%%ecx)" : : "a"(rnd()), "c"(lin) : "memory");
	else
		__asm__ volatile("movl (%%ecx), %%eax" : "=a"(frame) : "c"(lin) : "memory");
	st.faults += sf_pf_count - before;
	check((sf_pf_count != before) == expect_fault, write ? "write fault" : "read fault",
	      sf_pf_count - before, lin);
}

/* ---- one operation ----------------------------------------------------- */

enum { OP_SET, OP_SWAP, OP_BIT, OP_GET, OP_QUEUE, OP_ALLOC_PT, OP_ALLOC_PD,
       OP_RELEASE, OP_CR3, OP_INVAL, OP_FLUSH, OP_TOUCH, OP_DESC, OP_COUNT };

static const uint8_t op_weight[OP_COUNT] = { 22, 8, 8, 4, 8, 6, 4, 6, 5, 4, 2, 18, 5 };

static void op_set(void)
{
	int is_pde;
	uint32_t *e = entry_ptr(&is_pde), v = value_for(is_pde);

	if (shared && chance(50))
		rom(VMI_CALL_SetPxE, (uint32_t)e, v);	/* written and queued by the ROM */
	else
		hc(VMI_CALL_SetPxE, (uint32_t)e, v, 0, 0, 0);
	check(*e == v, "SetPxE", *e, v);
}

static void op_swap(void)
{
	int is_pde;
	uint32_t *e = entry_ptr(&is_pde), v = value_for(is_pde), old = *e, r;

	r = shared && chance(50) ? rom(VMI_CALL_SwapPxE, (uint32_t)e, v)
				 : hc(VMI_CALL_SwapPxE, (uint32_t)e, v, 0, 0, 0);
	check(r == old, "SwapPxE old", r, old);
	check(*e == v, "SwapPxE new", *e, v);
}

/* TestAndSet/ClearPxEBit: any bit of a page-table entry; of a PDE not
 * the frame, and not P, A or PS set (a not-present PDE may name any
 * frame, and P and A on one naming a directory is the final phase's). */
static void op_bit(void)
{
	int is_pde, set = chance(50);
	uint32_t *e = entry_ptr(&is_pde), bit = pick(32), old = *e, r, want;
	uint32_t call = set ? VMI_CALL_TestAndSetPxEBit : VMI_CALL_TestAndClearPxEBit;

	if (is_pde && (bit >= 12 || (set && (bit == 0 || bit == 5 || bit == 7))))
		return;
	r = shared && chance(50) ? rom(call, (uint32_t)e, bit) : hc(call, (uint32_t)e, bit, 0, 0, 0);
	want = set ? old | 1u << bit : old & ~(1u << bit);
	check(r == ((old >> bit) & 1), "TestAndXPxEBit old bit", r, (old >> bit) & 1);
	check(*e == want, "TestAndXPxEBit entry", *e, want);
}

static void op_get(void)
{
	int is_pde;
	uint32_t *e = entry_ptr(&is_pde), r = hc(VMI_CALL_GetPxE, (uint32_t)e, 0, 0, 0, 0);

	check(r == *e, "GetPxE", r, *e);
}

static void op_alloc_pt(void)
{
	unsigned i = pick(NPT);

	hc(VMI_CALL_AllocatePage, pfn(pool_pt[i]), VMI_PAGE_PT, 0, 0, 0);	/* again: double announce */
	pt_announced[i] = 1;
}

/* AllocatePage(PD) of a directory that is not loaded, cloning PDEs from
 * another (Linux then copies them itself, as we do). */
static void op_alloc_pd(void)
{
	unsigned i = pick(NPD), o = pick(NPD + 1), base = 0, count = 0;
	uint32_t *pd = pool_pd[i], *orig = directory(o);

	if (pfn(pd) == cur_pd)
		return;
	switch (pick(4)) {
	case 0: break;					/* no clone */
	case 1: base = 0; count = 4 + pick(12); break;	/* over the identity map */
	case 2: base = FUZZ_PDE + pick(FUZZ_NPDE); count = 1 + pick(FUZZ_PDE + FUZZ_NPDE - base); break;
	default: base = 1023; count = 1; break;		/* the last PDE: at the limit */
	}
	if (pfn(orig) == pfn(pd))
		count = 0;
	/* A clone goes into a fresh directory, as Linux's pgd_alloc: released
	 * first (no shadow), empty where the clone goes until the copy below.
	 * Editing a live directory without telling is the guest's rule break
	 * (the continuous audit stops it). */
	if (count) {
		hc(VMI_CALL_ReleasePage, pfn(pd), VMI_PAGE_PD, 0, 0, 0);
		for (unsigned k = base; k < base + count; k++)
			pd[k] = 0;
	}
	hc(VMI_CALL_AllocatePage, pfn(pd), VMI_PAGE_PD, pfn(orig), base, count);
	for (unsigned k = base; k < base + count; k++)
		pd[k] = orig[k];
	pd_announced[i] = 1;
}

static void op_release(void)
{
	if (chance(60)) {
		unsigned i = pick(NPT);

		hc(VMI_CALL_ReleasePage, pfn(pool_pt[i]), VMI_PAGE_PT, 0, 0, 0);	/* linked or not */
		pt_announced[i] = 0;
	} else {
		unsigned i = pick(NPD + 1);

		if (pfn(directory(i)) == cur_pd)
			return;
		hc(VMI_CALL_ReleasePage, pfn(directory(i)), VMI_PAGE_PD, 0, 0, 0);
		pd_announced[i] = 0;
	}
}

static void op_cr3(void)
{
	uint32_t *pd = directory(pick(NPD + 1));

	/* PCD/PWT now and then: flag bits of CR3, not its frame. */
	hc(VMI_CALL_SetCR3, (uint32_t)pd | (chance(10) ? 0x18 : 0), 0, 0, 0, 0);
	cur_pd = pfn(pd);
}

static void op_inval(void)
{
	uint32_t lin = chance(70) ? (FUZZ_PDE + pick(FUZZ_NPDE)) << 22 | pick(TOUCH_PTES) << 12 : rnd();

	hc(VMI_CALL_InvalPage, lin, 0, 0, 0, 0);
}

/* A code or data descriptor of some shape: DPL 0-3, conforming,
 * expand-down, 16- or 32-bit, byte or page granular, limits up to the
 * reserved top and past it, present or not; never a system type. */
static uint64_t seg_desc(void)
{
	uint32_t type = 0x10 | pick(16), dpl = pick(4), p = chance(85);
	uint32_t limit = chance(50) ? 0xfffff : pick(0x100000), base = chance(70) ? 0 : rnd();
	uint32_t flags = (chance(70) ? 0x4 : 0) | (chance(70) ? 0x8 : 0);
	uint64_t d;

	if (dpl == 1 || dpl == 2)
		dpl = 0;
	d = (uint64_t)(limit & 0xffff) | (uint64_t)(base & 0xffffff) << 16 |
	    (uint64_t)(type | dpl << 5 | p << 7) << 40 | (uint64_t)(limit >> 16) << 48 |
	    (uint64_t)flags << 52 | (uint64_t)(base >> 24) << 56;
	return d;
}

/* A gate for the IDT: interrupt, trap, task, 16-bit; DPL; present or
 * not (only vector 14 is ever raised, and it is never written here). */
static uint64_t gate_desc(void)
{
	static const uint8_t types[] = { 0xe, 0xf, 0x5, 0x6, 0x7, 0xc, 0x1, 0x0 };

	return (uint64_t)(rnd() & 0xffff) | (uint64_t)(chance(80) ? 0x10 : rnd() & 0xffff) << 16 |
	       (uint64_t)(types[pick(sizeof(types))] | pick(4) << 5 | (chance(80) ? 0x80 : 0)) << 40 |
	       (uint64_t)(rnd() & 0xffff) << 48;
}

/* Entries 4-15 of our loaded GDT and LDT (2 and 3 are our code and data;
 * 15 of the GDT is the LDT's descriptor), any vector but 14 of our IDT. */
static void op_desc(void)
{
	uint64_t d;
	unsigned i;

	switch (pick(4)) {
	case 0:
		i = 4 + pick(11);
		d = seg_desc();
		hc(VMI_CALL_WriteGDTEntry, (uint32_t)gdt, i, (uint32_t)d, (uint32_t)(d >> 32), 0);
		break;
	case 1:
		i = pick(16);
		d = seg_desc();
		hc(VMI_CALL_WriteLDTEntry, (uint32_t)ldt, i, (uint32_t)d, (uint32_t)(d >> 32), 0);
		break;
	case 2:
		do
			i = pick(256);
		while (i == 14);
		d = gate_desc();
		hc(VMI_CALL_WriteIDTEntry, (uint32_t)idt, i, (uint32_t)d, (uint32_t)(d >> 32), 0);
		break;
	default:
		hc(VMI_CALL_SetLDT, chance(50) ? 15 << 3 : 0, 0, 0, 0, 0);
		break;
	}
}

static void one_op(void)
{
	unsigned w = pick(100), op = 0;

	while (w >= op_weight[op])
		w -= op_weight[op++];
	st.by_op[op]++;
	switch (op) {
	case OP_SET: op_set(); break;
	case OP_SWAP: op_swap(); break;
	case OP_BIT: op_bit(); break;
	case OP_GET: op_get(); break;
	case OP_QUEUE: if (shared) queue_writes(); break;
	case OP_ALLOC_PT: op_alloc_pt(); break;
	case OP_ALLOC_PD: op_alloc_pd(); break;
	case OP_RELEASE: op_release(); break;
	case OP_CR3: op_cr3(); break;
	case OP_INVAL: op_inval(); break;
	case OP_FLUSH: hc(VMI_CALL_FlushTLB, rnd(), 0, 0, 0, 0); break;
	case OP_TOUCH: touch(); break;
	default: op_desc(); break;
	}
}

/* ---- the final phase: one action that may stop us by design ------------ */

static const char *const finals[] = {
	"shutdown", "allocate-outside", "release-loaded", "cr3-outside", "cr3-page-table",
	"pd-as-pt", "queue-count", "queue-bad-address", "touch-outside", "gdt-gate",
	"ldt-gate", "touch-4m",
};

static void final_action(unsigned k)
{
	uint32_t lin = FUZZ_PDE << 22, v;

	puts("sfuzz: final: ");
	puts(finals[k]);
	puts("\n");
	switch (k) {
	case 1: hc(VMI_CALL_AllocatePage, npages, VMI_PAGE_PT, 0, 0, 0); break;
	case 2: hc(VMI_CALL_ReleasePage, cur_pd, VMI_PAGE_PD, 0, 0, 0); break;
	case 3: hc(VMI_CALL_SetCR3, npages << 12, 0, 0, 0, 0); break;
	case 4:
		hc(VMI_CALL_AllocatePage, pfn(pool_pt[0]), VMI_PAGE_PT, 0, 0, 0);
		hc(VMI_CALL_SetCR3, (uint32_t)pool_pt[0], 0, 0, 0, 0);
		break;
	case 5:		/* the loaded directory's PDE 8 names another directory */
		hc(VMI_CALL_AllocatePage, pfn(pool_pd[0]) == cur_pd ? pfn(pool_pd[1]) : pfn(pool_pd[0]),
		   VMI_PAGE_PD, 0, 0, 0);
		v = (pfn(pool_pd[0]) == cur_pd ? (uint32_t)pool_pd[1] : (uint32_t)pool_pd[0]) | PTE_P | PTE_W | PTE_A;
		hc(VMI_CALL_SetPxE, (uint32_t)&((uint32_t *)(cur_pd << 12))[FUZZ_PDE], v, 0, 0, 0);
		break;
	case 6:
		if (shared)
			*q_count() = VMI_SHARED_PXE_QUEUE_LEN + 1;
		hc(VMI_CALL_FlushTLB, 0, 0, 0, 0, 0);
		break;
	case 7:
		if (shared) {
			*q_slot(0) = 0x3fff0000u;	/* not mapped in any of our directories */
			*q_count() = 1;
		}
		hc(VMI_CALL_FlushTLB, 0, 0, 0, 0, 0);
		break;
	case 8:
	case 11:
		hc(VMI_CALL_SetPxE, (uint32_t)&((uint32_t *)(cur_pd << 12))[FUZZ_PDE],
		   k == 8 ? (uint32_t)pool_pt[0] | PTE_P | PTE_W | PTE_A : 0x03000000u | PTE_P | PTE_PS | PTE_A, 0, 0, 0);
		hc(VMI_CALL_SetPxE, (uint32_t)&pool_pt[0][0], npages << 12 | PTE_P | PTE_A, 0, 0, 0);
		__asm__ volatile("movl (%%ecx), %%eax" : "=a"(v) : "c"(lin) : "memory");
		break;
	case 9: case 10: {
		uint64_t g = 0x00008c0000100000ull | 0x10ull << 16;	/* a present call gate */

		hc(k == 9 ? VMI_CALL_WriteGDTEntry : VMI_CALL_WriteLDTEntry, k == 9 ? (uint32_t)gdt : (uint32_t)ldt,
		   5, (uint32_t)g, (uint32_t)(g >> 32), 0);
		break;
	}
	}
	puts("sfuzz: survived the final action\n");
}

/* ---- set-up ------------------------------------------------------------ */

uint32_t tguest_e820_top(const uint8_t *bp)
{
	unsigned n = bp[0x1e8];
	uint32_t top = 0;

	for (unsigned i = 0; i < n && i < 128; i++) {
		const uint8_t *e = bp + 0x2d0 + i * 20;
		uint32_t addr = *(const uint32_t *)e, size = *(const uint32_t *)(e + 8);

		if (*(const uint32_t *)(e + 16) == 1 && addr + size > top)
			top = addr + size;
	}
	return top;
}

static void set_up(void)
{
	struct __attribute__((packed)) { uint16_t limit; uint32_t base; } gd = { sizeof(gdt) - 1, (uint32_t)gdt },
		id = { sizeof(idt) - 1, (uint32_t)idt };
	uint32_t cr0, r;

	for (unsigned t = 0; t < 4; t++)
		for (unsigned i = 0; i < 1024; i++)
			id_pt[t][i] = (t << 22 | i << 12) | PTE_P | PTE_W | PTE_A | PTE_D;
	for (unsigned t = 0; t < 4; t++)
		base_pd[t] = (uint32_t)id_pt[t] | PTE_P | PTE_W | PTE_A;
	for (unsigned d = 0; d < NPD; d++)
		for (unsigned t = 0; t < 4; t++)
			pool_pd[d][t] = base_pd[t];
	for (unsigned j = 0; j < NJUNK; j++)
		for (unsigned i = 0; i < 1024; i++)
			junk[j][i] = rnd();
	gdt[2] = 0x00cf9a000000ffffull;
	gdt[3] = 0x00cf92000000ffffull;
	gdt[15] = (uint64_t)(sizeof(ldt) - 1) | ((uint64_t)((uint32_t)ldt & 0xffffff) << 16) |
		  (0x82ull << 40) | ((uint64_t)((uint32_t)ldt >> 24) << 56);
	set_gate(idt, 14, (uint32_t)sf_pf_entry, 0x8e);
	__asm__ volatile("lidt %0" : : "m"(id));
	__asm__ volatile("movl %0, %%cr3" : : "r"(base_pd));
	__asm__ volatile("movl %%cr0, %0" : "=r"(cr0));
	__asm__ volatile("movl %0, %%cr0" : : "r"(cr0 | 0x80010000u));	/* PG, WP */
	__asm__ volatile("int $0x82" : "=a"(r) : "D"(VMI_CALL_Init) : "memory");
	hc(VMI_CALL_SetGDT, (uint32_t)&gd, 0, 0, 0, 0);
	for (unsigned t = 0; t < NPT; t++) {
		hc(VMI_CALL_AllocatePage, pfn(pool_pt[t]), VMI_PAGE_PT, 0, 0, 0);
		pt_announced[t] = 1;
	}
	for (unsigned d = 0; d < NPD; d++) {
		hc(VMI_CALL_AllocatePage, pfn(pool_pd[d]), VMI_PAGE_PD, pfn(base_pd), 0, 4);
		pd_announced[d] = 1;
	}
	hc(VMI_CALL_SetCR3, (uint32_t)pool_pd[0], 0, 0, 0, 0);
	cur_pd = pfn(pool_pd[0]);
	shared = *(const uint32_t *)(0xc0000u + VMI_OFF_VROMHeader_reserved3);
}

static void figure(const char *name, uint32_t v)
{
	puts(" ");
	puts(name);
	puts("=");
	puthex(v);
}

void sfuzz_run(const uint8_t *boot_params, uint32_t seed, uint32_t calls, int tr)
{
	static const char *const op_names[OP_COUNT] = {
		"set", "swap", "bit", "get", "queue", "alloc-pt", "alloc-pd", "release",
		"cr3", "inval", "flush", "touch", "desc",
	};
	unsigned final;

	trace = tr;
	rng = seed * 2654435761u | 1;
	npages = tguest_e820_top(boot_params) >> 12;
	puts("sfuzz: seed ");
	puthex(seed);
	puts(" calls ");
	puthex(calls);
	puts(" guest pages ");
	puthex(npages);
	puts("\n");
	set_up();
	puts("sfuzz: paging on, shadows active, shared page ");
	puthex(shared);
	puts("\n");
	while (st.hypercalls + st.rom < calls) {	/* VMI calls; hand-queued entries apart */
		one_op();
		st.calls++;
		if (!(st.calls & 0x3fff)) {
			puts("sfuzz: progress");
			figure("ops", st.calls);
			puts("\n");
		}
	}
	hc(VMI_CALL_FlushTLB, 0, 0, 0, 0, 0);	/* drain what is queued */
	puts("sfuzz: done:");
	figure("ops", st.calls);
	figure("hypercalls", st.hypercalls);
	figure("rom", st.rom);
	figure("queued", st.queued);
	figure("changed_after_queue", st.changed_after_queue);
	figure("touches", st.touches);
	figure("faults", st.faults);
	figure("checks", st.checks);
	figure("failed", st.bad);
	puts("\nsfuzz: by op:");
	for (unsigned i = 0; i < OP_COUNT; i++)
		figure(op_names[i], st.by_op[i]);
	puts("\n");
	final = seed % (sizeof(finals) / sizeof(finals[0]));
	if (final)
		final_action(final);
	puts("sfuzz: shutdown\n");
	hc(VMI_CALL_Shutdown, 0, 0, 0, 0, 0);
}
