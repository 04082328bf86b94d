/*
 * guest_text.h - a guest's console bytes made safe for the hypervisor's
 * serial console (hv/drivers/guest_text.c, pure: tests/unit/test_guest_text.c).
 *
 * A guest writes to COM1 what it likes.  Passed through raw, a carriage
 * return or an escape sequence could move the terminal's cursor over its
 * own "[name] " label (and rewrite it as another guest's) or over the
 * hypervisor's lines.  The filter keeps what cannot move the cursor off
 * the guest's own text and shows the rest, visibly, as caret notation
 * (docs/CONSOLE.md, "The consoles").
 */
#ifndef VMI_HV_GUEST_TEXT_H
#define VMI_HV_GUEST_TEXT_H

#include <stdbool.h>

/* The longest CSI sequence (after "ESC [") the filter waits out. */
#define GUEST_TEXT_SEQ_MAX 16

struct guest_text {
	enum { GT_GROUND, GT_ESC, GT_CSI } state;
	char seq[GUEST_TEXT_SEQ_MAX];	/* a CSI sequence's bytes so far */
	unsigned seq_len;
	bool cr_pending;		/* a CR, waiting to see if LF follows */
	bool colour_on;			/* an SGR other than reset went out */
	unsigned col;			/* columns of guest text on this row */
};

typedef void guest_text_out(char c, void *ctx);

/*
 * One byte of the guest's output, written to out (with ctx) as it may
 * reach the terminal:
 *   - printable bytes, TAB, BEL and LF as they are; CR LF as it is;
 *   - a CR not followed by LF returns to the row's start, then `label`
 *     ("[label] ", if not 0) is written again before the guest's text,
 *     so that a rewritten row still starts with its true label;
 *   - BS and ESC [ n D (cursor back) only over the guest's own text on
 *     the row; ESC [ K (erase to the row's end), ESC [ n C (forward),
 *     ESC [ n X/P/@ (erase, delete, insert characters) as they are;
 *   - ESC [ params m (colours) as it is; ESC [ 6 n (the cursor position
 *     query, whose answer would be typed into whichever guest has the
 *     console) dropped; every other ESC sequence and C0 control as
 *     caret notation ("^[[2K", "^[[1A", "^L").
 */
void guest_text_put(struct guest_text *t, char c, const char *label, guest_text_out *out, void *ctx);
/* Before anything else is written to the terminal (the hypervisor's
 * lines, another guest's): colours back to the default. */
void guest_text_pause(struct guest_text *t, guest_text_out *out, void *ctx);

#endif
