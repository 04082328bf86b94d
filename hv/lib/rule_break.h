/*
 * rule_break.h - why a guest ends: the one record every layer fills
 * (rule_break.c).
 *
 * Whoever finds that a guest broke a rule says why in a struct
 * rule_break: mm/'s vTLB and shadows in their outcome, the emulator in
 * its outcome, the vCPU's memory callbacks in the vCPU's own record.  The
 * vCPU layer adds where (the instruction, when there is one, and the EIP)
 * and which vCPU when it ends the guest (life/guest_stop.c), and the run
 * loop acts on it: "vmi-hv: guest stopped: <why>" (life/guest_report.c).
 * A reboot or power-off fills the same record with its words.
 */
#ifndef VMI_HV_RULE_BREAK_H
#define VMI_HV_RULE_BREAK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

struct rule_break {
	char why[256];		/* "" while no rule is broken */
	uint8_t insn[15];	/* the instruction's bytes, when has_insn */
	uint8_t insn_len;	/* 0 with has_insn: it could not be fetched */
	bool has_insn;
	uint16_t cs;		/* where: the guest's CS:EIP when it ended */
	uint32_t eip;
	unsigned vcpu;		/* which vCPU ended it (its index in the guest) */
};

static inline bool rule_broken(const struct rule_break *b)
{
	return b->why[0] != 0;
}

static inline void rule_break_clear(struct rule_break *b)
{
	b->why[0] = 0;
	b->has_insn = false;
	b->insn_len = 0;
}

/* The reason, formatted into b->why (any earlier one replaced). */
__attribute__((format(printf, 2, 3)))
void rule_break_note(struct rule_break *b, const char *fmt, ...);
void rule_break_vnote(struct rule_break *b, const char *fmt, va_list ap);
/* The instruction that broke it (up to 15 bytes kept). */
void rule_break_insn(struct rule_break *b, const uint8_t *bytes, unsigned len);

#endif
