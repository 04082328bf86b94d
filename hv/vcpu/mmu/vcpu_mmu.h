/*
 * vcpu_mmu.h - paging glue (vcpu_mmu.c): the vTLB before VMI activation,
 * the notification-driven shadows after it, and the VMI page-table calls.
 */
#ifndef VMI_HV_VCPU_MMU_H
#define VMI_HV_VCPU_MMU_H

#include <stdint.h>
#include <stdbool.h>

struct vcpu;
struct shadow_audit;
struct trap_frame;

/* Shadow paging (vcpu_mmu.c): the vTLB before activation, the
 * notification-driven shadows after it. */
void vcpu_mmu_init(struct vcpu *v, uint32_t switcher_pde);
void vcpu_mmu_activate(struct vcpu *v);
/* A vCPU of g other than the first has started (SetInitialAPState). */
void vcpu_mmu_vcpu_started(struct guest *g);
uint32_t vcpu_mmu_cr3(const struct vcpu *v);
/* Recompute v->paging from cr0/cr3/cr4: flush the vTLB when it changed,
 * or load the page directory's shadow. */
void vcpu_paging_changed(struct vcpu *v, bool force_flush);
/* The paging its CR0/CR3/CR4 describe, as vcpu_paging_changed derives it. */
struct guest_paging vcpu_guest_paging(const struct vcpu *v);
void vcpu_mmu_fault(struct vcpu *v, uint32_t cr2, uint32_t error, unsigned cpl);
/* strict_pt=on (vcpu_strict.c), before vcpu_mmu_fault: a write fault to
 * an announced page table stops the guest with where and what; any
 * other fault returns. */
void vcpu_strict_pt_write(struct vcpu *v, uint32_t cr2, uint32_t error, unsigned cpl);
void vcpu_mmu_invlpg(struct vcpu *v, uint32_t lin);
void vcpu_mmu_flush(struct vcpu *v);
/* The guest changed the page-table entry at lin through a VMI call. */
void vcpu_mmu_entry_written(struct vcpu *v, uint32_t lin);
/* VMI SetPxE, GetPxE, SwapPxE, TestAndSet/ClearPxEBit on the entry at lin. */
void vcpu_mmu_set_pxe(struct vcpu *v, uint32_t lin, uint32_t val);
uint32_t vcpu_mmu_get_pxe(struct vcpu *v, uint32_t lin);
uint32_t vcpu_mmu_swap_pxe(struct vcpu *v, uint32_t lin, uint32_t val);
bool vcpu_mmu_change_pxe_bit(struct vcpu *v, uint32_t lin, unsigned bit, bool set);
/* At every exit, before anything else: the entries the ROM wrote and
 * queued in the shared page (F_PXE) get their shadows derived again. */
void vcpu_mmu_drain(struct vcpu *v);
/* At every exit, first: the exit's work on the shadows counted from 0. */
void vcpu_mmu_exit_begin(struct vcpu *v);
/* After the drain: true if the exit must wait for the rest of the queue
 * (its instruction or call made again), so is not to be handled now. */
bool vcpu_mmu_defer_exit(struct vcpu *v, struct trap_frame *f);
void vcpu_mmu_announce(struct vcpu *v, uint32_t ppn, uint32_t flags, uint32_t orig,
		       uint32_t base, uint32_t count);
void vcpu_mmu_release(struct vcpu *v, uint32_t ppn);
/* The full shadow audit (false: the vTLB serves, nothing to audit); run
 * before a report takes console_lock, printed by vcpu_mmu_print_stats. */
bool vcpu_mmu_audit(const struct vcpu *v, struct shadow_audit *a);
void vcpu_mmu_print_stats(const struct vcpu *v, const struct shadow_audit *a);
/* audit=exit: at every exit, audit the shadows changed since the last. */
void vcpu_mmu_audit_exit(struct vcpu *v);
/* Restart the shadow-page peaks at the pages in use now (Ctrl-] r), so
 * that a later peak measures what ran since. */
void vcpu_mmu_reset_peaks(struct vcpu *v);
/* Could cr3 be loaded by a vCPU of v's guest after activation: a frame of
 * its memory that is not shadowed as a page table?  (SetInitialAPState
 * refuses others instead of stopping the guest at the AP's first load.) */
bool vcpu_mmu_cr3_acceptable(const struct vcpu *v, uint32_t cr3);
/* The end of an exit: what it removed or narrowed in the shadows is gone
 * from the TLBs of the other CPUs running the guest (shadow_sync_remote). */
void vcpu_mmu_sync_remote(struct vcpu *v);

#endif
