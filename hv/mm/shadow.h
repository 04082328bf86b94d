/*
 * shadow.h - shadow page tables for a paravirtual (VMI) guest, kept
 * coherent from the guest's notifications.
 *
 * After the guest activates VMI it tells us about its page tables:
 * AllocatePage / ReleasePage name the pages that are page tables, and
 * every entry write comes as SetPxE / SwapPxE / TestAndClearPxEBit /
 * TestAndSetPxEBit.  So unlike the virtual TLB (vtlb.h), which forgets
 * everything on a CR3 write, these shadows are caches that live as long as
 * the guest's tables:
 *
 *   - one shadow page table per guest page table (by guest frame), shared
 *     by every shadow page directory that links it (the kernel's tables
 *     are linked from every process's directory);
 *   - one shadow page directory per guest page directory, kept across
 *     CR3 switches (a CR3 write to a known directory is a lookup);
 *   - both freed when the guest releases the page (ReleasePage), so the
 *     shadow memory returns to its baseline when processes exit.
 *
 * The invariant that makes this simple: a shadow entry is a pure function
 * of the guest entry (and the p2m), shadow_derive_pte() below.  A guest
 * PTE that is present and accessed gives a present shadow PTE to the same
 * page's machine frame, user if the guest's is, writable only if the
 * guest's is writable AND dirty (and the page is not in the option-ROM
 * area, which is read-only to the guest); anything else gives 0.  So the hardware
 * can never do more than the guest's tables allow, accessed and dirty bits
 * are emulated by hidden faults (the walker in vtlb.c sets them in the
 * guest's tables, then the entry is derived again), and an auditor can
 * recompute every shadow entry from the guest's tables and compare
 * (shadow_audit).
 *
 * Page directory entries: shadow PDE = the shadow table of the guest
 * table it points to, with the guest PDE's P/RW/US (and A), when the guest
 * PDE is present and accessed.  A table released while PDEs still link it
 * leaves them linking an empty table (they grant nothing; a fault links
 * what the guest's PDE names then), so a release costs one page, not a
 * scan of every directory.  PDEs at and above HV_TOP_RESERVED_BASE are
 * never the guest's; PDE 1023 is the switcher in every shadow directory.
 * 4 MiB pages are not supported in paravirtual mode (the hypervisor's
 * CPUID hides PSE from the guest): a present PDE with PS set is never
 * linked, whatever CR4.PSE says, and a fault through one stops the guest.
 * So does any fault in the reserved top once the guest has activated VMI
 * (it reserved that range; nothing of its own can be there).
 *
 * Shadow entries carry only the frame, P, RW and US (and A in a PDE):
 * never G (the shadows are per directory, and the hypervisor's own address
 * space must not inherit guest TLB entries), PCD or PWT.  The CPU sets A
 * and D in shadow entries as it uses them; the audit ignores those two.
 *
 * Tables the guest never announced (the boot tables of head_32.S, which
 * predate activation, or any table an entry points to) are adopted when
 * first linked or loaded into CR3, and counted.
 *
 * When frames (the guest's frame budget, frame_budget.h) or records run
 * out, the shadows are a cache: every page directory shadow except the
 * loaded ones is dropped, then every page table shadow that nothing
 * links, and they are rebuilt on demand.  Still short, every PDE of the
 * directories left is unlinked (the tables go; a fault links them again).
 *
 * Each vCPU of the guest (a slot, its index) loads a directory of its
 * own: shadow_load_cr3, shadow_cr3, shadow_fault and shadow_invlpg act on
 * the slot's, and every slot's loaded directory is kept by eviction and
 * refused to ReleasePage.  A guest of one vCPU runs on the directory's
 * shadow itself.  With several, each slot runs on a top-level page of
 * its own (shadow_vcpu_init): a copy of its loaded directory's guest
 * PDEs, kept equal at every PDE change (shadow_set_pde), with its own vCPU's
 * switcher in PDE 1023, so that two vCPUs on the same directory each
 * reach their own stack and shared pages (docs/SMP.md, "A guest of several
 * vCPUs").
 *
 * Pure C like vtlb.c: freestanding in the hypervisor, on the host for the
 * cmocka tests (tests/unit/test_shadow.c).  Machine memory is reached only
 * through struct vtlb_env.  One instance per guest; no locking.
 */
#ifndef VMI_HV_SHADOW_H
#define VMI_HV_SHADOW_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "vtlb.h"

/* Shadow pages one guest may hold (page directories + page tables). */
#define SHADOW_MAX_PAGES 4096u
/* vCPUs (slots) of one guest: GUEST_MAX_VCPUS (vcpu_mmu.c checks). */
#define SHADOW_MAX_VCPUS 8u

/*
 * Shadow PDEs that may link one page table.  Linux links a table once per
 * directory (the kernel's tables from every process), so it stays below
 * SHADOW_MAX_PAGES; more links come only from a guest that clones one
 * table into every PDE of directory after directory, which is an attack
 * on the count: if it wrapped, ReleasePage would free a shadow frame that
 * stale PDEs still map.  The PDE that would pass the limit is
 * refused (VIOLATION).  The count itself is 32 bits wide, far above it.
 */
#define SHADOW_MAX_LINKS 65535u

/* The notifications that change a shadow: what the audit's report names
 * as the last one made to a table, and as the one that was missed. */
enum shadow_op {
	SHADOW_OP_NONE = 0,
	SHADOW_OP_SET_PXE,
	SHADOW_OP_SWAP_PXE,
	SHADOW_OP_TEST_AND_CLEAR,	/* TestAndClearPxEBit */
	SHADOW_OP_TEST_AND_SET,		/* TestAndSetPxEBit */
	/* The same four through the ROM's queue (written by the ROM,
	 * derived when the queue is drained). */
	SHADOW_OP_QUEUED_SET_PXE,
	SHADOW_OP_QUEUED_SWAP_PXE,
	SHADOW_OP_QUEUED_TEST_AND_CLEAR,
	SHADOW_OP_QUEUED_TEST_AND_SET,
	SHADOW_OP_ALLOCATE,		/* AllocatePage */
	SHADOW_OP_RELEASE,		/* ReleasePage */
	SHADOW_OP_INVAL_PAGE,		/* InvalPage / INVLPG */
	SHADOW_OP_COUNT
};

/* Entries looked at on each side of a hidden fault for prefetchable. */
#define SHADOW_PREFETCH_WINDOW 16u

/* Entries on each side of a fill that set A in an old entry that get A
 * too (shadow_prefetch_accessed).  The whole table (1024) saved no more
 * hidden faults in make compare's fork, exec, shell and hackbench rows:
 * the first touches left are in other tables. */
#define SHADOW_ACCESSED_WINDOW 16u

/* Shadow pages noted as changed between two continuous audits; past
 * this many the next audit checks every shadow page. */
#define SHADOW_TOUCHED_MAX 256u

enum shadow_kind {
	SHADOW_FREE = 0,
	SHADOW_PT = 1,	/* VMI_PAGE_PT */
	SHADOW_PD = 2,	/* VMI_PAGE_PD */
	/* A table released while shadow PDEs still linked it: emptied (the
	 * PDEs grant nothing), no longer the guest frame's, its frame kept
	 * until the last PDE that links it changes (shadow_notify.c, shadow_free_page). */
	SHADOW_ORPHAN = 3,
};

struct shadow_page {
	uint32_t gfn;		/* the guest's page table / directory */
	uint32_t mfn;		/* its shadow */
	uint32_t aux_mfn;	/* PD: a frame of uint16_t, per PDE 1 + index of the linked PT */
	uint32_t links;		/* PT: shadow PDEs that point at it, <= SHADOW_MAX_LINKS */
	uint8_t kind;		/* enum shadow_kind */
	/* PT or PD named by AllocatePage (not adopted): with strict_pt no
	 * shadow entry maps it writable (shadow_strict). */
	bool announced;
	/* Continuous audit only (shadow_track): the last notification that
	 * named this table, where the guest made it, and whether the page
	 * is in touched[]. */
	uint8_t last_op;	/* enum shadow_op */
	bool touched;
	uint32_t last_eip;
	/* PD announced as a clone, until it is first loaded: PDEs
	 * clone_base.. +clone_count were derived from the original before
	 * the guest copied them, so a guest PDE still 0 there is a copy not
	 * yet made, not a stale shadow. */
	uint16_t clone_base, clone_count;
};

struct shadow_stats {
	uint32_t pages_in_use;	/* shadow PTs + PDs now allocated */
	uint32_t pds_in_use;
	uint32_t pages_peak;
	uint64_t announced;	/* AllocatePage calls */
	uint64_t released;	/* ReleasePage calls that freed a shadow */
	uint64_t orphaned;	/* of those: tables still linked, kept empty until unlinked */
	uint64_t adopted;	/* tables shadowed without an AllocatePage */
	uint64_t entry_writes;	/* notified PTE writes (SetPxE and friends) */
	uint64_t pde_writes;	/* notified PDE writes */
	uint64_t untracked_writes; /* notified writes to a page that is not a known table */
	uint64_t fills;		/* hidden faults resolved by deriving an entry again */
	uint64_t dirty_faults;	/* of those: write faults that set a guest D bit */
	/* Why the other fills faulted (docs/MEMORY.md, "Hidden faults by cause"):
	 * the walk set A in the guest PTE (an old entry: fork marks the
	 * child's so), or the entry had already been derived again by the
	 * drain at this very exit (the retry after a queued write). */
	uint64_t accessed_faults;
	uint64_t drained_faults;
	/* What a prefetch could fill: neighbours (SHADOW_PREFETCH_WINDOW each
	 * side) whose guest entry derives to more than their shadow entry at
	 * a fill, i.e. present and accessed in the guest but not (or less) in
	 * the shadow.  Every table is derived whole and every notified entry
	 * at once, so this stays 0 unless the guest writes entries unnotified. */
	uint64_t prefetchable;
	/* Old neighbours of a set-A fill given A and derived with it
	 * (shadow_prefetch_accessed; docs/MEMORY.md, "Hidden faults by cause"). */
	uint64_t accessed_prefetched;
	uint64_t guest_faults;	/* #PFs reflected into the guest */
	uint64_t cr3_loads;
	uint64_t cr3_hits;	/* CR3 loads that found the directory already shadowed */
	uint64_t evictions;	/* times the cache was trimmed for lack of space */
	uint64_t unlinked;	/* of those: times even loaded directories' tables went (still short) */
	uint64_t invlpgs;
	uint64_t violations;
	uint64_t strict_revoked;	/* strict_pt: writable entries made read-only at AllocatePage */
	uint64_t builds_split;	/* directory builds the work limit cut, to go on at the next call */
	uint32_t work_max;	/* the most work one exit did (shadow_work_begin) */
};

struct shadow {
	struct vtlb_env env;
	const struct guest_mem *gm;
	struct vtlb *walker;		/* the guest page-table walker (vtlb_translate) */
	uint16_t *by_gfn;		/* gm->npages entries: 0, or 1 + index into pages[] */
	struct shadow_page pages[SHADOW_MAX_PAGES];
	uint16_t free_stack[SHADOW_MAX_PAGES];
	uint32_t nfree;
	/* Per vCPU slot: 1 + index of its loaded directory (0 = none), its
	 * top-level page (0: none, the directory's shadow is loaded) and
	 * the PDE of its switcher.  nr_vcpus: slots in use. */
	uint16_t loaded[SHADOW_MAX_VCPUS];
	uint32_t top_mfn[SHADOW_MAX_VCPUS];
	uint32_t top_switcher_pde[SHADOW_MAX_VCPUS];
	unsigned nr_vcpus;
	/* An entry another CPU may hold in its TLB was removed or narrowed
	 * since the last shadow_sync_remote (several vCPUs only). */
	bool remote_stale;
	uint64_t remote_flushes;	/* env.remote_flush calls made */
	uint16_t pinned;		/* 1 + index of a directory being built: not evicted */
	/* The work done since shadow_work_begin (entries derived, zeroed or
	 * cleared: a page table derived is PT_ENTRIES), and the limit at
	 * which a directory build stops (0: none); see shadow_announce_from. */
	uint32_t work, work_limit;
	uint32_t last_fault_lin, last_fault_err, repeats;
	struct shadow_stats stats;
	bool strict;			/* strict_pt=on: announced PTs and PDs are read-only */
	bool prefetch_accessed;		/* fastpaths=on: a set-A fill sets A in old neighbours */
	/* Continuous audit: off, nothing below is kept (no cost). */
	bool tracking;
	bool touched_overflow;
	uint32_t ntouched;
	uint16_t touched[SHADOW_TOUCHED_MAX];	/* 1 + index into pages[] */
};

/* The first stale entry an audit found, with what explains it. */
struct shadow_mismatch {
	uint32_t gfn;			/* the guest's page table or directory */
	uint8_t kind;			/* enum shadow_kind */
	uint16_t index;			/* entry in it */
	bool linked;			/* lin is known (a PT is linked from some PDE) */
	uint32_t lin, lin_size;		/* the linear range the entry maps */
	uint32_t guest, shadow, expect;	/* the guest entry, its shadow, what it should be */
	uint8_t expected_op;		/* enum shadow_op: the notification that would have fixed it */
	uint8_t last_op;		/* enum shadow_op: the last one made to this table */
	uint32_t last_eip;
};

/* What shadow_audit() found. */
struct shadow_audit {
	uint32_t pds, pts;		/* shadow pages checked */
	uint32_t entries;		/* present shadow entries checked */
	uint32_t mismatches;
	/* shadow_audit_touched() only: entries the shadow does not map yet
	 * where the guest's do (a hidden fault will fill them), counted here
	 * and not as mismatches; only a shadow that lets the hardware do
	 * what the guest's entry does not (stale) is a mismatch. */
	bool stale_only;
	uint32_t unfilled;
	bool have_entry;		/* m describes the first mismatch (an entry's) */
	struct shadow_mismatch m;
	char first[256];		/* the first mismatch, if any */
};

/*
 * Set up an empty shadow for the guest memory gm.  by_gfn is storage for
 * gm->npages uint16_t (the caller owns it); walker is the vCPU's vTLB,
 * whose vtlb_translate() walks the guest's tables and sets A/D bits.
 */
void shadow_init(struct shadow *s, const struct vtlb_env *env, const struct guest_mem *gm,
		 struct vtlb *walker, uint16_t *by_gfn);
/* Slot k (vCPU k, below SHADOW_MAX_VCPUS), its switcher reached through
 * switcher_pde: after shadow_init, again when the vCPU is rebuilt (its
 * directory unloaded, its top-level page given back).  Once the guest
 * has more than one slot, each takes a top-level page at its loads. */
void shadow_vcpu_init(struct shadow *s, unsigned k, uint32_t switcher_pde);
/* Free every shadow page (and the slots' top-level pages). */
void shadow_destroy(struct shadow *s);
/* Give back what the cache can spare (the guest's frame budget is spent
 * elsewhere): every directory but the loaded ones, then every table,
 * unlinked from the loaded ones first; rebuilt on demand. */
void shadow_trim(struct shadow *s);
/*
 * Several vCPUs at once (docs/SMP.md, "Concurrent vCPUs"): every change
 * that removes or narrows a shadow entry notes it, and before a shadow
 * frame goes back to the pool the other CPUs running the guest are made
 * to leave it (env.remote_flush: their TLBs and paging-structure caches
 * go with their CR3); the exit that made the change calls this before it
 * returns to the guest, for the same.
 */
void shadow_sync_remote(struct shadow *s);
/* Would shadow_load_cr3 take cr3 (a frame of the guest, not a table)? */
bool shadow_cr3_acceptable(const struct shadow *s, uint32_t cr3);
/* Is the directory of guest frame gfn loaded by some slot? */
bool shadow_loaded_anywhere(const struct shadow *s, uint32_t gfn);

/* Whether guest frame gfn is shadowed as a page directory. */
bool shadow_is_directory(const struct shadow *s, uint32_t gfn);

/* The shadow entry for guest entry g (0 = not present). */
uint32_t shadow_derive_pte(const struct shadow *s, uint32_t g);

/*
 * AllocatePage(gfn, kind, orig, base, count).  A directory with count > 0
 * is a clone: its PDEs base..base+count-1 will be copies of orig's (Linux
 * copies them right after the call), so they are derived from orig.  A
 * page announced again is derived again from its contents; that includes
 * the loaded directory (the guest announces its boot tables after
 * activation, while they are in use).  VIOLATION if gfn (or orig) is
 * outside guest memory, the loaded directory is announced as a table, or
 * a PDE cannot be linked (out of memory, a directory named as a table,
 * SHADOW_MAX_LINKS); a directory refused so keeps no shadow unless it is
 * the loaded one.
 */
enum vtlb_result shadow_announce(struct shadow *s, uint32_t gfn, enum shadow_kind kind,
				 uint32_t orig, uint32_t base, uint32_t count,
				 struct vtlb_outcome *out);
/*
 * The same, for a directory built in pieces: from PDE *next on (0: a new
 * announcement), and once the work since shadow_work_begin reaches its
 * limit, the build stops after a PDE with *next the PDE to go on from
 * (0: done).  Until it goes on, the PDEs from *next on are not present:
 * they grant nothing, and a fault through one derives it (as after an
 * eviction).  What one exit may do to the shadows is so bounded (docs/HV.md,
 * "The work of one exit").
 */
enum vtlb_result shadow_announce_from(struct shadow *s, uint32_t gfn, enum shadow_kind kind,
				      uint32_t orig, uint32_t base, uint32_t count, uint32_t *next,
				      struct vtlb_outcome *out);
/* A new exit: its work counted from 0, against limit (0: none). */
void shadow_work_begin(struct shadow *s, uint32_t limit);
/* Has the work since shadow_work_begin reached its limit?  (Asked for
 * every entry derived: inline.) */
static inline bool shadow_work_spent(const struct shadow *s)
{
	return s->work_limit && s->work >= s->work_limit;
}
/* ReleasePage(gfn).  VIOLATION for a directory any slot has loaded; a page that has
 * no shadow (never a table, or evicted) is FILLED, nothing to do. */
enum vtlb_result shadow_release(struct shadow *s, uint32_t gfn, struct vtlb_outcome *out);

/* The guest wrote the 4-byte entry at guest-physical gpa through a VMI
 * call: derive its shadow again if the page is a known table (FILLED and
 * counted in untracked_writes if not).  VIOLATION if a PDE names a table
 * that cannot be shadowed (out of memory, or a page directory). */
enum vtlb_result shadow_entry_written(struct shadow *s, uint32_t gpa, struct vtlb_outcome *out);

/* Slot k's CR3 write: load (or adopt and build) the directory's shadow. */
enum vtlb_result shadow_load_cr3(struct shadow *s, unsigned k, uint32_t cr3, struct vtlb_outcome *out);
/* Machine address to load into CR3 while slot k runs (0 before its
 * first shadow_load_cr3). */
uint32_t shadow_cr3(const struct shadow *s, unsigned k);

/* Hardware #PF at lin (error code hw_error, CPL 1 or 3) with the guest's
 * paging state gp: FILLED (hidden), GUEST_FAULT (reflect out->guest_error,
 * out->cr2) or VIOLATION (out->brk.why). */
enum vtlb_result shadow_fault(struct shadow *s, unsigned k, const struct guest_paging *gp, uint32_t lin,
			      uint32_t hw_error, unsigned cpl, struct vtlb_outcome *out);

/* INVLPG / InvalPage: derive slot k's loaded directory's entry for lin again
 * (so a guest that edits a PTE without telling us, then flushes that page
 * as it would on hardware, is still seen). */
void shadow_invlpg(struct shadow *s, unsigned k, uint32_t lin);

/* Compare every shadow entry with what the guest's tables say now. */
void shadow_audit(const struct shadow *s, struct shadow_audit *a);

/*
 * Continuous audit (the hypervisor's audit= option).  With tracking on,
 * every shadow page a notification names or the shadow code changes is
 * noted as touched; shadow_audit_touched() compares those (all of them
 * after an overflow) and forgets them.  With tracking off nothing is
 * noted and these cost nothing.
 */
void shadow_track(struct shadow *s, bool on);
/* A notification op named guest frame gfn (an entry in it, or the page
 * itself), made by the guest at eip: remembered for the report, and the
 * page is touched.  Nothing if gfn has no shadow. */
void shadow_note(struct shadow *s, uint32_t gfn, enum shadow_op op, uint32_t eip);
/*
 * strict_pt=on: every page the guest announces as a page table
 * (AllocatePage PT) is mapped read-only by every shadow, from the
 * announcement (entries that map it writable are made read-only then) to
 * its release, so a direct write to it faults; shadow_strict_table() says
 * whether a frame is such a page.  Directories (AllocatePage PD) are
 * covered the same way, and strict mode also requires that a directory be
 * announced once and, if a clone, with its copied entries already in it
 * (Linux announces after pgd_ctor(), under pgd_lock).  Set once, before
 * the first announcement.
 */
void shadow_strict(struct shadow *s, bool on);
/* fastpaths=on: a fill that sets A in an old entry sets it in the present,
 * old neighbours within SHADOW_PREFETCH_WINDOW too, and derives them. */
void shadow_prefetch_accessed(struct shadow *s, bool on);
bool shadow_strict_table(const struct shadow *s, uint32_t gfn);
/* Audit the touched pages into a (stale entries only, see
 * shadow_audit.stale_only); with resync, every page found stale is
 * derived again from the guest's table. */
void shadow_audit_touched(struct shadow *s, bool resync, struct shadow_audit *a);
/* Audit the one shadow page of gfn into a (nothing if it has none). */
void shadow_audit_page(const struct shadow *s, uint32_t gfn, struct shadow_audit *a);
/* Write one line describing m into buf. */
void shadow_describe(const struct shadow_mismatch *m, char *buf, size_t len);
const char *shadow_op_name(enum shadow_op op);
/* Would the shadow of the entry at guest-physical gpa be stale (let the
 * hardware do what the guest's entry does not) if it were not derived
 * again?  (The audit self-test drops only a write that matters.) */
bool shadow_entry_stale(const struct shadow *s, uint32_t gpa);

#endif
