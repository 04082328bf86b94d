/*
 * vtlb.h - the pre-activation "virtual TLB": shadow paging for a guest that
 * still manages its own (non-PAE, 32-bit) page tables with plain memory
 * writes, before it switches to the VMI paravirtual MMU calls.
 *
 * The model is a TLB, not a mirror of the guest's tables.  The shadow page
 * directory that the CPU really uses starts empty (except the switcher in
 * PDE 1023); each hardware #PF from the guest is a "TLB miss": vtlb_fault()
 * walks the guest's tables like the CPU would, and either installs one
 * shadow PTE (a hidden fault: the guest retries and never knows) or tells
 * the caller to reflect a #PF into the guest.  Like a real TLB, a shadow
 * entry may go stale when the guest edits its tables; the guest must (and
 * Linux does) flush with a CR3 write or INVLPG, which the caller turns into
 * vtlb_flush() / vtlb_invlpg().  Not-present guest entries are never
 * cached, exactly as on hardware.
 *
 * Accessed and dirty bits: a fill sets A in the guest's PDE and PTE; a
 * shadow PTE is writable only once the guest's D bit is set, so the first
 * write faults (hidden), sets D and upgrades the shadow entry.  The bits
 * are set as the CPU sets them, with a locked compare-and-exchange on the
 * value the walk read: another vCPU may change the entry meanwhile, and
 * then the walk is made again on what it wrote.
 *
 * Requirements on the caller (the world switch, hv/):
 *   - CR0.WP = 1 while the guest runs.  The guest kernel runs in ring 1,
 *     which paging treats as supervisor: without WP, ring-1 writes would
 *     ignore the read-only shadow entries that emulate D bits and the
 *     guest's own write protection.  (Guest CR0.WP = 0 is emulated here.)
 *   - Shadow entries are never global, so reloading CR3 on every world
 *     switch drops them from the hardware TLB.
 *   - One struct vtlb per vCPU (one vCPU now); no locking.
 *
 * Pure C: compiles freestanding for the hypervisor and on the host for the
 * cmocka tests (tests/unit/test_vtlb.c); machine memory is reached only
 * through struct vtlb_env.
 */
#ifndef VMI_HV_VTLB_H
#define VMI_HV_VTLB_H

#include <stdint.h>
#include <stdbool.h>
#include "guest_mem.h"
#include "layout.h"
#include "pte.h"
#include "frame_budget.h"
#include "rule_break.h"

/*
 * The option-ROM area (the VMI ROM at GUEST_ROM_GPA and the rest of the
 * area up to GUEST_ROM_AREA_END) is read-only to the guest, as a ROM is:
 * shadow entries for it are never writable, and a write to it through
 * the guest's tables, the emulator or a VMI call breaks the rules.
 */
static inline bool guest_gfn_is_rom(uint32_t gfn)
{
	return gfn >= page_frame(GUEST_ROM_GPA) && gfn < page_frame(GUEST_ROM_AREA_END);
}

/* How the pure code reaches machine memory and frames. */
struct vtlb_env {
	void *(*map)(uint32_t mfn);         /* hv: identity (machine < 3 GiB is mapped 1:1); tests: a fake */
	bool (*alloc_frame)(uint32_t *mfn); /* a frame; its contents are garbage (vtlb.c and shadow_notify.c zero it) */
	void (*free_frame)(uint32_t mfn);
	uint32_t switcher_pde;              /* installed in PDE 1023 of every shadow PD */
	/* The guest's frame budget (frame_budget.h): every frame vtlb.c and
	 * shadow_notify.c take is charged to it; 0 = not charged (unit tests that
	 * are not about budgets). */
	struct frame_budget *budget;
	/* Shadows only (shadow_notify.c, "several vCPUs at once"): make every other
	 * CPU running a vCPU of this guest leave it (its TLB flushed), and
	 * wait until each has; 0: nothing to do (unit tests, the vTLB). */
	void (*remote_flush)(void *ctx);
	void *ctx;
#ifdef VTLB_TEST_SEAMS
	/* Unit tests only (hv/Makefile defines VTLB_TEST_SEAMS for them; the
	 * hypervisor has no such field and no call): run right after the
	 * walker reads the guest entry at entry, where another vCPU's write
	 * (the ROM's xchg) can land before the walker sets A/D in it. */
	void (*after_entry_read)(uint32_t *entry);
#endif
};

/* A frame for the shadows (contents garbage), charged to env->budget:
 * false at the budget's limit or when the pool is out. */
bool vtlb_env_alloc(const struct vtlb_env *env, uint32_t *mfn);
/* Give back a frame vtlb_env_alloc() took. */
void vtlb_env_free(const struct vtlb_env *env, uint32_t mfn);

/* The guest's virtual CR0.PG / CR0.WP, CR4.PSE and CR3. */
struct guest_paging {
	bool pg;
	bool wp;
	bool pse;
	uint32_t cr3;
};

enum vtlb_result {
	VTLB_FILLED,       /* hidden fault: shadow fixed (or translation done), retry / go on */
	VTLB_GUEST_FAULT,  /* reflect #PF(out->guest_error) with CR2 = out->cr2 into the guest */
	VTLB_VIOLATION,    /* the guest broke the rules (or the hypervisor is out of frames): stop it, out->brk.why says why */
};

struct vtlb_outcome {
	uint32_t guest_error;   /* VTLB_GUEST_FAULT: the #PF error code */
	uint32_t cr2;           /* VTLB_GUEST_FAULT: the faulting linear address */
	struct rule_break brk;  /* VTLB_VIOLATION: why (lib/rule_break.h) */
};

/* A rule broken (for vtlb.c and shadow_notify.c alike): the reason into
 * out->brk.why, *count (the module's violation counter) up by one. */
enum vtlb_result vtlb_violation(uint64_t *count, struct vtlb_outcome *out, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

struct vtlb_stats {
	uint64_t fills;              /* shadow PTEs installed (incl. D-bit upgrades) */
	uint64_t dirty_faults;       /* of those: hidden write faults that set a guest D bit */
	uint64_t prefetched;         /* entries made ahead of use (paging off only; not in fills) */
	uint64_t guest_faults;       /* #PFs reflected into the guest (vtlb_fault and vtlb_translate) */
	uint64_t violations;
	uint64_t flushes;
	uint64_t invlpgs;
	uint64_t translates;         /* vtlb_translate calls that succeeded */
	uint64_t walks_again;        /* walks made again: another vCPU changed an entry under one */
	uint32_t shadow_pages_in_use; /* shadow page tables now allocated (not counting the PD) */
	uint32_t shadow_pages_peak;
};

/* Walks of one access while another vCPU keeps changing an entry under
 * them (vtlb.c, walk); then the access faults as not present. */
#define VTLB_WALK_ROUNDS 8u

/* Shadow PDE slots that guest mappings may fill: below HV_TOP_RESERVED_BASE. */
#define VTLB_GUEST_PDES  (HV_TOP_RESERVED_BASE >> PDE_SHIFT)   /* 1008 */

struct vtlb {
	struct vtlb_env env;
	const struct guest_mem *gm;
	uint32_t pd_mfn;                 /* the shadow page directory */
	uint32_t *pd;                    /* env.map(pd_mfn) */
	/* Shadow PT i holds entries made from a guest 4 MiB page: an INVLPG
	 * anywhere in it must drop the whole PT, as hardware drops the one
	 * large-page TLB entry. */
	uint8_t from_large[VTLB_GUEST_PDES];
	struct vtlb_stats stats;
};

/* Allocate the shadow PD (switcher in PDE 1023, nothing else).  false if
 * env->alloc_frame fails. */
bool vtlb_init(struct vtlb *v, const struct vtlb_env *env, const struct guest_mem *gm);
/* Free every shadow page, the PD included.  v must be vtlb_init()ed again before use. */
void vtlb_destroy(struct vtlb *v);

/* Hardware #PF from the guest at lin with the hardware error code; cpl 1 or 3.
 * FILLED: hidden fault, shadow fixed, retry.
 * GUEST_FAULT: reflect #PF with out->guest_error / out->cr2 into the guest.
 * VIOLATION: guest broke the rules (frame outside its memory, a mapping into
 * the reserved top >= HV_TOP_RESERVED_BASE, ...), out->brk.why says which. */
enum vtlb_result vtlb_fault(struct vtlb *v, const struct guest_paging *gp, uint32_t lin,
			    uint32_t hw_error, unsigned cpl, struct vtlb_outcome *out);

/* Guest-linear -> guest-physical via the guest's tables (identity when
 * !gp->pg), with the same checks and setting A (and D when write) like
 * hardware; for the emulator's and hypercalls' memory accesses.  No shadow
 * entry is installed.  *gpa is valid only on VTLB_FILLED, and is always
 * inside the guest's memory then. */
enum vtlb_result vtlb_translate(struct vtlb *v, const struct guest_paging *gp, uint32_t lin,
				bool write, unsigned cpl, uint32_t *gpa, struct vtlb_outcome *out);

/* Drop all shadow page tables (CR3 write, CR0.PG/WP or CR4.PSE/PGE change);
 * the PD and its switcher PDE stay. */
void vtlb_flush(struct vtlb *v);
/* Drop the shadow entry for lin (the whole shadow PT if it came from a
 * guest 4 MiB page).  Addresses in the reserved top are ignored. */
void vtlb_invlpg(struct vtlb *v, uint32_t lin);
/* Machine address to load into CR3 while the guest runs. */
uint32_t vtlb_shadow_cr3(const struct vtlb *v);

#endif
