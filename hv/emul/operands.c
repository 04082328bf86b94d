/*
 * operands.c - the emulator's access to guest registers, guest memory
 * and the stack, and the ways an emulation ends (fault, unsupported).
 */
#include "emul_internal.h"
#include "hvlib.h"
#include "pte.h"

/* Register numbers are the x86 encoding (eax, ecx, edx, ebx, esp, ebp,
 * esi, edi).  The guest's esp is the one the trap saved (it came from
 * ring 1 or 3), not pushal's esp0 slot. */
static uint32_t *reg_slot(struct trap_frame *f, unsigned n)
{
	switch (n & 7) {
	case REG_EAX: return &f->eax;
	case REG_ECX: return &f->ecx;
	case REG_EDX: return &f->edx;
	case REG_EBX: return &f->ebx;
	case REG_ESP: return &f->esp;
	case REG_EBP: return &f->ebp;
	case REG_ESI: return &f->esi;
	default:      return &f->edi;
	}
}

/* size 1 follows the byte-register encoding: al cl dl bl ah ch dh bh. */
uint32_t emul_get_reg(struct emul *e, unsigned n, unsigned size)
{
	if (size == 1)
		return (*reg_slot(e->f, n & 3) >> (n & 4 ? 8 : 0)) & 0xff;
	uint32_t v = *reg_slot(e->f, n);
	return size == 2 ? v & 0xffff : v;
}

void emul_set_reg(struct emul *e, unsigned n, unsigned size, uint32_t val)
{
	if (size == 1) {
		uint32_t *p = reg_slot(e->f, n & 3);
		unsigned shift = n & 4 ? 8 : 0;
		*p = (*p & ~(0xffu << shift)) | (val & 0xff) << shift;
	} else if (size == 2) {
		uint32_t *p = reg_slot(e->f, n);
		*p = (*p & 0xffff0000u) | (val & 0xffff);
	} else {
		*reg_slot(e->f, n) = val;
	}
}

unsigned emul_opsize(const struct emul *e)
{
	return e->op16 ? 2 : 4;
}

/* The guest kernel runs in ring 1 but is, to itself, at CPL 0. */
bool emul_guest_kernel(const struct emul *e)
{
	return e->cpl <= 1;
}

uint32_t emul_lin(struct emul *e, int seg, uint32_t off)
{
	return e->ops->seg_base(e->ops->ctx, seg) + off;
}

/* Split at page boundaries so that a failing chunk names the exact
 * faulting address (cr2), like the CPU does. */
static enum emul_result access_lin(struct emul *e, uint32_t lin, void *buf, unsigned len, bool write)
{
	uint8_t *p = buf;
	while (len) {
		unsigned chunk = page_chunk(lin, len);
		uint32_t err = 0;
		bool ok = write ? e->ops->write_lin(e->ops->ctx, lin, p, chunk, &err)
				: e->ops->read_lin(e->ops->ctx, lin, p, chunk, &err);
		if (!ok) {
			e->out->cr2 = lin;
			return emul_fault(e, X86_VEC_PF, true, err);
		}
		lin += chunk;
		p += chunk;
		len -= chunk;
	}
	return EMUL_OK;
}

enum emul_result emul_read_lin(struct emul *e, uint32_t lin, void *buf, unsigned len)
{
	return access_lin(e, lin, buf, len, false);
}

enum emul_result emul_write_lin(struct emul *e, uint32_t lin, const void *buf, unsigned len)
{
	return access_lin(e, lin, (void *)buf, len, true);
}

enum emul_result emul_read_mem(struct emul *e, int seg, uint32_t off, void *buf, unsigned len)
{
	return emul_read_lin(e, emul_lin(e, seg, off), buf, len);
}

enum emul_result emul_write_mem(struct emul *e, int seg, uint32_t off, const void *buf, unsigned len)
{
	return emul_write_lin(e, emul_lin(e, seg, off), buf, len);
}

static uint32_t little_endian(const uint8_t *b, unsigned size)
{
	uint32_t v = 0;
	for (unsigned i = size; i-- > 0;)
		v = v << 8 | b[i];
	return v;
}

enum emul_result emul_read_rm(struct emul *e, unsigned size, uint32_t *val)
{
	if (e->mod == 3) {
		*val = emul_get_reg(e, e->rm, size);
		return EMUL_OK;
	}
	uint8_t b[4];
	enum emul_result r = emul_read_mem(e, e->mem_seg, e->ea, b, size);
	if (r == EMUL_OK)
		*val = little_endian(b, size);
	return r;
}

enum emul_result emul_read_stack(struct emul *e, uint32_t offset, unsigned size, uint32_t *val)
{
	uint8_t b[4];
	enum emul_result r = emul_read_mem(e, SEG_SS, e->f->esp + offset, b, size);
	if (r == EMUL_OK)
		*val = little_endian(b, size);
	return r;
}

enum emul_result emul_fault(struct emul *e, uint8_t vector, bool has_error, uint32_t error)
{
	e->out->vector = vector;
	e->out->has_error = has_error;
	e->out->error = has_error ? error : 0;
	return EMUL_FAULT;
}

enum emul_result emul_ud(struct emul *e)
{
	return emul_fault(e, X86_VEC_UD, false, 0);
}

enum emul_result emul_gp0(struct emul *e)
{
	return emul_fault(e, X86_VEC_GP, true, 0);
}

/* "unsupported instruction 0f 30" or "... 0f 01 d0 (what)". */
enum emul_result emul_unsupported(struct emul *e, const char *what)
{
	struct emul_outcome *out = e->out;
	int n = fmt_snprintf(out->brk.why, sizeof(out->brk.why), EMUL_UNSUPPORTED_WHY);
	for (unsigned i = 0; i < out->len && n < (int)sizeof(out->brk.why); i++)
		n += fmt_snprintf(out->brk.why + n, sizeof(out->brk.why) - (size_t)n, " %02x", out->bytes[i]);
	if (what && n < (int)sizeof(out->brk.why))
		fmt_snprintf(out->brk.why + n, sizeof(out->brk.why) - (size_t)n, " (%s)", what);
	e->out->kind = EMUL_KIND_OTHER;
	return EMUL_UNSUPPORTED;
}

enum emul_result emul_start(struct emul *e, unsigned kind)
{
	e->out->kind = kind;
	return e->lock ? emul_ud(e) : EMUL_OK;
}

enum emul_result emul_need_kernel(struct emul *e)
{
	return emul_guest_kernel(e) ? EMUL_OK : emul_gp0(e);
}
