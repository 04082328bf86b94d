/*
 * io.c - port I/O: in/out with an immediate or DX port, and the string
 * forms ins/outs with or without rep.
 *
 * The virtual IOPL is 0 and there is no I/O bitmap for the guest, so port
 * I/O is the guest kernel's only; ops->io_in/io_out decide per port.
 *
 * rep ins/outs run in batches: after EMUL_REP_BATCH iterations, or
 * EMUL_REP_SLOW_MAX that waited on real hardware (the console UART), the
 * instruction is left unfinished (eip unchanged, ecx/esi/edi updated),
 * exactly as the CPU leaves it when an interrupt arrives in the middle,
 * so a huge count cannot stall the hypervisor.  A fault in iteration k
 * keeps the register updates of the k-1 completed ones, like hardware.
 *
 * One element of such a transfer (emul_string_io_one) and a batch of
 * them at a linear address (emul_string_io_batch) are also what the VMI
 * INS/OUTS calls run (hv/vcpu/exit/hypercall.c), so the guest's buffer is
 * reached through the very same memory path, with the same checks.
 */
#include "emul_internal.h"
#include "hvlib.h"

#define TRY(expr) do { enum emul_result r_ = (expr); if (r_ != EMUL_OK) return r_; } while (0)

static unsigned io_size(struct emul *e)
{
	return (e->op & 1) ? emul_opsize(e) : 1;
}

/* e4/e5 in imm8, ec/ed in dx; e6/e7 out imm8, ee/ef out dx. */
static enum emul_result in_out(struct emul *e)
{
	bool out = e->op & 2;
	TRY(emul_start(e, out ? EMUL_KIND_OUT : EMUL_KIND_IN));
	uint16_t port;
	if (e->op & 8) {
		port = (uint16_t)e->f->edx;
	} else {
		uint8_t imm;
		TRY(emul_fetch_u8(e, &imm));
		port = imm;
	}
	TRY(emul_need_kernel(e));
	unsigned size = io_size(e);
	if (out)
		return e->ops->io_out(e->ops->ctx, port, size, emul_get_reg(e, REG_EAX, size), e->out);
	uint32_t val;
	TRY(e->ops->io_in(e->ops->ctx, port, size, &val, e->out));
	emul_set_reg(e, REG_EAX, size, val);
	return EMUL_OK;
}

/* One element: out, size bytes read at lin then written to the port;
 * in, the port read then its bytes written at lin. */
static enum emul_result string_io_one(struct emul *e, bool out, uint16_t port, unsigned size, uint32_t lin)
{
	uint8_t b[4];

	if (out) {
		TRY(emul_read_lin(e, lin, b, size));
		uint32_t val = le32(b);
		if (size < 4)
			val &= (1u << (8 * size)) - 1;
		return e->ops->io_out(e->ops->ctx, port, size, val, e->out);
	}
	uint32_t val;
	TRY(e->ops->io_in(e->ops->ctx, port, size, &val, e->out));
	for (unsigned i = 0; i < size; i++)
		b[i] = (uint8_t)(val >> (8 * i));
	return emul_write_lin(e, lin, b, size);
}

enum emul_result emul_string_io_batch(const struct emul_ops *ops, bool out, uint16_t port, unsigned size,
				      uint32_t *lin, uint32_t *count, struct emul_outcome *o)
{
	struct emul e = { .ops = ops, .out = o };

	o->kind = out ? EMUL_KIND_OUTS : EMUL_KIND_INS;
	for (unsigned done = 0; *count && done < EMUL_REP_BATCH && o->slow_io < EMUL_REP_SLOW_MAX; done++) {
		TRY(string_io_one(&e, out, port, size, *lin));
		*lin += size;
		--*count;
	}
	return EMUL_OK;
}

/* 6c/6d ins to es:(e)di (no segment override); 6e/6f outs from
 * ds:(e)si (override allowed).  The address size picks si/di/cx or
 * esi/edi/ecx. */
static enum emul_result ins_outs(struct emul *e)
{
	bool out = e->op & 2;
	TRY(emul_start(e, out ? EMUL_KIND_OUTS : EMUL_KIND_INS));
	TRY(emul_need_kernel(e));
	unsigned size = io_size(e);
	unsigned asize = e->addr16 ? 2 : 4;
	unsigned ptr_reg = out ? REG_ESI : REG_EDI;
	int seg = out ? (e->seg_override >= 0 ? e->seg_override : SEG_DS) : SEG_ES;
	uint16_t port = (uint16_t)e->f->edx;
	int32_t step = (e->f->eflags & X86_EFLAGS_DF) ? -(int32_t)size : (int32_t)size;
	uint32_t count = e->rep ? emul_get_reg(e, REG_ECX, asize) : 1;

	e->keep_partial = true;
	for (unsigned done = 0; count; done++) {
		if (done == EMUL_REP_BATCH || e->out->slow_io >= EMUL_REP_SLOW_MAX) {
			e->restart = true;
			return EMUL_OK;
		}
		uint32_t off = emul_get_reg(e, ptr_reg, asize);
		TRY(string_io_one(e, out, port, size, emul_lin(e, seg, off)));
		emul_set_reg(e, ptr_reg, asize, off + (uint32_t)step);
		count--;
		if (e->rep)
			emul_set_reg(e, REG_ECX, asize, count);
	}
	return EMUL_OK;
}

enum emul_result emul_io(struct emul *e, bool *handled)
{
	*handled = !e->twobyte && ((e->op >= 0xe4 && e->op <= 0xe7) || (e->op >= 0xec && e->op <= 0xef) ||
				   (e->op >= 0x6c && e->op <= 0x6f));
	if (!*handled)
		return EMUL_OK;
	return e->op < 0x70 ? ins_outs(e) : in_out(e);
}
