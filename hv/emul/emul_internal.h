/*
 * emul_internal.h - what the emulator's files share: the decoded
 * instruction, operand access and the ways an emulation can end.
 * Not for use outside hv/emul/.
 */
#ifndef VMI_HV_EMUL_INTERNAL_H
#define VMI_HV_EMUL_INTERNAL_H

#include "emulate.h"
#include "x86.h"

#define EMUL_MAX_LEN 15		/* longer instructions raise #GP(0) */

enum { REG_EAX, REG_ECX, REG_EDX, REG_EBX, REG_ESP, REG_EBP, REG_ESI, REG_EDI };

/* One instruction being emulated. */
struct emul {
	struct trap_frame *f;
	const struct emul_ops *ops;
	struct emul_outcome *out;
	unsigned cpl;		/* hardware CPL of the guest: 1 kernel, 3 user */
	uint32_t cs_base;
	uint32_t eip0;		/* eip of the instruction's first byte */

	/* prefixes */
	bool op16, addr16, lock, rep;
	int seg_override;	/* SEG_*, or -1 */

	/* opcode: op is the byte after 0x0f when twobyte */
	bool twobyte;
	uint8_t op;

	/* ModRM and, for memory forms, the effective address */
	bool has_modrm;
	uint8_t mod, reg, rm;
	int mem_seg;
	uint32_t ea;

	/* how the instruction ends when it succeeds */
	bool eip_set;		/* far transfer: f->eip already is the target */
	bool restart;		/* rep string not finished: eip stays put */
	bool keep_partial;	/* on a fault keep register updates (rep string) */
};

/* decode.c: fetching and decoding. */
enum emul_result emul_fetch(struct emul *e, void *buf, unsigned n);
enum emul_result emul_fetch_u8(struct emul *e, uint8_t *v);
enum emul_result emul_fetch_u16(struct emul *e, uint16_t *v);
enum emul_result emul_fetch_u32(struct emul *e, uint32_t *v);
/* Fetch an immediate of 2 or 4 bytes (operand size), zero-extended. */
enum emul_result emul_fetch_imm(struct emul *e, unsigned size, uint32_t *v);
enum emul_result emul_decode_prefixes_opcode(struct emul *e);
/* Fetch ModRM plus SIB and displacement; computes ea/mem_seg for mod != 3. */
enum emul_result emul_decode_modrm(struct emul *e);
/* Fetch only the ModRM byte: mov to/from CR/DR ignore mod (always registers). */
enum emul_result emul_decode_modrm_regonly(struct emul *e);

/* operands.c: registers, memory, stack and ending an emulation. */
uint32_t emul_get_reg(struct emul *e, unsigned n, unsigned size);
void emul_set_reg(struct emul *e, unsigned n, unsigned size, uint32_t val);
uint32_t emul_lin(struct emul *e, int seg, uint32_t off);
enum emul_result emul_read_lin(struct emul *e, uint32_t lin, void *buf, unsigned len);
enum emul_result emul_write_lin(struct emul *e, uint32_t lin, const void *buf, unsigned len);
enum emul_result emul_read_mem(struct emul *e, int seg, uint32_t off, void *buf, unsigned len);
enum emul_result emul_write_mem(struct emul *e, int seg, uint32_t off, const void *buf, unsigned len);
/* The r/m operand (register or memory) of size 2 or 4, zero-extended. */
enum emul_result emul_read_rm(struct emul *e, unsigned size, uint32_t *val);
/* Read size bytes at ss:esp+offset (the stack; 32-bit stack assumed). */
enum emul_result emul_read_stack(struct emul *e, uint32_t offset, unsigned size, uint32_t *val);
unsigned emul_opsize(const struct emul *e);	/* 2 or 4 */
bool emul_guest_kernel(const struct emul *e);	/* virtual CPL 0 */

enum emul_result emul_fault(struct emul *e, uint8_t vector, bool has_error, uint32_t error);
enum emul_result emul_ud(struct emul *e);
enum emul_result emul_gp0(struct emul *e);
enum emul_result emul_unsupported(struct emul *e, const char *what);
/* A recognised instruction starts: count it as kind; LOCK makes it #UD
 * (none of the emulated instructions is lockable). */
enum emul_result emul_start(struct emul *e, unsigned kind);
/* Instructions that need the guest's CPL 0: #GP(0) from guest user mode. */
enum emul_result emul_need_kernel(struct emul *e);

/* The instruction groups; each returns the result and fills e->out. */
enum emul_result emul_system(struct emul *e, bool *handled);	/* system.c */
enum emul_result emul_segments(struct emul *e, bool *handled);	/* segments.c */
enum emul_result emul_io(struct emul *e, bool *handled);	/* io.c */

#endif
