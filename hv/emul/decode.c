/*
 * decode.c - fetching an instruction from guest memory and decoding its
 * prefixes, opcode, ModRM/SIB/displacement and immediates.
 *
 * Bytes are fetched through ops->read_lin at CS.base + eip as they are
 * needed, exactly like the CPU: a fetch that touches an unmapped page
 * faults only if the instruction really extends onto it.  Every fetched
 * byte is recorded in out->bytes for the diagnostics.
 */
#include "emul_internal.h"
#include "hvlib.h"

enum emul_result emul_fetch(struct emul *e, void *buf, unsigned n)
{
	struct emul_outcome *out = e->out;

	/* The CPU refuses instructions longer than 15 bytes with #GP(0). */
	if (out->len + n > EMUL_MAX_LEN)
		return emul_gp0(e);
	enum emul_result r = emul_read_lin(e, e->cs_base + e->eip0 + out->len, buf, n);
	if (r != EMUL_OK)
		return r;
	memcpy(out->bytes + out->len, buf, n);
	out->len += n;
	return EMUL_OK;
}

enum emul_result emul_fetch_u8(struct emul *e, uint8_t *v)
{
	return emul_fetch(e, v, 1);
}

enum emul_result emul_fetch_u16(struct emul *e, uint16_t *v)
{
	uint8_t b[2];
	enum emul_result r = emul_fetch(e, b, 2);
	if (r == EMUL_OK)
		*v = le16(b);
	return r;
}

enum emul_result emul_fetch_u32(struct emul *e, uint32_t *v)
{
	uint8_t b[4];
	enum emul_result r = emul_fetch(e, b, 4);
	if (r == EMUL_OK)
		*v = le32(b);
	return r;
}

enum emul_result emul_fetch_imm(struct emul *e, unsigned size, uint32_t *v)
{
	if (size == 4)
		return emul_fetch_u32(e, v);
	uint16_t w = 0;
	enum emul_result r = emul_fetch_u16(e, &w);
	*v = w;
	return r;
}

/* Legacy prefixes in any order and number (within the 15-byte limit),
 * then the opcode: one byte or 0x0f and one more. */
enum emul_result emul_decode_prefixes_opcode(struct emul *e)
{
	e->seg_override = -1;
	for (;;) {
		uint8_t b = 0;
		enum emul_result r = emul_fetch_u8(e, &b);
		if (r != EMUL_OK)
			return r;
		switch (b) {
		case 0x66: e->op16 = true; continue;
		case 0x67: e->addr16 = true; continue;
		case 0xf0: e->lock = true; continue;
		case 0xf2: case 0xf3: e->rep = true; continue;
		case 0x26: e->seg_override = SEG_ES; continue;
		case 0x2e: e->seg_override = SEG_CS; continue;
		case 0x36: e->seg_override = SEG_SS; continue;
		case 0x3e: e->seg_override = SEG_DS; continue;
		case 0x64: e->seg_override = SEG_FS; continue;
		case 0x65: e->seg_override = SEG_GS; continue;
		}
		if (b != 0x0f) {
			e->op = b;
			return EMUL_OK;
		}
		e->twobyte = true;
		return emul_fetch_u8(e, &e->op);
	}
}

static enum emul_result fetch_disp(struct emul *e, unsigned size, uint32_t *disp)
{
	enum emul_result r;
	if (size == 1) {
		uint8_t b = 0;
		r = emul_fetch_u8(e, &b);
		*disp = (uint32_t)(int32_t)(int8_t)b;
	} else if (size == 2) {
		uint16_t w = 0;
		r = emul_fetch_u16(e, &w);
		*disp = (uint32_t)(int32_t)(int16_t)w;
	} else {
		r = emul_fetch_u32(e, disp);
	}
	return r;
}

/* 32-bit addressing: [base + index*scale + disp], SIB when rm == 4. */
static enum emul_result decode_ea32(struct emul *e)
{
	uint32_t ea = 0, disp = 0;
	bool ss_default = false;
	enum emul_result r;
	unsigned disp_size = e->mod == 1 ? 1 : e->mod == 2 ? 4 : 0;

	if (e->rm == 4) {
		uint8_t sib;
		r = emul_fetch_u8(e, &sib);
		if (r != EMUL_OK)
			return r;
		unsigned scale = sib >> 6, index = (sib >> 3) & 7, base = sib & 7;
		if (base == REG_EBP && e->mod == 0) {
			disp_size = 4;		/* no base register */
		} else {
			ea = emul_get_reg(e, base, 4);
			ss_default = base == REG_ESP || base == REG_EBP;
		}
		if (index != REG_ESP)		/* index 4 means none */
			ea += emul_get_reg(e, index, 4) << scale;
	} else if (e->rm == REG_EBP && e->mod == 0) {
		disp_size = 4;			/* disp32 alone */
	} else {
		ea = emul_get_reg(e, e->rm, 4);
		ss_default = e->rm == REG_EBP;
	}
	if (disp_size) {
		r = fetch_disp(e, disp_size, &disp);
		if (r != EMUL_OK)
			return r;
	}
	e->ea = ea + disp;
	e->mem_seg = ss_default ? SEG_SS : SEG_DS;
	return EMUL_OK;
}

/* 16-bit addressing (0x67 prefix): the eight fixed base/index pairs. */
static enum emul_result decode_ea16(struct emul *e)
{
	static const int8_t base_reg[8] = { REG_EBX, REG_EBX, REG_EBP, REG_EBP, REG_ESI, REG_EDI, REG_EBP, REG_EBX };
	static const int8_t index_reg[8] = { REG_ESI, REG_EDI, REG_ESI, REG_EDI, -1, -1, -1, -1 };
	uint32_t ea = 0, disp = 0;
	unsigned disp_size = e->mod == 1 ? 1 : e->mod == 2 ? 2 : 0;
	bool ss_default;
	enum emul_result r;

	if (e->mod == 0 && e->rm == 6) {
		disp_size = 2;			/* disp16 alone */
		ss_default = false;
	} else {
		ea = emul_get_reg(e, (unsigned)base_reg[e->rm], 2);
		if (index_reg[e->rm] >= 0)
			ea += emul_get_reg(e, (unsigned)index_reg[e->rm], 2);
		ss_default = base_reg[e->rm] == REG_EBP;
	}
	if (disp_size) {
		r = fetch_disp(e, disp_size, &disp);
		if (r != EMUL_OK)
			return r;
	}
	e->ea = (ea + disp) & 0xffff;
	e->mem_seg = ss_default ? SEG_SS : SEG_DS;
	return EMUL_OK;
}

enum emul_result emul_decode_modrm_regonly(struct emul *e)
{
	uint8_t m;
	enum emul_result r = emul_fetch_u8(e, &m);
	if (r != EMUL_OK)
		return r;
	e->has_modrm = true;
	e->mod = m >> 6;
	e->reg = (m >> 3) & 7;
	e->rm = m & 7;
	return EMUL_OK;
}

enum emul_result emul_decode_modrm(struct emul *e)
{
	enum emul_result r = emul_decode_modrm_regonly(e);
	if (r != EMUL_OK || e->mod == 3)
		return r;
	r = e->addr16 ? decode_ea16(e) : decode_ea32(e);
	if (r == EMUL_OK && e->seg_override >= 0)
		e->mem_seg = e->seg_override;
	return r;
}
