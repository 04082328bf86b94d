/*
 * vcpu_ldt.c - the guest's LDT (docs/HV.md, "Descriptor tables").
 *
 * As with the GDT (vcpu_desc.c), the CPU must never read the guest's own
 * table: it could hold a DPL 0 code segment or a call gate into ring 0.
 * lldt and VMI SetLDT name an LDT descriptor in the guest's GDT; its
 * entries are read from guest memory then, converted by the GDT's rules
 * (guest_desc_convert: code and data only, DPL 0 made 1, gates and DPL
 * 1/2 left out, accessed set) into up to 16 frames of ours, and the CPU
 * gets an LDT descriptor for those frames, mapped read-only and
 * supervisor-only in the switcher at HV_VCPU_LDT_BASE, in the same GDT
 * slot as the guest's (so sldt reads back what the guest loaded).  Linux
 * builds a new table for every modify_ldt(2) and loads it with SetLDT,
 * and writes single entries with WriteLDTEntry, which updates our copy
 * when the entry is the loaded LDT's.  A segment load the emulator
 * performs reads the entry again from guest memory, as the CPU would.
 *
 * A present gate written with WriteLDTEntry into the loaded LDT stops the
 * guest, as in the GDT: Linux writes only code and data segments there.
 */
#include "vcpu_state.h"
#include "guest_frames.h"
#include "guest_stop.h"
#include "vcpu_desc.h"
#include "vcpu_mem.h"
#include "vcpu_layout.h"
#include "guest_desc.h"
#include "machine_mem.h"
#include "console.h"
#include "stop.h"
#include "hvlib.h"
#include "pcpu.h"
#include "vcpu_switcher.h"
#include "io.h"

#define PER_PAGE (HV_PAGE_SIZE / 8)


static uint64_t *slot(const struct vcpu *v, unsigned idx)
{
	return &v->ldt.page[idx / PER_PAGE][idx % PER_PAGE];
}

uint64_t vcpu_ldt_entry(const struct vcpu *v, unsigned idx)
{
	return idx < v->ldt.count ? *slot(v, idx) : 0;
}

bool vcpu_ldt_slot(const struct vcpu *v, unsigned idx)
{
	return v->ldt.count && idx == (unsigned)(v->ldtr >> 3);
}

static enum emul_result fault(struct emul_outcome *out, uint8_t vector, uint32_t error)
{
	out->vector = vector;
	out->has_error = true;
	out->error = error;
	return EMUL_FAULT;
}

/* Our frames for the converted entries, at the first LDT, from the
 * guest's frame budget: a guest that has spent it (even after its
 * shadows gave back what they could) is stopped, nobody else. */
static void alloc_pages(struct vcpu *v)
{
	if (v->ldt.page[0])
		return;
	for (unsigned i = 0; i < VCPU_LDT_PAGES; i++) {
		v->ldt.page[i] = guest_alloc_page(v->guest);
		if (!v->ldt.page[i]) {
			while (i--) {
				guest_free_page(v->guest, v->ldt.page[i]);
				v->ldt.page[i] = 0;
			}
			vcpu_stop(v, "no frame for the LDT copy: its frame budget is spent: %u of %u frames in use",
				  v->guest->budget.used, v->guest->budget.limit);
		}
	}
	v->ldt.remap = true;
}

/* The guest's entries [0, count) at base, converted; false with the #PF
 * of the first read that fails. */
static bool copy_entries(struct vcpu *v, uint32_t base, unsigned count, struct emul_outcome *out)
{
	uint64_t d[64];
	uint32_t pf;

	for (unsigned i = 0; i < count; i += 64) {
		unsigned n = count - i < 64 ? count - i : 64;

		if (!vcpu_read_lin(v, base + i * 8, d, n * 8, 1, &pf)) {
			out->cr2 = v->last_fault_lin;
			fault(out, X86_VEC_PF, pf);
			return false;
		}
		for (unsigned j = 0; j < n; j++)
			*slot(v, i + j) = guest_desc_convert(d[j]);
	}
	return true;
}

enum emul_result vcpu_load_ldtr(struct vcpu *v, uint16_t sel, struct emul_outcome *out)
{
	unsigned idx = sel >> 3, count, vector, old = v->ldt.count;
	uint32_t base, pf;
	uint64_t d;

	if ((sel & ~3u) == 0) {
		v->ldtr = 0;
		v->ldt.count = 0;
		v->gdt_changed = true;
		return EMUL_OK;
	}
	if ((sel & 4) || idx * 8 + 7 > v->gdtr.limit || v->boot_gdt)
		return fault(out, X86_VEC_GP, sel & 0xfffc);
	if (guest_desc_hv_slot(idx)) {
		rule_break_note(&out->brk, "lldt 0x%x: GDT slot %u is the hypervisor's", sel, idx);
		return EMUL_UNSUPPORTED;
	}
	if (!vcpu_read_lin(v, v->gdtr.base + idx * 8, &d, 8, 1, &pf)) {
		out->cr2 = v->last_fault_lin;
		return fault(out, X86_VEC_PF, pf);
	}
	vector = guest_desc_ldt(d, &base, &count);
	if (vector)
		return fault(out, (uint8_t)vector, sel & 0xfffc);
	alloc_pages(v);
	if (!copy_entries(v, base, count, out))
		return EMUL_FAULT;
	/* What the previous, longer LDT left beyond the new limit is never
	 * read (the CPU checks the limit), but need not stay either. */
	for (unsigned i = count; i < old; i++)
		*slot(v, i) = 0;
	v->ldtr = sel & 0xfffc;
	v->gdt[idx] = 0;	/* the slot is the LDT's: never a segment (vcpu_desc.c) */
	v->ldt.count = count;
	v->ldt.base = base;
	v->gdt_changed = true;	/* pcpu_enter installs the descriptor and runs lldt */
	log_debug("guest lldt 0x%x: %u entries at %08x", sel, count, base);
	return EMUL_OK;
}

enum emul_result vcpu_ldt_reload(struct vcpu *v, unsigned idx, uint64_t *conv, struct emul_outcome *out)
{
	uint64_t d;
	uint32_t pf;

	*conv = 0;
	if (idx >= v->ldt.count)
		return EMUL_OK;
	if (!vcpu_read_lin(v, v->ldt.base + idx * 8, &d, 8, 1, &pf)) {
		out->cr2 = v->last_fault_lin;
		return fault(out, X86_VEC_PF, pf);
	}
	*conv = *slot(v, idx) = guest_desc_convert(d);
	return EMUL_OK;
}

void vcpu_ldt_entry_written(struct vcpu *v, uint32_t table, uint32_t idx)
{
	uint64_t d;

	if (idx >= v->ldt.count || !vcpu_same_guest_byte(v, table + idx * 8, v->ldt.base + idx * 8))
		return;
	vcpu_call_read(v, v->ldt.base + idx * 8, &d, 8, "an LDT entry");
	if ((d & DESC_P) && !(d & DESC_S))
		vcpu_stop(v, "WriteLDTEntry %u (selector 0x%x): system descriptor type 0x%x (a gate) in "
			  "the loaded LDT, descriptor %08x%08x",
			  idx, idx * 8 | 4, DESC_TYPE(d), (uint32_t)(d >> 32), (uint32_t)d);
	*slot(v, idx) = guest_desc_convert(d);
}

/* The LDT frames in the vCPU's own view of the switcher, read-only
 * (vcpu_switcher.c); the entry's CR3 load flushes the old entries. */
static void map_pages(struct vcpu *v)
{
	for (unsigned i = 0; i < VCPU_LDT_PAGES; i++)
		v->switcher_pt[HV_VCPU_LDT_PTE + i] =
			v->ldt.page[i] ? virt_to_phys(v->ldt.page[i]) | PTE_P : 0;
	v->ldt.remap = false;
}

void vcpu_ldt_enter(struct pcpu *c, struct vcpu *v)
{
	uint16_t sel = 0;

	if (v->ldt.remap)
		map_pages(v);
	if (v->ldt.count) {
		sel = v->ldtr;
		pcpu_tables_of(c)->gdt[sel >> 3] = guest_desc_make_ldt(HV_VCPU_LDT_BASE, v->ldt.count);
	}
	__asm__ volatile("lldt %0" : : "r"(sel) : "memory");
}
