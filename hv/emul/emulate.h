/*
 * emulate.h - the x86 instruction decoder and privileged-instruction
 * emulator for the guest kernel before VMI activation.
 *
 * The guest kernel runs in ring 1.  Until it switches to the VMI ROM's
 * paravirtual calls, its early boot code (decompressor, head_32.S, early
 * C code) still executes privileged instructions (cli, lgdt, mov to CR3,
 * out, iret, ...).  In ring 1 each of those raises #GP (or #UD); the
 * hypervisor's trap code hands the frame to emulate_one(), which decodes
 * the one instruction at cs:eip and performs its effect through the
 * struct emul_ops callbacks, then advances eip.
 *
 * The emulator owns no state: every CPU and memory effect goes through
 * ops (the vCPU owner, hv/, decides what a CR write or segment load
 * means).  That keeps this code pure C, compiled both freestanding for the
 * hypervisor and on the host for the cmocka tests (tests/unit/test_emulate.c).
 *
 * Outcomes:
 *   EMUL_OK          done; f (registers, eip) updated.
 *   EMUL_FAULT       the instruction faults in the guest: reflect
 *                    out->vector (+ out->error if has_error, out->cr2 for
 *                    #PF) into the guest; f->eip is left at the instruction.
 *   EMUL_UNSUPPORTED the emulator does not know the instruction/form;
 *                    out->bytes/len and out->brk.why say which.
 *   EMUL_HALT        hlt: the guest waits for an interrupt; eip already
 *                    points after the hlt.
 */
#ifndef VMI_HV_EMULATE_H
#define VMI_HV_EMULATE_H

#include <stdbool.h>
#include <stdint.h>
#include "trap_frame.h"
#include "rule_break.h"

enum emul_result { EMUL_OK, EMUL_FAULT, EMUL_UNSUPPORTED, EMUL_HALT };

/* How the emulator's own EMUL_UNSUPPORTED reasons begin ("unsupported
 * instruction 0f 35", emul_unsupported); the vCPU's ops' refusals say
 * what they refused instead, and the stop line adds this in front. */
#define EMUL_UNSUPPORTED_WHY "unsupported instruction"

struct emul_outcome {
	enum emul_result result;
	/* EMUL_FAULT: exception to reflect into the guest */
	uint8_t vector; bool has_error; uint32_t error; uint32_t cr2;
	/* the instruction bytes fetched (diagnostics) */
	uint8_t bytes[15]; unsigned len;
	/* enum emul_kind, for per-kind counters */
	unsigned kind;
	/* EMUL_UNSUPPORTED: why (lib/rule_break.h) */
	struct rule_break brk;
	/* Elements of a string I/O batch that waited on real hardware (the
	 * ops' io_out adds them: a byte to the console UART); the batch ends
	 * at EMUL_REP_SLOW_MAX of them. */
	unsigned slow_io;
};

enum emul_kind {
	EMUL_KIND_CLI, EMUL_KIND_STI, EMUL_KIND_HLT, EMUL_KIND_LGDT, EMUL_KIND_LIDT,
	EMUL_KIND_LLDT, EMUL_KIND_LTR, EMUL_KIND_MOV_TO_CR, EMUL_KIND_MOV_FROM_CR,
	EMUL_KIND_MOV_TO_DR, EMUL_KIND_MOV_FROM_DR, EMUL_KIND_MOV_SREG, EMUL_KIND_POP_SREG,
	EMUL_KIND_LSS, EMUL_KIND_FAR_JMP, EMUL_KIND_FAR_CALL, EMUL_KIND_FAR_RET,
	EMUL_KIND_IRET, EMUL_KIND_IN, EMUL_KIND_OUT, EMUL_KIND_INS, EMUL_KIND_OUTS,
	EMUL_KIND_CPUID, EMUL_KIND_RDMSR, EMUL_KIND_WRMSR, EMUL_KIND_INVLPG,
	EMUL_KIND_WBINVD, EMUL_KIND_CLTS, EMUL_KIND_LMSW, EMUL_KIND_SMSW, EMUL_KIND_RDPMC,
	EMUL_KIND_OTHER, EMUL_KIND_COUNT
};
/* LSS counts every far-pointer load (lss, lds, les, lfs, lgs); WBINVD also
 * counts invd; OTHER is ud2 (reflected as #UD) and anything unsupported. */

const char *emul_kind_name(unsigned kind);

/* Every CPU/memory effect goes through these; ctx is the caller's vCPU. */
struct emul_ops {
	void *ctx;
	/* false: #PF at lin with *fault_error (the page-fault error code) */
	bool (*read_lin)(void *ctx, uint32_t lin, void *buf, unsigned len, uint32_t *fault_error);
	bool (*write_lin)(void *ctx, uint32_t lin, const void *buf, unsigned len, uint32_t *fault_error);
	/* SEG_ES..SEG_GS below; the guest-visible base */
	uint32_t (*seg_base)(void *ctx, int seg);
	uint32_t (*read_cr)(void *ctx, int n);
	enum emul_result (*write_cr)(void *ctx, int n, uint32_t val, struct emul_outcome *out);
	/* Validates the guest descriptor, updates f->cs/ss/ds...  CS only via
	 * far transfers: the emulator stores the new eip in f->eip first. */
	enum emul_result (*load_seg)(void *ctx, struct trap_frame *f, int seg, uint16_t sel, struct emul_outcome *out);
	enum emul_result (*load_dtr)(void *ctx, int which /* 0 GDTR, 1 IDTR */, uint32_t base, uint16_t limit, struct emul_outcome *out);
	enum emul_result (*load_ldtr)(void *ctx, uint16_t sel, struct emul_outcome *out);
	enum emul_result (*load_tr)(void *ctx, uint16_t sel, struct emul_outcome *out);
	enum emul_result (*io_in)(void *ctx, uint16_t port, unsigned size, uint32_t *val, struct emul_outcome *out);
	enum emul_result (*io_out)(void *ctx, uint16_t port, unsigned size, uint32_t val, struct emul_outcome *out);
	void (*cpuid)(void *ctx, uint32_t leaf, uint32_t subleaf, uint32_t regs_out[4]);
	enum emul_result (*rdmsr)(void *ctx, uint32_t msr, uint64_t *val, struct emul_outcome *out);
	enum emul_result (*wrmsr)(void *ctx, uint32_t msr, uint64_t val, struct emul_outcome *out);
	bool (*get_if)(void *ctx);	/* the guest's virtual interrupt flag */
	void (*set_if)(void *ctx, bool on);
	enum emul_result (*invlpg)(void *ctx, uint32_t lin);
	enum emul_result (*halt)(void *ctx);	/* returns EMUL_HALT or EMUL_OK */

	/* Additions to the contract, all optional: NULL makes the
	 * instructions that need them EMUL_UNSUPPORTED (with a reason).
	 * sgdt/sidt trap at CPL > 0 only with CR4.UMIP; mov from/to DRn
	 * (n = 0..7, the emulator already folds DR4/DR5 onto DR6/DR7). */
	void (*read_dtr)(void *ctx, int which /* 0 GDTR, 1 IDTR */, uint32_t *base, uint16_t *limit);
	uint32_t (*read_dr)(void *ctx, int n);
	enum emul_result (*write_dr)(void *ctx, int n, uint32_t val, struct emul_outcome *out);
};

/*
 * Notes for the ops owner:
 *  - load_seg checks privilege as the CPU does (DPL, RPL, CPL): the
 *    emulator only orders the steps (CS before the SS of a return, so
 *    that the SS check sees the new CPL in f->cs).
 *  - A multi-step instruction (far call/return, iret, lss) may call
 *    load_seg more than once; if a later step fails the emulator restores
 *    *f to what it was at entry, so load_seg should keep its effects in f.
 *  - Memory accesses are split at 4 KiB page boundaries, so a false from
 *    read_lin/write_lin means "#PF at exactly this lin" (cr2 = lin).
 *  - The guest's virtual CPL is 0 when cpl <= 1; RPL 0 and 1 selectors
 *    both count as the guest kernel's privilege level.
 *  - Code segments are assumed 32-bit (CS.D = 1) and stacks 32-bit
 *    (SS.B = 1): the ops do not expose descriptor attributes.
 *  - Segment limits are not checked here (only bases are visible).
 */

enum { SEG_ES, SEG_CS, SEG_SS, SEG_DS, SEG_FS, SEG_GS };
/* load_seg only: the CS of a return (lret, iret), which the CPU checks
 * against the selector's RPL (the level returned to), where a far jmp or
 * call's SEG_CS is checked against the current CPL (docs/HV.md, "What the guest can reach"). */
#define SEG_CS_RETURN 6

/*
 * Emulate the one instruction at f->cs:f->eip that trapped (usually #GP;
 * the caller also uses it for #UD), advancing f->eip on success.  cpl is
 * the guest's privilege level (1 for the kernel, 3 for user mode).
 * out is always filled (result, bytes/len, kind; why on failure).
 */
enum emul_result emulate_one(struct trap_frame *f, unsigned cpl, const struct emul_ops *ops,
			     struct emul_outcome *out);

/*
 * The 32-bit value the store at f->eip would write (mov r/m32, r32; mov
 * r/m32, imm32; xchg r/m32, r32), for the report of a write that faulted
 * (strict_pt, store.c).  false for any other instruction.  Executes
 * nothing; f is not changed.
 */
bool emulate_store_value(struct trap_frame *f, unsigned cpl, const struct emul_ops *ops,
			 uint32_t *val);

/*
 * String port I/O as rep ins/outs does it, for the VMI INS/OUTS calls:
 * up to EMUL_REP_BATCH elements of size bytes (1, 2, 4), forward from the
 * linear address *lin; out: memory to the port, else port to memory.
 * Memory goes through ops->read_lin/write_lin (the guest's paging, with
 * the privilege those use), split at pages like every emulated access;
 * the port through ops->io_in/io_out.  Each element done advances *lin by
 * size and takes 1 off *count; EMUL_OK with *count 0 is finished, with
 * *count left the batch is full.  A fault (a #PF: vector, error and cr2
 * in *o) stops at the element that took it, the ones before it done.
 */
#define EMUL_REP_BATCH 4096u
/* A batch also ends after this many elements that waited on real hardware
 * (emul_outcome.slow_io): a byte to COM1 waits for the real UART, 87 us
 * at 115200 baud, so 4096 of them kept interrupts off for 350 ms; 16 keep
 * a batch under 1.5 ms (docs/TIME.md, "Rates a guest controls"). */
#define EMUL_REP_SLOW_MAX 16u
enum emul_result emul_string_io_batch(const struct emul_ops *ops, bool out, uint16_t port, unsigned size,
				      uint32_t *lin, uint32_t *count, struct emul_outcome *o);

/*
 * The length of the int n (cd ib), int3 (cc) or into (ce) at b[0..n),
 * legacy prefixes included; 0 if the bytes are not one (or exceed the
 * 15-byte limit).  Pure, no ops: the caller has read the bytes.
 */
unsigned emul_soft_int_length(const uint8_t *b, unsigned n);

#endif
