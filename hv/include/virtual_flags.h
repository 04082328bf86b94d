/*
 * virtual_flags.h - the EFLAGS bits a guest has only virtually: IF and
 * IOPL.  The real EFLAGS of a guest always run with IF set and IOPL 0, so
 * that cli, sti, popf and port I/O trap (vcpu.c, sanitize_eflags).  Where
 * the guest reads its EFLAGS through the ROM (GetInterruptMask) it sees
 * its own IF and IOPL instead; the frames its interrupts and exceptions
 * push show its IF (docs/HV.md, "The virtual IOPL").
 */
#ifndef VIRTUAL_FLAGS_H
#define VIRTUAL_FLAGS_H
#include <stdbool.h>
#include <stdint.h>
#include "x86.h"

/* real with IF and IOPL replaced by the guest's; iopl in the IOPL bits. */
static inline uint32_t guest_visible_eflags(uint32_t real, bool vif, uint32_t iopl)
{
	return (real & ~(X86_EFLAGS_IF | X86_EFLAGS_IOPL)) | (vif ? X86_EFLAGS_IF : 0) |
	       (iopl & X86_EFLAGS_IOPL);
}

/* SetIOPLMask's argument is an EFLAGS image of the IOPL bits alone, as
 * the seed's set_iopl_mask(level << 12) passes it; any other bit set is
 * not a mask the call takes (refused: docs/VROM.md, "Calls that used to
 * stop a guest"). */
static inline bool iopl_mask_valid(uint32_t mask)
{
	return (mask & ~X86_EFLAGS_IOPL) == 0;
}

#endif
