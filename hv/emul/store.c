/*
 * store.c - the value a plain store would write, for reports.
 *
 * strict_pt (docs/HV.md) stops a guest at its first direct write to a
 * page table and reports the entry "old -> new".  The write has not
 * happened (it faulted), so the new value is read off the instruction:
 * the common forms a compiler emits for `*ptep = val` (mov r/m32, r32;
 * mov r/m32, imm32; xchg r/m32, r32).  Nothing is executed and no state
 * changes; any other instruction gives false and the report says so.
 */
#include "emul_internal.h"
#include "hvlib.h"

bool emulate_store_value(struct trap_frame *f, unsigned cpl, const struct emul_ops *ops,
			 uint32_t *val)
{
	struct emul_outcome out;
	struct emul e = {
		.f = f, .ops = ops, .out = &out, .cpl = cpl,
		.cs_base = ops->seg_base(ops->ctx, SEG_CS),
		.eip0 = f->eip,
	};

	memset(&out, 0, sizeof(out));
	if (emul_decode_prefixes_opcode(&e) != EMUL_OK || e.twobyte || e.op16)
		return false;
	switch (e.op) {
	case 0x89:	/* mov r/m32, r32 */
	case 0x87:	/* xchg r/m32, r32 */
		if (emul_decode_modrm(&e) != EMUL_OK || e.mod == 3)
			return false;
		*val = emul_get_reg(&e, e.reg, 4);
		return true;
	case 0xc7:	/* mov r/m32, imm32 (/0) */
		if (emul_decode_modrm(&e) != EMUL_OK || e.mod == 3 || e.reg != 0)
			return false;
		return emul_fetch_imm(&e, 4, val) == EMUL_OK;
	}
	return false;
}
