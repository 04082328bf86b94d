/*
 * vcpu_mmu_internal.h - what the paging glue's files share (vcpu_mmu.c,
 * the continuous audit vcpu_mmu_audit.c, the shared-page queue
 * vcpu_pxe_queue.c).  Not for the rest of the hypervisor: vcpu_mmu.h is
 * the interface.
 */
#ifndef VMI_HV_VCPU_MMU_INTERNAL_H
#define VMI_HV_VCPU_MMU_INTERNAL_H

#include "vcpu_state.h"

/* The most work one exit does to the shadows (shadow.h, shadow_work_begin:
 * a page table derived or zeroed counts 1024): 16 tables, tens of
 * microseconds on a CPU, a few milliseconds under TCG (docs/HV.md, "The
 * work of one exit").  A Linux directory's clone links tables that have
 * their shadows already: about 1000, far below it. */
#define EXIT_WORK (16u * 1024u)

/* A shadow call's outcome: a violation stops the guest, naming what
 * (inline: asked after every shadow call). */
__attribute__((noreturn))
void vcpu_mmu_refused(struct vcpu *v, const struct vtlb_outcome *out, const char *what);
static inline void vcpu_mmu_check(struct vcpu *v, enum vtlb_result r, const struct vtlb_outcome *out,
				  const char *what)
{
	if (r == VTLB_VIOLATION)
		vcpu_mmu_refused(v, out, what);
}

/* The continuous audit (vcpu_mmu_audit.c). */
bool vcpu_mmu_auditing(const struct vcpu *v);
const char *vcpu_mmu_audit_mode_name(const struct audit_options *o, char *buf, size_t len);
uint32_t vcpu_mmu_call_site(struct vcpu *v, unsigned saved_words);
void vcpu_mmu_note(struct vcpu *v, uint32_t gfn, enum shadow_op op, uint32_t eip);
void vcpu_mmu_audit_now(struct vcpu *v, const char *when, uint32_t extra_gfn);
void vcpu_mmu_count_ops(struct vcpu *v, uint32_t n);

#endif
