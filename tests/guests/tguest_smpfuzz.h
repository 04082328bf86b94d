/*
 * tguest_smpfuzz.h - what the SMP fuzzer's two files share
 * (tguest_smpfuzz.c: the vCPUs, the vLAPIC, alarms, IPIs, starts and
 * ends; tguest_smpfuzz_mmu.c: each vCPU's paravirtual MMU calls).
 */
#ifndef TGUEST_SMPFUZZ_H
#define TGUEST_SMPFUZZ_H
#include <stdint.h>

#define SFZ_MAX 4		/* vCPUs fuzzing at once */
#define SFZ_OPS 16		/* kinds of operation, counted per vCPU */

/* One vCPU's fuzzing state: its own random stream (from the seed and
 * its index, so each vCPU's choices are the seed's whatever the
 * interleaving), its loaded directory and its figures.  Counters the
 * interrupt handlers also change are updated with locked adds. */
struct sfz {
	uint32_t id, rng;
	uint32_t shared, cur_pd;
	uint32_t hypercalls, rom, ops, checks, bad, touches, faults, refused;
	uint32_t irqs, ipis, alarms, halts, starts, apic;
	volatile uint32_t pf, in_irq;
	uint32_t last_real_hi, last_real_lo;
	uint32_t by_op[SFZ_OPS];
};

#define SFZ_STACK 8192		/* each AP's stack */
#define SFZ_KINDS 10		/* operation kinds (sfz_op_names) */

extern struct sfz sfz_cpu[SFZ_MAX];
extern uint32_t sfz_npages;	/* guest memory, from the e820 map */
extern uint32_t sfz_nvcpus, sfz_total, sfz_trace, sfz_skip_lvtt, sfz_us_cycles;
/* A start was refused for vCPU i after its state was read (the load). */
extern volatile uint32_t sfz_load_refused[SFZ_MAX];
extern uint8_t sfz_ap_stack[SFZ_MAX][SFZ_STACK];
extern const char *const sfz_op_names[SFZ_KINDS];

static inline uint32_t sfz_rnd(struct sfz *c)
{
	uint32_t x = c->rng;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return c->rng = x;
}

static inline uint32_t sfz_pick(struct sfz *c, uint32_t n) { return sfz_rnd(c) % n; }
static inline int sfz_chance(struct sfz *c, uint32_t pct) { return sfz_pick(c, 100) < pct; }
static inline uint32_t sfz_pfn(const void *p) { return (uint32_t)p >> 12; }
static inline void sfz_add(uint32_t *counter, uint32_t n) { __atomic_fetch_add(counter, n, __ATOMIC_RELAXED); }

/* VMI calls, counted: by int $0x82, and through the ROM's slot (five
 * words as the ROM takes them: eax, edx, ecx, then two on the stack). */
uint32_t sfz_hc(struct sfz *c, uint32_t call, uint32_t a, uint32_t d, uint32_t cx, uint32_t b, uint32_t s);
uint64_t sfz_rom(struct sfz *c, uint32_t call, uint32_t a, uint32_t d, uint32_t cx, uint32_t b, uint32_t s);
void sfz_check(struct sfz *c, int ok, const char *what, uint32_t got, uint32_t want);
/* The console is one; lines of several vCPUs are printed whole. */
void sfz_lock(void);
void sfz_unlock(void);

/* tguest_smpfuzz.c: the IDT's gates (every vector 16-255 counted and
 * EOId, #PF counted and skipped), lidt of it; one operation of any kind;
 * a cycle counter; a vCPU's alarms off and its requests taken. */
void sfz_idt_init(void);
void sfz_load_idt(void);
uint32_t sfz_idt_base(void);
void sfz_op(struct sfz *c);
uint64_t sfz_counter(struct sfz *c, uint32_t which);
void sfz_quiesce(struct sfz *c);
/* tguest_smpfuzz_run.c: SetInitialAPState of some shape. */
void sfz_op_start(struct sfz *c);

/* tguest_smpfuzz_mmu.c.  vCPU 0, before any other runs: page tables,
 * paging on, VMI Init, every vCPU's tables and directories announced,
 * its own directory loaded. */
void sfz_mmu_setup(struct sfz *c0);
/* An AP's first directory (its APState's CR3), and a page table no
 * vCPU ever releases (a CR3 the hypervisor must refuse). */
uint32_t sfz_mmu_dir(unsigned id);
uint32_t sfz_mmu_table(unsigned id);
/* An AP, first thing: what it needs of its own (the shared page). */
void sfz_mmu_ap_init(struct sfz *c);
/* One MMU operation of vCPU c, on its own tables (and links to the
 * others'); returns its kind's index for the figures. */
void sfz_mmu_op(struct sfz *c);
#endif
