/*
 * emulate.c - emulate_one(): decode the instruction at cs:eip, run it
 * through the instruction groups (system.c, segments.c, io.c), and end
 * it: advance eip on success, restore the frame on failure.
 */
#include "emul_internal.h"
#include "hvlib.h"

static const char *const kind_names[EMUL_KIND_COUNT] = {
	[EMUL_KIND_CLI] = "cli",
	[EMUL_KIND_STI] = "sti",
	[EMUL_KIND_HLT] = "hlt",
	[EMUL_KIND_LGDT] = "lgdt",
	[EMUL_KIND_LIDT] = "lidt",
	[EMUL_KIND_LLDT] = "lldt",
	[EMUL_KIND_LTR] = "ltr",
	[EMUL_KIND_MOV_TO_CR] = "mov to cr",
	[EMUL_KIND_MOV_FROM_CR] = "mov from cr",
	[EMUL_KIND_MOV_TO_DR] = "mov to dr",
	[EMUL_KIND_MOV_FROM_DR] = "mov from dr",
	[EMUL_KIND_MOV_SREG] = "mov to sreg",
	[EMUL_KIND_POP_SREG] = "pop sreg",
	[EMUL_KIND_LSS] = "lss/lds/les/lfs/lgs",
	[EMUL_KIND_FAR_JMP] = "ljmp",
	[EMUL_KIND_FAR_CALL] = "lcall",
	[EMUL_KIND_FAR_RET] = "lret",
	[EMUL_KIND_IRET] = "iret",
	[EMUL_KIND_IN] = "in",
	[EMUL_KIND_OUT] = "out",
	[EMUL_KIND_INS] = "ins",
	[EMUL_KIND_OUTS] = "outs",
	[EMUL_KIND_CPUID] = "cpuid",
	[EMUL_KIND_RDMSR] = "rdmsr",
	[EMUL_KIND_WRMSR] = "wrmsr",
	[EMUL_KIND_INVLPG] = "invlpg",
	[EMUL_KIND_WBINVD] = "wbinvd/invd",
	[EMUL_KIND_CLTS] = "clts",
	[EMUL_KIND_LMSW] = "lmsw",
	[EMUL_KIND_SMSW] = "smsw",
	[EMUL_KIND_RDPMC] = "rdpmc",
	[EMUL_KIND_OTHER] = "other",
};

const char *emul_kind_name(unsigned kind)
{
	return kind < EMUL_KIND_COUNT ? kind_names[kind] : "invalid";
}

static enum emul_result dispatch(struct emul *e)
{
	bool handled;
	enum emul_result r = emul_system(e, &handled);
	if (handled)
		return r;
	r = emul_segments(e, &handled);
	if (handled)
		return r;
	r = emul_io(e, &handled);
	if (handled)
		return r;
	return emul_unsupported(e, NULL);
}

enum emul_result emulate_one(struct trap_frame *f, unsigned cpl, const struct emul_ops *ops,
			     struct emul_outcome *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = EMUL_KIND_OTHER;

	struct trap_frame entry = *f;
	struct emul e = {
		.f = f, .ops = ops, .out = out, .cpl = cpl,
		.cs_base = ops->seg_base(ops->ctx, SEG_CS),
		.eip0 = f->eip,
	};

	enum emul_result r = emul_decode_prefixes_opcode(&e);
	if (r == EMUL_OK)
		r = dispatch(&e);

	if (r == EMUL_OK || r == EMUL_HALT) {
		if (!e.eip_set && !e.restart)
			f->eip = e.eip0 + out->len;
	} else if (!e.keep_partial) {
		/* A fault leaves the guest at the instruction with its
		 * registers as they were; a far transfer may have written
		 * eip, esp or selectors before a later step failed. */
		*f = entry;
	} else {
		f->eip = entry.eip;
	}
	out->result = r;
	return r;
}
