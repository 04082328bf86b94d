/*
 * vcpu_strict.c - strict_pt=on: every page the guest announced as a page
 * table is read-only in the shadows, so a direct write to one faults and
 * is caught here, before the fault is handled as paging's (vcpu_mmu.c).
 * Above both paging and the emulator: the report reads the new entry off
 * the store instruction.
 */
#include "vcpu_state.h"
#include "vcpu_mmu.h"
#include "vcpu_mem.h"
#include "vcpu_ops.h"
#include "guest_stop.h"
#include "hvlib.h"

/*
 * strict_pt: a write that faulted, which the guest's tables allow, to a
 * page it announced as a page table: a direct write, not through the
 * ROM's calls.  Stop the guest with where and what (the new entry read
 * off the store instruction, when it is a plain one).  The walk with
 * write set does what the hardware would have done (A and D in the
 * guest's entry for that address).
 */
void vcpu_strict_pt_write(struct vcpu *v, uint32_t cr2, uint32_t error, unsigned cpl)
{
	struct vtlb_outcome out;
	struct emul_ops ops;
	uint32_t gpa, old, val;
	char new_entry[40], where[80];

	if (!v->shadows_active || !v->guest->strict_pt || !(error & X86_PF_W))
		return;
	if (vtlb_translate(&v->vtlb, &v->paging, cr2, true, cpl, &gpa, &out) != VTLB_FILLED ||
	    !shadow_strict_table(&v->guest->shadow, page_frame(gpa)))
		return;		/* the guest's own fault, or no page table: as always */
	vcpu_call_read(v, cr2 & ~3u, &old, 4, "a page-table entry");
	vcpu_emul_ops(v, &ops);
	if (emulate_store_value(v->frame, cpl, &ops, &val))
		fmt_snprintf(new_entry, sizeof(new_entry), "%08x", val);
	else
		fmt_snprintf(new_entry, sizeof(new_entry), "? (not a plain store)");
	sysmap_describe(&v->guest->sysmap, v->frame->eip, where, sizeof(where));
	vcpu_stop(v, "strict_pt: direct write to page %s 0x%x entry %u (linear %08x) at EIP %08x%s: %08x -> %s",
		  shadow_is_directory(&v->guest->shadow, page_frame(gpa)) ? "directory" : "table",
		  page_frame(gpa), page_offset(gpa) / 4, cr2, v->frame->eip, where, old, new_entry);
}
