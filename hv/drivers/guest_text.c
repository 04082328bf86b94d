/*
 * guest_text.c - neutralize cursor movement in a guest's console output;
 * see guest_text.h.
 *
 * The rules follow what a VT100-style terminal (xterm, the QEMU serial
 * window, minicom) does with a byte: anything that can move the cursor
 * up, to another row, or left of where the guest's own text on this row
 * began is either kept within the row (CR re-writes the label; BS and
 * cursor-back stop at the guest's first column, counted from the ASCII
 * it wrote, never more than it has) or shown instead of obeyed.  Colours stay
 * (ls and the shell use them) but are reset before anything else writes.
 */
#include "guest_text.h"

static void emit(guest_text_out *out, void *ctx, const char *s)
{
	for (; *s; s++)
		out(*s, ctx);
}

/* "^X" for a C0 control, "^?" for DEL. */
static void caret(struct guest_text *t, unsigned char c, guest_text_out *out, void *ctx)
{
	out('^', ctx);
	out(c == 0x7f ? '?' : (char)(c + '@'), ctx);
	t->col += 2;
}

static void label_again(struct guest_text *t, const char *label, guest_text_out *out, void *ctx)
{
	guest_text_pause(t, out, ctx);
	out('\r', ctx);
	if (label) {
		out('[', ctx);
		emit(out, ctx, label);
		emit(out, ctx, "] ");
	}
	t->col = 0;
}

/* An escape sequence not obeyed: what the guest sent, visibly. */
static void show_sequence(struct guest_text *t, guest_text_out *out, void *ctx)
{
	caret(t, 0x1b, out, ctx);
	if (t->state == GT_CSI) {
		out('[', ctx);
		t->col++;
		for (unsigned i = 0; i < t->seq_len; i++, t->col++)
			out(t->seq[i], ctx);
	}
	t->state = GT_GROUND;
	t->seq_len = 0;
}

static bool sgr_params(const struct guest_text *t)
{
	for (unsigned i = 0; i < t->seq_len; i++)
		if (!(t->seq[i] >= '0' && t->seq[i] <= '9') && t->seq[i] != ';')
			return false;
	return true;
}

static bool sgr_reset(const struct guest_text *t)
{
	return !t->seq_len || (t->seq_len == 1 && t->seq[0] == '0');
}

/* The sequence's one number (0 when absent); false if it has more. */
static bool one_number(const struct guest_text *t, unsigned *n)
{
	*n = 0;
	if (!sgr_params(t))
		return false;
	for (unsigned i = 0; i < t->seq_len; i++) {
		if (t->seq[i] == ';' || *n > 9999)
			return false;
		*n = *n * 10 + (unsigned)(t->seq[i] - '0');
	}
	return true;
}

/*
 * Which CSI sequences act only on the guest's own row, right of the
 * cursor or back over its own text: busybox's line editing redraws with
 * CR, "ESC [ K", and the cursor left and right.  The cursor forward
 * ('C') does not count in col (the terminal stops it at the margin), so
 * col never exceeds how far right of the label the cursor really is.
 */
static bool stays_on_row(struct guest_text *t, char c)
{
	unsigned n;

	if (!one_number(t, &n))
		return false;
	switch (c) {
	case 'K':		/* erase to the end of the row (only 0) */
		return n == 0;
	case 'C':		/* forward */
	case 'X':		/* erase n characters from the cursor */
	case 'P':		/* delete n characters: the rest moves left */
	case '@':		/* insert n blanks: the rest moves right */
		return true;
	case 'D':		/* back, over the guest's own text only */
		n = n ? n : 1;
		if (n > t->col)
			return false;
		t->col -= n;
		return true;
	}
	return false;
}

static void pass_sequence(struct guest_text *t, char final, guest_text_out *out, void *ctx)
{
	out('\x1b', ctx);
	out('[', ctx);
	for (unsigned i = 0; i < t->seq_len; i++)
		out(t->seq[i], ctx);
	out(final, ctx);
}

static void csi_final(struct guest_text *t, char c, guest_text_out *out, void *ctx)
{
	if (c == 'm' && sgr_params(t)) {
		pass_sequence(t, c, out, ctx);
		t->colour_on = !sgr_reset(t);
	} else if (c == 'n' && t->seq_len == 1 && t->seq[0] == '6') {
		/* the cursor position query: dropped */
	} else if (stays_on_row(t, c)) {
		pass_sequence(t, c, out, ctx);
	} else {
		show_sequence(t, out, ctx);
		out(c, ctx);
		t->col++;
	}
	t->state = GT_GROUND;
	t->seq_len = 0;
}

static void ground(struct guest_text *t, unsigned char c, guest_text_out *out, void *ctx)
{
	switch (c) {
	case '\n':		/* the line's colours end with it, so that the
				 * next row, whoever writes it, starts with its
				 * label and not with our SGR reset */
		guest_text_pause(t, out, ctx);
		out('\n', ctx);
		t->col = 0;
		return;
	case '\r':
		t->cr_pending = true;
		return;
	case '\b':
		if (t->col) {
			t->col--;
			out('\b', ctx);
		} else {
			caret(t, c, out, ctx);
		}
		return;
	case '\t':		/* at least one column; where the stop is depends
				 * on the label's width, so count only that */
		out('\t', ctx);
		t->col++;
		return;
	case '\a':
		out('\a', ctx);
		return;
	case 0x1b:
		t->state = GT_ESC;
		return;
	}
	if (c < 0x20 || c == 0x7f) {
		caret(t, c, out, ctx);
		return;
	}
	out((char)c, ctx);
	/* Only ASCII counts: a UTF-8 character may take two columns, one, or
	 * none (a combining mark); counting none only lets BS stop short. */
	if (c < 0x80)
		t->col++;
}

void guest_text_put(struct guest_text *t, char ch, const char *label, guest_text_out *out, void *ctx)
{
	unsigned char c = (unsigned char)ch;

	if (t->cr_pending && c != '\r') {
		t->cr_pending = false;
		if (c == '\n' && t->state == GT_GROUND) {
			guest_text_pause(t, out, ctx);
			out('\r', ctx);
			out('\n', ctx);
			t->col = 0;
			return;
		}
		label_again(t, label, out, ctx);
	}
	switch (t->state) {
	case GT_GROUND:
		ground(t, c, out, ctx);
		return;
	case GT_ESC:
		if (c == '[') {
			t->state = GT_CSI;
			return;
		}
		show_sequence(t, out, ctx);
		ground(t, c, out, ctx);
		return;
	case GT_CSI:
		if (c >= 0x40 && c <= 0x7e) {
			csi_final(t, (char)c, out, ctx);
			return;
		}
		if (c >= 0x20 && c <= 0x3f && t->seq_len < GUEST_TEXT_SEQ_MAX) {
			t->seq[t->seq_len++] = (char)c;
			return;
		}
		/* Not a CSI byte, or too long: shown, and c taken afresh. */
		show_sequence(t, out, ctx);
		ground(t, c, out, ctx);
		return;
	}
}

void guest_text_pause(struct guest_text *t, guest_text_out *out, void *ctx)
{
	if (t->colour_on) {
		emit(out, ctx, "\x1b[0m");
		t->colour_on = false;
	}
}
