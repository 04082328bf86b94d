/*
 * vcpu_syscall.c - system calls without an exit: the guest's int $0x80
 * gate in the CPU's own IDT (docs/VROM.md, "The ROM's IRET, cheap exits, system calls without an exit").
 *
 * Normally vector 0x80 in our IDT is a DPL 0 gate, so a user's int $0x80
 * is #GP, an exit, and the hypervisor delivers it through the guest's
 * IDT.  When the guest asks for it (VMI_SHARED_G_INT80 in the shared
 * page: its handler's first instruction clears the virtual IF) and the
 * hypervisor offers it (VMI_SHARED_F_INT80, fastpaths=on), the CPU's
 * vector 0x80 becomes a DPL 3 trap gate straight to the guest's handler
 * at ring 1, and TSS ss1:esp1 the kernel stack UpdateKernelStack gave:
 * the CPU itself switches to the guest kernel's stack and enters it.
 *
 * Safety, since a guest value now reaches the CPU's IDT and TSS: the
 * gate is rebuilt before every entry from the guest's IDT entry (read
 * when the guest loads its IDT or writes an entry) and the vCPU's GDT
 * copy as it is then, and installed only if the handler's selector names
 * a present, non-conforming 32-bit code segment of DPL 1 in the GDT
 * (never an LDT, never one of our DPL 0 slots: the CPU can only land in
 * ring 1), its offset is within that segment's limit, and ss1 names a
 * present writable expand-up data segment of DPL 1.  Anything else
 * leaves the DPL 0 gate: the old path, with the hypervisor's checks.
 * The gate is a trap gate so that the real IF stays 1 (the guest's IF is
 * virtual); that leaves one instruction boundary, at the handler's first
 * instruction, where the virtual IF is still the user's: an exit there
 * clears it, as the guest's interrupt gate would have.
 */
#include "vcpu_state.h"
#include "traps.h"
#include "vcpu_mem.h"
#include "vcpu_shared.h"
#include "pcpu.h"
#include "segments.h"
#include "guest_desc.h"
#include "console.h"
#include "hvlib.h"
#include "vmi_abi.h"

#define SYSCALL_VECTOR 0x80

/* guest_desc.h's vocabulary, as bits of the 64-bit descriptor. */

/* The guest's IDT entry 0x80 changed, or its IDT did: read it again
 * (0 if it cannot be read: no direct gate). */
void vcpu_syscall_gate_refresh(struct vcpu *v)
{
	uint32_t gate[2], pf;

	v->int80_gate = 0;
	if (!v->paravirtual || SYSCALL_VECTOR * 8 + 7 > v->idtr.limit)
		return;
	if (vcpu_read_lin(v, v->idtr.base + SYSCALL_VECTOR * 8, gate, 8, 1, &pf))
		v->int80_gate = gate[0] | (uint64_t)gate[1] << 32;
}

static bool ring1_segment(const struct vcpu *v, uint32_t sel, uint64_t *d)
{
	unsigned idx = sel >> 3;

	if ((sel & 4) || idx == 0 || idx >= HV_GDT_ENTRIES)
		return false;
	*d = v->gdt[idx];
	return (*d & DESC_P) && (*d & DESC_S) && DESC_DPL(*d) == 1;
}

/* The direct gate for v as it stands now, or false. */
static bool direct_gate(const struct vcpu *v, uint16_t *sel, uint32_t *offset, uint32_t *ss1)
{
	const struct gate g = gate_decode(v->int80_gate);
	uint64_t cd, sd;

	if (!v->paravirtual || !v->guest->fastpaths ||
	    !(v->shared->features & VMI_SHARED_F_INT80) ||
	    !(v->shared->guest_flags & VMI_SHARED_G_INT80) || !v->kernel_ss)
		return false;
	/* The guest's own gate: present, DPL 3 (users may call it), a
	 * 32-bit interrupt or trap gate. */
	if (!g.present || g.dpl != 3 || !gate_is_32bit(g.type))
		return false;
	*sel = g.sel;
	*offset = g.offset;
	if (!ring1_segment(v, *sel, &cd) || !(cd & DESC_CODE_BIT) || (cd & DESC_CONFORMING_BIT) ||
	    !(cd & DESC_DB) || *offset > guest_desc_limit(cd))
		return false;
	if (!ring1_segment(v, v->kernel_ss, &sd) || (sd & DESC_CODE_BIT) || !(sd & DESC_RW_BIT) ||
	    (sd & DESC_CONFORMING_BIT))
		return false;
	*sel = (uint16_t)((*sel & ~3u) | 1);
	*ss1 = (v->kernel_ss & ~3u) | 1;
	return true;
}

/* What direct_gate() decides from (struct int80_inputs, vcpu.h). */
static void gate_inputs(const struct vcpu *v, struct int80_inputs *in)
{
	uint16_t cs = gate_decode(v->int80_gate).sel, ss = (uint16_t)v->kernel_ss;

	in->gate = v->int80_gate;
	in->code = !(cs & 4) && (cs >> 3) < HV_GDT_ENTRIES ? v->gdt[cs >> 3] : 0;
	in->stack = !(ss & 4) && (ss >> 3) < HV_GDT_ENTRIES ? v->gdt[ss >> 3] : 0;
	in->kernel_ss = v->kernel_ss;
	in->allowed = v->paravirtual && v->guest->fastpaths &&
		      (v->shared->features & VMI_SHARED_F_INT80) &&
		      (v->shared->guest_flags & VMI_SHARED_G_INT80);
}

/* Field by field: this runs at every entry, and the byte loop of memcmp()
 * over the whole struct cost about 270 instructions of each exit. */
static bool same_inputs(const struct int80_inputs *a, const struct int80_inputs *b)
{
	return a->gate == b->gate && a->code == b->code && a->stack == b->stack &&
	       a->kernel_ss == b->kernel_ss && a->allowed == b->allowed;
}

/* Before entering v: the CPU's vector 0x80 and ss1:esp1 for it.  The
 * decision is taken again only when something it depends on changed (the
 * guest's gate, its code and stack descriptors, the kernel stack segment,
 * the features); esp1 follows UpdateKernelStack at every entry. */
void vcpu_syscall_gate_install(struct vcpu *v)
{
	struct int80_inputs in;
	uint16_t sel = 0;
	uint32_t offset = 0, ss1 = 0;

	gate_inputs(v, &in);
	if (v->int80_decided && same_inputs(&in, &v->int80_inputs)) {
		sel = v->int80_sel;
		offset = v->int80_target;
		ss1 = v->int80_ss1;
	} else {
		v->int80_direct = direct_gate(v, &sel, &offset, &ss1);
		memcpy(&v->int80_inputs, &in, sizeof(in));
		v->int80_decided = true;
		v->int80_sel = sel;
		v->int80_ss1 = ss1;
	}
	if (v->int80_direct) {
		v->int80_target = offset;
		cpu_tables_set_direct_gate(SYSCALL_VECTOR, sel, offset, ss1, v->kernel_esp);
	} else {
		cpu_tables_clear_direct_gate(SYSCALL_VECTOR);
	}
}

/*
 * After an exit: one that came exactly at the handler's first
 * instruction, after the CPU entered it but before that instruction
 * cleared the virtual IF, finishes what the guest's interrupt gate
 * promises.  (The handler runs at ring 1 in the gate's code segment.)
 */
void vcpu_syscall_entry_window(struct vcpu *v, const struct trap_frame *f)
{
	const struct gate g = gate_decode(v->int80_gate);

	if (v->int80_direct && (f->cs & 3) == 1 && f->eip == v->int80_target &&
	    (uint16_t)(f->cs & ~3u) == (uint16_t)(g.sel & ~3u) && g.type == GATE_INT32) {
		v->vif = false;
		v->stats.int80_entry_window++;
	}
}
