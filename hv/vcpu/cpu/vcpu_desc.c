/*
 * vcpu_desc.c - the guest's GDT, IDT, LDT and TR.
 *
 * The guest's lgdt/lidt/lldt/ltr trap (ring 1) and come here through the
 * emulator.  Its GDT cannot be the one the CPU uses: it would let the
 * guest build a ring-0 code segment or a call gate.  Instead, as lguest
 * does, its descriptors are validated and copied into the slots of our
 * own GDT with the same index, so that its selectors keep their numbers
 * (the converted entries are kept in the vCPU, v->gdt, and copied into
 * the GDT of the CPU that enters it, pcpu_enter):
 *   - code and data descriptors only (S = 1); system descriptors (TSS,
 *     LDT, gates) are not copied: ltr/lldt are emulated from the guest's
 *     own table instead;
 *   - DPL 0 becomes DPL 1 (the guest kernel runs in ring 1); DPL 3 stays;
 *     DPL 1 and 2 (unused by Linux) are refused;
 *   - the accessed bit is set, so the CPU never writes the GDT while the
 *     guest's read-only view of the switcher is loaded;
 *   - our own slots (HV_GDT_CS/DS/TSS/DFTSS_INDEX) are never touched.
 * The guest's segment loads then work natively wherever the CPU allows:
 * mov to ds/es/fs/gs and far jumps to its code segment, since a DPL 1
 * descriptor may be loaded at CPL 1 with RPL 0.  What faults (mov ss with
 * RPL 0, lret/iret to RPL 0, a slot that changed in memory since lgdt)
 * comes here via the emulator's load_seg callback, which re-reads the
 * descriptor from guest memory as the CPU would.
 */
#include "vcpu_state.h"
#include "guest_stop.h"
#include "vcpu_desc.h"
#include "vcpu_mem.h"
#include "vcpu_shared.h"
#include "segments.h"
#include "guest_desc.h"
#include "console.h"
#include "stop.h"
#include "hvlib.h"
#include "vcpu_switcher.h"

static void install(struct vcpu *v, unsigned idx, uint64_t guest_desc)
{
	if (!guest_desc_hv_slot(idx)) {
		/* The loaded LDT's slot holds our LDT descriptor on the CPU
		 * (vcpu_ldt.c): whatever the guest writes there is not a
		 * segment until it loads another LDT. */
		v->gdt[idx] = vcpu_ldt_slot(v, idx) ? 0 : guest_desc_convert(guest_desc);
		v->gdt_changed = true;
	}
}

enum emul_result vcpu_boot_gdt(struct vcpu *v, struct emul_outcome *out)
{
	/* Flat 4 GiB code (exec/read) and data (read/write), DPL 0 as the
	 * boot protocol promises: __BOOT_CS = 0x10, __BOOT_DS = 0x18. */
	install(v, 2, 0x00cf9a000000ffffull);
	install(v, 3, 0x00cf92000000ffffull);
	v->gdtr.base = 0;
	v->gdtr.limit = 4 * 8 - 1;
	v->boot_gdt = true;
	return EMUL_OK;
}

static enum emul_result fault(struct emul_outcome *out, uint8_t vector, uint32_t error)
{
	out->vector = vector;
	out->has_error = true;
	out->error = error;
	return EMUL_FAULT;
}

static enum emul_result refuse(struct emul_outcome *out, const char *fmt, unsigned a, unsigned b)
{
	rule_break_note(&out->brk, fmt, a, b);
	return EMUL_UNSUPPORTED;
}

/* Read guest GDT entry idx from guest memory (unless the boot GDT). */
static enum emul_result read_guest_desc(struct vcpu *v, unsigned idx, uint64_t *d,
					struct emul_outcome *out)
{
	uint32_t pf;

	if (v->boot_gdt) {
		*d = idx == 2 ? 0x00cf9a000000ffffull : idx == 3 ? 0x00cf92000000ffffull : 0;
		return EMUL_OK;
	}
	if (!vcpu_read_lin(v, v->gdtr.base + idx * 8, d, 8, 1, &pf)) {
		out->cr2 = v->gdtr.base + idx * 8;
		return fault(out, X86_VEC_PF, pf);
	}
	return EMUL_OK;
}

/* Does a segment register in the frame hold a selector of GDT slot idx? */
static bool in_use(struct vcpu *v, unsigned idx)
{
	const struct trap_frame *f = v->frame;
	uint32_t sels[6] = { f->cs, f->ss, f->ds, f->es, f->fs, f->gs };

	for (unsigned i = 0; i < 6; i++)
		if (((sels[i] & 0xffff) >> 3) == idx && !(sels[i] & 4))
			return true;
	return false;
}

/* Does new descriptor d for GDT slot idx leave the segment registers of
 * the frame usable?  The CPU keeps a loaded segment's descriptor in its
 * hidden cache: after lgdt, the old CS and SS stay usable until the guest
 * reloads them (head_32.S: lgdt, then ljmp).  We reload every segment
 * register on each entry, so a slot in use keeps its old descriptor when
 * the new one is unusable, or is CS's and no longer holds EIP. */
static bool keeps_cached(struct vcpu *v, unsigned idx, uint64_t d)
{
	const struct trap_frame *f = v->frame;
	uint64_t conv = guest_desc_convert(d);

	if (!in_use(v, idx))
		return false;
	if (!conv)
		return true;
	return ((f->cs & 0xffff) >> 3) == idx && !(f->cs & 4) && f->eip > guest_desc_limit(conv);
}

enum emul_result vcpu_load_gdt(struct vcpu *v, uint32_t base, uint16_t limit, struct emul_outcome *out)
{
	uint64_t table[HV_GDT_ENTRIES];
	unsigned n = ((unsigned)limit + 1) / 8;
	uint32_t pf;

	if ((unsigned)limit + 1 > sizeof(table))
		return refuse(out, "lgdt: the guest's GDT has %u entries, the hypervisor holds %u",
			      n, HV_GDT_ENTRIES);
	memset(table, 0, sizeof(table));
	if (!vcpu_read_lin(v, base, table, (unsigned)limit + 1, 1, &pf)) {
		out->cr2 = base;	/* approximately: the first page */
		return fault(out, X86_VEC_PF, pf);
	}
	for (unsigned i = 1; i < HV_GDT_ENTRIES; i++) {
		uint64_t d = i < n ? table[i] : 0;

		if (guest_desc_hv_slot(i) && (d & DESC_S) && (d & DESC_P))
			log_warn("guest GDT slot %u (selector 0x%x) is the hypervisor's: the guest cannot use it",
				 i, i * 8);
		if (keeps_cached(v, i, d))
			continue;
		install(v, i, d);
	}
	v->gdtr.base = base;
	v->gdtr.limit = limit;
	v->boot_gdt = false;
	log_debug("guest lgdt base %08x limit %04x", base, limit);
	return EMUL_OK;
}

/* lgdt/lidt and VMI SetGDT/SetIDT: the IDT is only remembered, for
 * delivery through it (vcpu_exception.c). */
enum emul_result vcpu_load_dtr(struct vcpu *v, int which, uint32_t base, uint16_t limit,
			       struct emul_outcome *out)
{
	if (which == VCPU_GDTR)
		return vcpu_load_gdt(v, base, limit, out);
	v->idtr.base = base;
	v->idtr.limit = limit;
	/* Its vector 0x80 may be a direct gate (vcpu_syscall.c): read the
	 * new one, whether by SetIDT or a plain lidt, or the CPU would go on
	 * entering the old IDT's handler. */
	vcpu_syscall_gate_refresh(v);
	log_debug("guest lidt base %08x limit %04x", base, limit);
	return EMUL_OK;
}

/* VMI SetGDT/SetIDT: from the 6-byte pseudo-descriptor at lin. */
enum emul_result vcpu_set_dtr_from(struct vcpu *v, int which, uint32_t lin, struct emul_outcome *out)
{
	uint8_t dtr[6];

	vcpu_call_read(v, lin, dtr, 6, "a descriptor-table pointer");
	return vcpu_load_dtr(v, which, le32(dtr + 2), le16(dtr), out);
}

/* VMI GetGDT/GetIDT: the pseudo-descriptor, stored at lin. */
void vcpu_store_dtr(struct vcpu *v, int which, uint32_t lin)
{
	const struct desc_reg *r = which == VCPU_GDTR ? &v->gdtr : &v->idtr;
	uint8_t dtr[6];

	dtr[0] = (uint8_t)r->limit; dtr[1] = (uint8_t)(r->limit >> 8);
	memcpy(&dtr[2], &r->base, 4);
	vcpu_call_write(v, lin, dtr, 6, "a descriptor-table pointer");
}

/* VMI WriteGDTEntry/WriteLDTEntry/WriteIDTEntry: descriptor lo:hi into
 * entry idx of the table at linear table.  An entry of the loaded GDT
 * (through any alias) is installed in ours at once. */
void vcpu_write_desc(struct vcpu *v, bool gdt, uint32_t table, uint32_t idx, uint32_t lo, uint32_t hi)
{
	uint32_t desc[2] = { lo, hi };

	vcpu_call_write(v, table + idx * 8, desc, 8, "a descriptor");
	if (gdt && idx * 8 + 7 <= v->gdtr.limit &&
	    vcpu_same_guest_byte(v, table + idx * 8, v->gdtr.base + idx * 8))
		vcpu_gdt_entry_changed(v, idx);
}

/* WriteGDTEntry into the loaded GDT.  Linux writes only code, data, TSS
 * and LDT descriptors there; a present gate (call, task, interrupt,
 * trap) or reserved system type is a way into ring 0 that a guest has
 * no business building: a rule break, not a silent refusal. */
void vcpu_gdt_entry_changed(struct vcpu *v, unsigned idx)
{
	struct emul_outcome out;
	uint64_t d;

	if (idx >= HV_GDT_ENTRIES || read_guest_desc(v, idx, &d, &out) != EMUL_OK)
		return;
	if ((d & DESC_P) && !(d & DESC_S) && !((0x0a0eu >> DESC_TYPE(d)) & 1))
		vcpu_stop(v, "WriteGDTEntry %u (selector 0x%x): system descriptor type 0x%x (a gate "
			  "or reserved type) in the loaded GDT, descriptor %08x%08x",
			  idx, idx * 8, DESC_TYPE(d), (uint32_t)(d >> 32), (uint32_t)d);
	install(v, idx, d);
}

/* The descriptor the CPU uses for sel: our GDT copy or the LDT's
 * (vcpu_ldt.c); 0 for the null selector, one beyond its table, or one of
 * the hypervisor's slots. */
static uint64_t cpu_desc(const struct vcpu *v, uint16_t sel)
{
	unsigned idx = sel >> 3;

	if (sel & 4)
		return vcpu_ldt_entry(v, idx);
	return idx == 0 || idx >= HV_GDT_ENTRIES || guest_desc_hv_slot(idx) ? 0 : v->gdt[idx];
}

uint32_t vcpu_seg_base(struct vcpu *v, uint16_t sel)
{
	return guest_desc_base(cpu_desc(v, sel));
}

uint32_t vcpu_cs_limit(const struct vcpu *v, uint16_t cs)
{
	uint64_t d = cpu_desc(v, cs);

	return d ? guest_desc_limit(d) : 0;
}

bool vcpu_eip_in_cs(const struct vcpu *v, uint16_t cs, uint32_t eip)
{
	return cpu_desc(v, cs) && eip <= vcpu_cs_limit(v, cs);
}

/* ds, es, fs or gs of the frame; false for another register. */
static bool set_data_seg(struct trap_frame *f, int seg, uint16_t sel)
{
	switch (seg) {
	case SEG_DS: f->ds = sel; return true;
	case SEG_ES: f->es = sel; return true;
	case SEG_FS: f->fs = sel; return true;
	case SEG_GS: f->gs = sel; return true;
	}
	return false;
}

/* The rules the CPU applies to a load into seg (SEG_CS_RETURN: the CS
 * of lret/iret), guest_desc.h. */
static enum seg_load load_kind(int seg)
{
	switch (seg) {
	case SEG_CS: return SEG_LOAD_CS_TRANSFER;
	case SEG_CS_RETURN: return SEG_LOAD_CS_RETURN;
	case SEG_SS: return SEG_LOAD_SS;
	default: return SEG_LOAD_DATA;
	}
}

/*
 * A segment load the emulator performs (or VMI IRET): the descriptor is
 * re-read from guest memory as the CPU would, then checked with the
 * CPU's privilege rules at the frame's CPL (f->cs, which for the SS of a
 * return is already the new CS).  Once the DPL was copied into
 * the RPL unchecked: a ring-3 far jump to the kernel's code selector ran
 * on in ring 1.
 */
enum emul_result vcpu_load_seg(struct vcpu *v, struct trap_frame *f, int seg, uint16_t sel,
			       struct emul_outcome *out)
{
	unsigned idx = sel >> 3, cpl = f->cs & 3, vector;
	uint64_t gd, d;
	uint16_t loaded = 0;
	enum emul_result r;

	if (idx == 0 && !(sel & 4)) {
		if (seg == SEG_SS || seg == SEG_CS || seg == SEG_CS_RETURN)
			return fault(out, X86_VEC_GP, 0);
		set_data_seg(f, seg, sel);
		return EMUL_OK;
	}
	if (sel & 4) {
		/* Beyond the LDT's limit (or none): #GP(sel), as the CPU. */
		r = vcpu_ldt_reload(v, idx, &d, out);
		if (r != EMUL_OK)
			return r;
	} else {
		if (idx * 8 + 7 > v->gdtr.limit)
			return fault(out, X86_VEC_GP, sel & 0xfffc);
		if (guest_desc_hv_slot(idx)) {
			/* Ours, never the guest's: it reads as an empty slot,
			 * #GP(sel) as natively (Linux leaves these slots empty
			 * or a TSS), whoever asks: the guest kernel's own
			 * load, or the sigreturn frame of a user program that
			 * its IRET or exit path loads (docs/HV.md, "Descriptor
			 * tables"). */
			d = 0;
		} else {
			r = read_guest_desc(v, idx, &gd, out);
			if (r != EMUL_OK)
				return r;
			install(v, idx, gd);	/* the CPU reads memory at every load; so do we */
			d = v->gdt[idx];
		}
	}
	vector = guest_desc_load_check(d, sel, load_kind(seg), cpl, &loaded);
	if (vector)
		return fault(out, (uint8_t)vector, sel & 0xfffc);
	switch (seg) {
	case SEG_SS: f->ss = loaded; return EMUL_OK;
	case SEG_CS: case SEG_CS_RETURN: f->cs = loaded; return EMUL_OK;
	}
	if (!set_data_seg(f, seg, loaded))
		return refuse(out, "load_seg: unknown segment register %u", (unsigned)seg, 0);
	return EMUL_OK;
}

enum emul_result vcpu_load_tr(struct vcpu *v, uint16_t sel, struct emul_outcome *out)
{
	unsigned idx = sel >> 3;
	uint64_t d;
	enum emul_result r;

	if (idx == 0 || (sel & 4) || idx * 8 + 7 > v->gdtr.limit)
		return fault(out, X86_VEC_GP, sel & 0xfffc);
	r = read_guest_desc(v, idx, &d, out);
	if (r != EMUL_OK)
		return r;
	if ((d & DESC_S) || DESC_TYPE(d) != 0x9)
		return fault(out, X86_VEC_GP, sel & 0xfffc);
	if (!(d & DESC_P))
		return fault(out, X86_VEC_NP, sel & 0xfffc);
	v->tr = sel;
	v->tr_base = guest_desc_base(d);
	log_debug("guest ltr 0x%x: TSS at %08x", sel, v->tr_base);
	return EMUL_OK;
}

/* Is sel usable in our GDT for segment register use `use` at privilege cpl? */
static bool selector_ok(const struct vcpu *v, uint16_t sel, enum seg_use use, unsigned cpl)
{
	uint64_t d = cpu_desc(v, sel);

	return d && guest_desc_usable(d, sel, use, cpl);
}

bool vcpu_selector_ok(const struct vcpu *v, uint16_t sel, enum seg_use use, unsigned cpl)
{
	return selector_ok(v, sel, use, cpl);
}

/* The frame's selectors in frame_ok's order, the data ones cut to their
 * 16 bits in the frame as well (the CPU pushes them as 32-bit words whose
 * upper half is not defined). */
static void frame_selectors(struct trap_frame *f, uint16_t sel[6])
{
	uint32_t *data[4] = { &f->ds, &f->es, &f->fs, &f->gs };

	sel[0] = (uint16_t)f->cs;
	sel[1] = (uint16_t)f->ss;
	for (unsigned i = 0; i < 4; i++) {
		*data[i] &= 0xffff;
		sel[2 + i] = (uint16_t)*data[i];
	}
}

/* The remembered frame for f's side: the guest kernel's or user mode's. */
static struct frame_ok *frame_ok_for(struct vcpu *v, const struct trap_frame *f)
{
	return &v->frame_ok[(f->cs & 3) == 3];
}

/* The frame passed before with these very selectors and descriptors:
 * every check below would come out the same.  The descriptors are
 * compared, not a note that they changed, so no write to the GDT or LDT
 * can be missed. */
static bool frame_passed_before(struct vcpu *v, const struct trap_frame *f, const uint16_t sel[6])
{
	const struct frame_ok *ok = frame_ok_for(v, f);

	if (!ok->valid || f->eip > ok->cs_limit)
		return false;
	for (unsigned i = 0; i < 6; i++)
		if (sel[i] != ok->sel[i] || cpu_desc(v, sel[i]) != ok->desc[i])
			return false;
	return true;
}

static void remember_frame(struct vcpu *v, struct trap_frame *f)
{
	struct frame_ok *ok = frame_ok_for(v, f);

	frame_selectors(f, ok->sel);
	for (unsigned i = 0; i < 6; i++)
		ok->desc[i] = cpu_desc(v, ok->sel[i]);
	ok->cs_limit = vcpu_cs_limit(v, (uint16_t)f->cs);
	ok->valid = true;
}

bool vcpu_check_frame(struct vcpu *v, char *why, unsigned whylen)
{
	struct trap_frame *f = v->frame;
	unsigned cpl = f->cs & 3;
	uint32_t *data[4] = { &f->ds, &f->es, &f->fs, &f->gs };
	static const char *const names[4] = { "ds", "es", "fs", "gs" };
	uint16_t sel[6];

	if ((f->cs >> 16) == 0 && (f->ss >> 16) == 0) {
		frame_selectors(f, sel);
		if (frame_passed_before(v, f, sel))
			return true;
	}
	frame_ok_for(v, f)->valid = false;

	if (cpl != 1 && cpl != 3) {
		fmt_snprintf(why, whylen, "cs %04x: ring %u", f->cs & 0xffff, cpl);
		return false;
	}
	if (!selector_ok(v, f->cs, SEG_USE_CODE, cpl)) {
		fmt_snprintf(why, whylen, "cs %04x is not a usable code segment", f->cs & 0xffff);
		return false;
	}
	/* Every path that sets CS:EIP checks this where the CPU would
	 * (vcpu_exception.c, hypercall.c, vcpu.c); this is the last line:
	 * the switcher's iret must not fault at CPL 0. */
	if (!vcpu_eip_in_cs(v, f->cs, f->eip)) {
		fmt_snprintf(why, whylen, "eip %08x is beyond the limit %08x of cs %04x",
			     f->eip, vcpu_cs_limit(v, f->cs), f->cs & 0xffff);
		return false;
	}
	if (!selector_ok(v, f->ss, SEG_USE_STACK, cpl)) {
		fmt_snprintf(why, whylen, "ss %04x is not a usable stack segment at ring %u",
			     f->ss & 0xffff, cpl);
		return false;
	}
	for (unsigned i = 0; i < 4; i++) {
		uint16_t sel = *data[i] & 0xffff;

		*data[i] = sel;
		if ((sel & ~3u) == 0 || selector_ok(v, sel, SEG_USE_DATA, cpl))
			continue;
		/* The CPU would have nulled it on a return to ring 3, or
		 * the guest changed the descriptor under a loaded selector:
		 * null is what the guest would find on hardware too, as
		 * soon as it reloads. */
		log_debug("guest %s %04x no longer loads; nulled", names[i], sel);
		*data[i] = 0;
	}
	remember_frame(v, f);
	return true;
}
