/*
 * segments.c - segment-register loads and far control transfers:
 * mov Sreg, pop Sreg, lss/lds/les/lfs/lgs, ljmp, lcall, lret, iret.
 *
 * The emulator computes the new selector, offset and stack; ops->load_seg
 * (the vCPU owner, who owns the descriptor tables) validates the guest's
 * descriptor and installs the selector in the frame.  A CS load always
 * comes with the new eip already in f->eip.  If any step fails the caller
 * (emulate_one) restores the whole frame, so the guest sees the fault at
 * the instruction with its registers untouched, as on hardware.
 *
 * Only transfers to the same privilege level and returns to an outer one
 * (guest kernel -> guest user) exist here: call gates, task switches and
 * virtual-8086 mode are not emulated.
 */
#include "emul_internal.h"
#include "hvlib.h"

#define TRY(expr) do { enum emul_result r_ = (expr); if (r_ != EMUL_OK) return r_; } while (0)

static enum emul_result load_seg(struct emul *e, int seg, uint32_t sel)
{
	return e->ops->load_seg(e->ops->ctx, e->f, seg, (uint16_t)sel, e->out);
}

/* The guest's view of a privilege level: RPL 0 and 1 are both its kernel
 * (it runs in ring 1 but thinks ring 0). */
static unsigned guest_level(unsigned rpl)
{
	return rpl <= 1 ? 1 : rpl;
}

/* 8e /r: mov Sreg, r/m16.  CS cannot be loaded this way; 6 and 7 do not exist. */
static enum emul_result mov_sreg(struct emul *e)
{
	TRY(emul_decode_modrm(e));
	TRY(emul_start(e, EMUL_KIND_MOV_SREG));
	if (e->reg == SEG_CS || e->reg > SEG_GS)
		return emul_ud(e);
	uint32_t sel;
	TRY(emul_read_rm(e, 2, &sel));
	return load_seg(e, e->reg, sel);
}

/* pop es/ss/ds/fs/gs: an operand-size slot, of which the low 16 bits count. */
static enum emul_result pop_sreg(struct emul *e, int seg)
{
	TRY(emul_start(e, EMUL_KIND_POP_SREG));
	unsigned size = emul_opsize(e);
	uint32_t sel;
	TRY(emul_read_stack(e, 0, size, &sel));
	uint32_t esp = e->f->esp + size;
	TRY(load_seg(e, seg, sel));
	e->f->esp = esp;
	return EMUL_OK;
}

/* A far pointer in memory, m16:16 or m16:32: offset then selector. */
static void split_far_pointer(const uint8_t *b, unsigned size, uint32_t *off, uint32_t *sel)
{
	*off = size == 4 ? le32(b) : le16(b);
	*sel = le16(b + size);
}

/* lss/lds/les/lfs/lgs r, m16:32: offset then selector. */
static enum emul_result load_far_pointer(struct emul *e, int seg)
{
	TRY(emul_decode_modrm(e));
	if (e->mod == 3) {
		/* c4/c5 with a register operand are VEX prefixes in 32-bit mode. */
		if (!e->twobyte)
			return emul_unsupported(e, "VEX-encoded instruction");
		TRY(emul_start(e, EMUL_KIND_LSS));
		return emul_ud(e);
	}
	TRY(emul_start(e, EMUL_KIND_LSS));
	unsigned size = emul_opsize(e);
	uint8_t b[6];
	TRY(emul_read_mem(e, e->mem_seg, e->ea, b, size + 2));
	uint32_t off, sel;
	split_far_pointer(b, size, &off, &sel);
	TRY(load_seg(e, seg, sel));
	emul_set_reg(e, e->reg, size, off);
	return EMUL_OK;
}

/* The target of a far jmp/call: ptr16:32 immediate (ea/9a) or m16:32 (ff /5, /3). */
static enum emul_result far_target(struct emul *e, bool indirect, uint32_t *off, uint32_t *sel)
{
	unsigned size = emul_opsize(e);
	if (!indirect) {
		uint16_t s;
		TRY(emul_fetch_imm(e, size, off));
		TRY(emul_fetch_u16(e, &s));
		*sel = s;
		return EMUL_OK;
	}
	if (e->mod == 3)
		return emul_ud(e);
	uint8_t b[6];
	TRY(emul_read_mem(e, e->mem_seg, e->ea, b, size + 2));
	split_far_pointer(b, size, off, sel);
	return EMUL_OK;
}

static enum emul_result far_jmp(struct emul *e, bool indirect)
{
	uint32_t off, sel;
	TRY(emul_start(e, EMUL_KIND_FAR_JMP));
	TRY(far_target(e, indirect, &off, &sel));
	e->f->eip = off;
	e->eip_set = true;
	return load_seg(e, SEG_CS, sel);
}

/* Push the return cs:eip (operand-size slots), then transfer.  The stack
 * is written first: if the CS load then fails, the words below esp are
 * harmless and esp is restored with the rest of the frame. */
static enum emul_result far_call(struct emul *e, bool indirect)
{
	uint32_t off, sel;
	TRY(emul_start(e, EMUL_KIND_FAR_CALL));
	TRY(far_target(e, indirect, &off, &sel));
	unsigned size = emul_opsize(e);
	uint32_t ret = e->eip0 + e->out->len;
	uint32_t cs = e->f->cs & 0xffff;
	uint8_t b[8];
	for (unsigned i = 0; i < size; i++) {
		b[i] = (uint8_t)(ret >> (8 * i));
		b[size + i] = (uint8_t)(cs >> (8 * i));
	}
	uint32_t esp = e->f->esp - 2 * size;
	TRY(emul_write_mem(e, SEG_SS, esp, b, 2 * size));
	e->f->esp = esp;
	e->f->eip = off;
	e->eip_set = true;
	return load_seg(e, SEG_CS, sel);
}

/* Common to lret and iret: the popped CS decides between a return to the
 * same level and one to an outer level (which also pops esp and ss). */
static enum emul_result check_return_cs(struct emul *e, uint32_t sel, bool *outer)
{
	if ((sel & 0xfffc) == 0)
		return emul_fault(e, X86_VEC_GP, true, 0);
	unsigned now = guest_level(e->cpl), to = guest_level(sel & 3);
	if (to < now)		/* a return can never raise the privilege */
		return emul_fault(e, X86_VEC_GP, true, sel & 0xfffc);
	*outer = to > now;
	return EMUL_OK;
}

/* Install cs:eip and, for an outer return, ss:esp. */
static enum emul_result finish_return(struct emul *e, uint32_t eip, uint32_t cs, bool outer,
				      uint32_t esp, uint32_t ss)
{
	e->f->eip = eip;
	e->eip_set = true;
	TRY(load_seg(e, SEG_CS_RETURN, cs));
	e->f->esp = esp;
	if (outer)
		TRY(load_seg(e, SEG_SS, ss));
	return EMUL_OK;
}

/* cb: lret; ca iw: lret imm16 (releases imm16 bytes of parameters from
 * both the inner and the outer stack). */
static enum emul_result far_ret(struct emul *e, bool with_imm)
{
	TRY(emul_start(e, EMUL_KIND_FAR_RET));
	uint16_t imm = 0;
	if (with_imm)
		TRY(emul_fetch_u16(e, &imm));
	unsigned size = emul_opsize(e);
	uint32_t eip, cs, esp = 0, ss = 0;
	bool outer;
	TRY(emul_read_stack(e, 0, size, &eip));
	TRY(emul_read_stack(e, size, size, &cs));
	TRY(check_return_cs(e, cs & 0xffff, &outer));
	uint32_t next = 2 * size + imm;
	if (outer) {
		TRY(emul_read_stack(e, next, size, &esp));
		TRY(emul_read_stack(e, next + size, size, &ss));
		esp += imm;
	} else {
		esp = e->f->esp + next;
	}
	return finish_return(e, eip, cs & 0xffff, outer, esp, ss & 0xffff);
}

/*
 * The flags iret may set in the hardware eflags: the arithmetic flags,
 * TF, DF, NT, RF, AC, ID.  IF is virtual (ops->set_if) and IOPL stays 0
 * so that the guest keeps trapping on cli/sti/in/out; VIF/VIP/VM are
 * never given to the guest.
 */
#define IRET_FLAGS_MASK 0x00254dd5u

static enum emul_result iret(struct emul *e)
{
	TRY(emul_start(e, EMUL_KIND_IRET));
	if (e->op16)
		return emul_unsupported(e, "16-bit iret");
	if (e->f->eflags & X86_EFLAGS_NT)
		return emul_unsupported(e, "iret with EFLAGS.NT set (task return)");
	uint32_t eip, cs, flags, esp = 0, ss = 0;
	bool outer;
	TRY(emul_read_stack(e, 0, 4, &eip));
	TRY(emul_read_stack(e, 4, 4, &cs));
	TRY(emul_read_stack(e, 8, 4, &flags));
	if (flags & X86_EFLAGS_VM)
		return emul_unsupported(e, "iret to virtual-8086 mode");
	if (flags & X86_EFLAGS_NT)
		return emul_unsupported(e, "iret setting EFLAGS.NT");
	TRY(check_return_cs(e, cs & 0xffff, &outer));
	if (outer) {
		TRY(emul_read_stack(e, 12, 4, &esp));
		TRY(emul_read_stack(e, 16, 4, &ss));
	} else {
		esp = e->f->esp + 12;
	}
	TRY(finish_return(e, eip, cs & 0xffff, outer, esp, ss & 0xffff));
	e->f->eflags = (e->f->eflags & ~IRET_FLAGS_MASK) | (flags & IRET_FLAGS_MASK);
	/* Only the guest kernel (virtual CPL 0 <= IOPL) may change IF. */
	if (emul_guest_kernel(e))
		e->ops->set_if(e->ops->ctx, (flags & X86_EFLAGS_IF) != 0);
	return EMUL_OK;
}

/* ff /3 and ff /5 are the far forms; the rest of group 5 (inc, dec, near
 * call/jmp, push) never traps for privilege reasons. */
static enum emul_result group5(struct emul *e)
{
	TRY(emul_decode_modrm(e));
	if (e->reg == 3)
		return far_call(e, true);
	if (e->reg == 5)
		return far_jmp(e, true);
	return emul_unsupported(e, "ff group form");
}

enum emul_result emul_segments(struct emul *e, bool *handled)
{
	*handled = true;
	if (!e->twobyte) {
		switch (e->op) {
		case 0x07: return pop_sreg(e, SEG_ES);
		case 0x17: return pop_sreg(e, SEG_SS);
		case 0x1f: return pop_sreg(e, SEG_DS);
		case 0x8e: return mov_sreg(e);
		case 0xc4: return load_far_pointer(e, SEG_ES);
		case 0xc5: return load_far_pointer(e, SEG_DS);
		case 0xea: return far_jmp(e, false);
		case 0x9a: return far_call(e, false);
		case 0xff: return group5(e);
		case 0xcb: return far_ret(e, false);
		case 0xca: return far_ret(e, true);
		case 0xcf: return iret(e);
		}
	} else {
		switch (e->op) {
		case 0xa1: return pop_sreg(e, SEG_FS);
		case 0xa9: return pop_sreg(e, SEG_GS);
		case 0xb2: return load_far_pointer(e, SEG_SS);
		case 0xb4: return load_far_pointer(e, SEG_FS);
		case 0xb5: return load_far_pointer(e, SEG_GS);
		}
	}
	*handled = false;
	return EMUL_OK;
}
