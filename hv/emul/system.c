/*
 * system.c - the system instructions: interrupt flag, hlt, descriptor-table
 * registers (0f 00 / 0f 01 groups), control and debug registers, MSRs,
 * cpuid, cache and TLB maintenance.
 */
#include "emul_internal.h"
#include "hvlib.h"

#define TRY(expr) do { enum emul_result r_ = (expr); if (r_ != EMUL_OK) return r_; } while (0)

static enum emul_result cli_sti(struct emul *e, bool on)
{
	TRY(emul_start(e, on ? EMUL_KIND_STI : EMUL_KIND_CLI));
	/* The virtual IOPL is 0, so only the guest kernel may change IF. */
	TRY(emul_need_kernel(e));
	e->ops->set_if(e->ops->ctx, on);
	return EMUL_OK;
}

static enum emul_result hlt(struct emul *e)
{
	TRY(emul_start(e, EMUL_KIND_HLT));
	TRY(emul_need_kernel(e));
	return e->ops->halt(e->ops->ctx);
}

/* lgdt/lidt m16&32: limit, then base (24 bits with a 16-bit operand). */
static enum emul_result load_dtr(struct emul *e, int which)
{
	uint8_t b[6];
	TRY(emul_read_mem(e, e->mem_seg, e->ea, b, 6));
	uint16_t limit = le16(b);
	uint32_t base = le32(b + 2);
	if (e->op16)
		base &= 0x00ffffff;
	return e->ops->load_dtr(e->ops->ctx, which, base, limit, e->out);
}

static enum emul_result store_dtr(struct emul *e, int which)
{
	if (!e->ops->read_dtr)
		return emul_unsupported(e, which ? "sidt: no read_dtr op" : "sgdt: no read_dtr op");
	uint32_t base;
	uint16_t limit;
	e->ops->read_dtr(e->ops->ctx, which, &base, &limit);
	uint8_t b[6] = { (uint8_t)limit, (uint8_t)(limit >> 8), (uint8_t)base,
			 (uint8_t)(base >> 8), (uint8_t)(base >> 16), (uint8_t)(base >> 24) };
	return emul_write_mem(e, e->mem_seg, e->ea, b, 6);
}

/* smsw: the low 16 bits of CR0 to memory; a 32-bit register gets all of
 * CR0 (what current CPUs store), a 16-bit one only its low half. */
static enum emul_result smsw(struct emul *e)
{
	uint32_t cr0 = e->ops->read_cr(e->ops->ctx, 0);
	if (e->mod == 3) {
		emul_set_reg(e, e->rm, emul_opsize(e), cr0);
		return EMUL_OK;
	}
	uint8_t b[2] = { (uint8_t)cr0, (uint8_t)(cr0 >> 8) };
	return emul_write_mem(e, e->mem_seg, e->ea, b, 2);
}

/* lmsw: loads CR0 bits 0-3 (PE MP EM TS); it can set PE but never clear it. */
static enum emul_result lmsw(struct emul *e)
{
	uint32_t src;
	TRY(emul_read_rm(e, 2, &src));
	uint32_t cr0 = e->ops->read_cr(e->ops->ctx, 0);
	uint32_t val = (cr0 & ~0xfu) | (src & 0xf) | (cr0 & X86_CR0_PE);
	return e->ops->write_cr(e->ops->ctx, 0, val, e->out);
}

/* 0f 01: sgdt sidt lgdt lidt smsw - lmsw invlpg; the mod == 3 forms other
 * than smsw/lmsw are different instructions (vmcall, monitor, xgetbv,
 * rdtscp ...), none of which is emulated. */
static enum emul_result group7(struct emul *e)
{
	static const unsigned kinds[8] = {
		EMUL_KIND_OTHER, EMUL_KIND_OTHER, EMUL_KIND_LGDT, EMUL_KIND_LIDT,
		EMUL_KIND_SMSW, EMUL_KIND_OTHER, EMUL_KIND_LMSW, EMUL_KIND_INVLPG,
	};
	TRY(emul_decode_modrm(e));
	if (e->reg == 5 || (e->mod == 3 && e->reg != 4 && e->reg != 6))
		return emul_unsupported(e, "0f 01 group form");
	TRY(emul_start(e, kinds[e->reg]));
	/* sgdt sidt smsw are allowed at any CPL (they trap only with UMIP). */
	if (e->reg != 0 && e->reg != 1 && e->reg != 4)
		TRY(emul_need_kernel(e));
	switch (e->reg) {
	case 0: return store_dtr(e, 0);
	case 1: return store_dtr(e, 1);
	case 2: return load_dtr(e, 0);
	case 3: return load_dtr(e, 1);
	case 4: return smsw(e);
	case 6: return lmsw(e);
	default: return e->ops->invlpg(e->ops->ctx, emul_lin(e, e->mem_seg, e->ea));
	}
}

/* 0f 00: sldt str lldt ltr verr verw; only the loads trap. */
static enum emul_result group6(struct emul *e)
{
	TRY(emul_decode_modrm(e));
	if (e->reg != 2 && e->reg != 3)
		return emul_unsupported(e, "0f 00 group form");
	TRY(emul_start(e, e->reg == 2 ? EMUL_KIND_LLDT : EMUL_KIND_LTR));
	TRY(emul_need_kernel(e));
	uint32_t sel;
	TRY(emul_read_rm(e, 2, &sel));
	return e->reg == 2 ? e->ops->load_ldtr(e->ops->ctx, (uint16_t)sel, e->out)
			   : e->ops->load_tr(e->ops->ctx, (uint16_t)sel, e->out);
}

/* mov r32, crN / mov crN, r32 (0f 20 / 0f 22): mod is ignored, the operand
 * is always the register rm; CR1 and CR5-7 are #UD. */
static enum emul_result mov_cr(struct emul *e, bool to_cr)
{
	TRY(emul_decode_modrm_regonly(e));
	TRY(emul_start(e, to_cr ? EMUL_KIND_MOV_TO_CR : EMUL_KIND_MOV_FROM_CR));
	unsigned n = e->reg;
	if (n == 1 || n > 4)
		return emul_ud(e);
	TRY(emul_need_kernel(e));
	if (to_cr)
		return e->ops->write_cr(e->ops->ctx, (int)n, emul_get_reg(e, e->rm, 4), e->out);
	emul_set_reg(e, e->rm, 4, e->ops->read_cr(e->ops->ctx, (int)n));
	return EMUL_OK;
}

/* mov r32, drN / mov drN, r32 (0f 21 / 0f 23): DR4/DR5 are DR6/DR7 unless
 * CR4.DE makes them #UD. */
static enum emul_result mov_dr(struct emul *e, bool to_dr)
{
	TRY(emul_decode_modrm_regonly(e));
	TRY(emul_start(e, to_dr ? EMUL_KIND_MOV_TO_DR : EMUL_KIND_MOV_FROM_DR));
	unsigned n = e->reg;
	TRY(emul_need_kernel(e));
	if (n == 4 || n == 5) {
		if (e->ops->read_cr(e->ops->ctx, 4) & X86_CR4_DE)
			return emul_ud(e);
		n += 2;
	}
	if (to_dr) {
		if (!e->ops->write_dr)
			return emul_unsupported(e, "mov to DR: no write_dr op");
		return e->ops->write_dr(e->ops->ctx, (int)n, emul_get_reg(e, e->rm, 4), e->out);
	}
	if (!e->ops->read_dr)
		return emul_unsupported(e, "mov from DR: no read_dr op");
	emul_set_reg(e, e->rm, 4, e->ops->read_dr(e->ops->ctx, (int)n));
	return EMUL_OK;
}

static enum emul_result rdmsr(struct emul *e)
{
	TRY(emul_start(e, EMUL_KIND_RDMSR));
	TRY(emul_need_kernel(e));
	uint64_t val;
	TRY(e->ops->rdmsr(e->ops->ctx, e->f->ecx, &val, e->out));
	e->f->eax = (uint32_t)val;
	e->f->edx = (uint32_t)(val >> 32);
	return EMUL_OK;
}

static enum emul_result wrmsr(struct emul *e)
{
	TRY(emul_start(e, EMUL_KIND_WRMSR));
	TRY(emul_need_kernel(e));
	uint64_t val = (uint64_t)e->f->edx << 32 | e->f->eax;
	return e->ops->wrmsr(e->ops->ctx, e->f->ecx, val, e->out);
}

/* rdpmc: the performance counters are not virtualised (CPUID leaf 0xA
 * reads 0, the PMU's MSRs fault), so every counter reads a virtual zero,
 * as VMI's RDPMC call answers (docs/VROM.md).  In user mode only with the
 * guest's CR4.PCE, as on hardware; otherwise #GP(0). */
static enum emul_result rdpmc(struct emul *e)
{
	TRY(emul_start(e, EMUL_KIND_RDPMC));
	if (e->cpl == 3 && !(e->ops->read_cr(e->ops->ctx, 4) & X86_CR4_PCE))
		return emul_gp0(e);
	e->f->eax = 0;
	e->f->edx = 0;
	return EMUL_OK;
}

static enum emul_result cpuid(struct emul *e)
{
	TRY(emul_start(e, EMUL_KIND_CPUID));
	uint32_t regs[4];
	e->ops->cpuid(e->ops->ctx, e->f->eax, e->f->ecx, regs);
	e->f->eax = regs[0];
	e->f->ebx = regs[1];
	e->f->ecx = regs[2];
	e->f->edx = regs[3];
	return EMUL_OK;
}

static enum emul_result clts(struct emul *e)
{
	TRY(emul_start(e, EMUL_KIND_CLTS));
	TRY(emul_need_kernel(e));
	uint32_t cr0 = e->ops->read_cr(e->ops->ctx, 0);
	return e->ops->write_cr(e->ops->ctx, 0, cr0 & ~X86_CR0_TS, e->out);
}

/* wbinvd/invd: guest memory is ordinary write-back RAM the hypervisor
 * keeps coherent, so there is nothing to do beyond the privilege check. */
static enum emul_result wbinvd(struct emul *e)
{
	TRY(emul_start(e, EMUL_KIND_WBINVD));
	return emul_need_kernel(e);
}

enum emul_result emul_system(struct emul *e, bool *handled)
{
	*handled = true;
	if (!e->twobyte) {
		switch (e->op) {
		case 0xfa: return cli_sti(e, false);
		case 0xfb: return cli_sti(e, true);
		case 0xf4: return hlt(e);
		}
		*handled = false;
		return EMUL_OK;
	}
	switch (e->op) {
	case 0x00: return group6(e);
	case 0x01: return group7(e);
	case 0x06: return clts(e);
	case 0x08: case 0x09: return wbinvd(e);
	case 0x0b:		/* ud2: Linux's BUG()/WARN(); the guest handles it */
		TRY(emul_start(e, EMUL_KIND_OTHER));
		return emul_ud(e);
	case 0x20: return mov_cr(e, false);
	case 0x22: return mov_cr(e, true);
	case 0x21: return mov_dr(e, false);
	case 0x23: return mov_dr(e, true);
	case 0x30: return wrmsr(e);
	case 0x32: return rdmsr(e);
	case 0x33: return rdpmc(e);
	case 0xa2: return cpuid(e);
	}
	*handled = false;
	return EMUL_OK;
}
