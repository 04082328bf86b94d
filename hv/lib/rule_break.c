/*
 * rule_break.c - filling the record of why a guest ends (rule_break.h).
 */
#include "rule_break.h"
#include "hvlib.h"

/* Formatted aside first: the arguments may name b->why itself (a stop
 * that adds words in front of a reason noted earlier). */
void rule_break_vnote(struct rule_break *b, const char *fmt, va_list ap)
{
	char why[sizeof(b->why)];

	fmt_vsnprintf(why, sizeof(why), fmt, ap);
	memcpy(b->why, why, sizeof(why));
}

void rule_break_note(struct rule_break *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rule_break_vnote(b, fmt, ap);
	va_end(ap);
}

void rule_break_insn(struct rule_break *b, const uint8_t *bytes, unsigned len)
{
	if (len > sizeof(b->insn))
		len = sizeof(b->insn);
	memcpy(b->insn, bytes, len);
	b->insn_len = (uint8_t)len;
	b->has_insn = true;
}
