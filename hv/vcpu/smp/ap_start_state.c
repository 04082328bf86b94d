/*
 * ap_start_state.c - SetInitialAPState's state, checked field by field before
 * ring 0 acts on any of it (docs/SMP.md, "A guest of several vCPUs"): the
 * vCPU starts in the guest kernel's ring with flags a ring-1 kernel may
 * have, no long mode and no task state of its own.
 */
#include "ap_start_state.h"
#include "x86.h"
#include "hvlib.h"

#define EFLAGS_GUEST (X86_EFLAGS_CF | X86_EFLAGS_FIXED | 0x4u /*PF*/ | 0x10u /*AF*/ | 0x40u /*ZF*/ | \
		      0x80u /*SF*/ | X86_EFLAGS_TF | X86_EFLAGS_IF | X86_EFLAGS_DF | 0x800u /*OF*/ | \
		      X86_EFLAGS_IOPL | X86_EFLAGS_RF | 0x40000u /*AC*/ | 0x200000u /*ID*/)

static bool no(char *why, size_t whylen, const char *fmt, uint32_t val)
{
	fmt_snprintf(why, whylen, fmt, val);
	return false;
}

bool ap_start_state_check(const APState *s, char *why, size_t whylen)
{
	if (s->efer)
		return no(why, whylen, "efer %08x: no long mode or NX here", (uint32_t)s->efer);
	if (!(s->cr0 & X86_CR0_PE))
		return no(why, whylen, "cr0 %08x: protected mode off", s->cr0);
	if ((s->cs & 3) != AP_STATE_RING || (s->cs & ~3u) == 0)
		return no(why, whylen, "cs %04x: not a ring-1 code selector (the guest kernel's ring)", s->cs);
	if ((s->ss & 3) != AP_STATE_RING || (s->ss & ~3u) == 0)
		return no(why, whylen, "ss %04x: not a ring-1 stack selector", s->ss);
	if (!(s->eflags & X86_EFLAGS_FIXED) || (s->eflags & ~EFLAGS_GUEST))
		return no(why, whylen, "eflags %08x: reserved, VM or NT bits", s->eflags);
	if (s->ldtr)
		return no(why, whylen, "ldtr %04x: an AP starts without an LDT (SetLDT after)", s->ldtr);
	if (s->gdtr_limit < 0x0f)
		return no(why, whylen, "gdtr limit %04x: no room for a code and a stack segment", s->gdtr_limit);
	return true;
}
