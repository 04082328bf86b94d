/*
 * guest_mark.h - a guest's console lines that could pass for the
 * hypervisor's get a mark the guest cannot print itself (pure logic,
 * hv/drivers/guest_mark.c, unit-tested in tests/unit/test_guest_mark.c).
 *
 * The hypervisor's lines start with "vmi-hv" ("vmi-hv: guest stopped:
 * ...", "vmi-hv 0.1: ..."), and many tests and scripts match them.  A
 * guest's output shares the console, so a guest line that starts with
 * the same six bytes (after LF or CR: a CR returns a terminal to the
 * start of the line) is printed as "[guest] vmi-hv...": the hypervisor
 * never starts a line with "[", and the guest can only add bytes after
 * the mark.  Every other byte passes unchanged.  With several guests
 * every line already starts with "[name] " (console.c), so only a lone
 * guest needs this.
 *
 * To know whether a line starts with "vmi-hv", its first bytes are held
 * while they still could (at most five: "v", "vm", ... "vmi-h"): they go
 * out with the byte that decides, so a guest that prints "vmi" and then
 * waits shows it only with its next byte.
 */
#ifndef VMI_HV_GUEST_MARK_H
#define VMI_HV_GUEST_MARK_H

#include <stdbool.h>

#define GUEST_MARK_WORD "vmi-hv"
#define GUEST_MARK_PREFIX "[guest] "

struct guest_mark {
	unsigned held;		/* bytes of GUEST_MARK_WORD held at the line's start */
	bool mid_line;		/* false at the start of a line (and at first) */
};

/* One byte of the guest's output; out(ctx, c) for each byte to print. */
void guest_mark_putc(struct guest_mark *m, char c, void (*out)(void *ctx, char c), void *ctx);

#endif
