/*
 * textterm.c - render a byte stream on a text-mode cell buffer as a
 * terminal would (pure: compiled into the hypervisor and on the host).
 *
 * Why a terminal emulator: the guest's console output (its virtual COM1)
 * is also shown on the VGA text screen, and it is written for a
 * serial terminal.  The bytes that matter for a Linux boot and a busybox
 * shell:
 *   - printable ASCII; \n (line feed: the tty sends \r\n), \r, \b, \t;
 *     line wrap at the last column and scrolling at the bottom;
 *   - ESC [ params letter (CSI): busybox's line editing moves the cursor
 *     (A B C D G H), erases (J K) and may ask for the cursor position
 *     (6n, which only the real terminal on COM1 can answer); ls and
 *     friends may set colours (m).  Interpreted: cursor moves and
 *     positioning, erase in display/line, insert/delete/erase characters,
 *     save/restore cursor and SGR colours; anything else (private modes
 *     "ESC [ ?", scroll regions, reports) is consumed and ignored;
 *   - ESC + one byte (ESC 7/8 save/restore, ESC c reset, ESC D/E/M),
 *     ESC ( B and friends (charset: one more byte), and OSC strings
 *     ("ESC ] ... BEL or ESC \", window titles): consumed.
 * Other C0 controls (BEL...) draw nothing.  UTF-8 sequences draw one '?'
 * (the VGA font is code page 437; Linux's tty is UTF-8).
 *
 * Line wrap is VT100's deferred wrap: a character in the last column
 * leaves the cursor there, and only the next printable character wraps.
 * So an 80-character line followed by \r\n takes one row, as on a real
 * terminal (and busybox's line editing counts on that).
 *
 * The hypervisor's messages share the screen: guest output cannot move
 * the cursor above, nor erase, scroll down or reset, the rows down to
 * the last of them (t->top; docs/CONSOLE.md, "The consoles").
 *
 * Not a full VT100: no scroll regions, tab stops are every 8 columns,
 * no character sets, no insert mode, no blinking.
 */
#include "textterm.h"

#define BLANK(attr) ((uint16_t)((attr) << 8 | ' '))

static uint16_t *cell(struct textterm *t, unsigned row, unsigned col)
{
	return &t->cells[row * t->cols + col];
}

static void fill(struct textterm *t, unsigned from, unsigned to, uint8_t attr)
{
	for (unsigned i = from; i < to; i++)
		t->cells[i] = BLANK(attr);
}

void textterm_clear(struct textterm *t)
{
	fill(t, 0, t->rows * t->cols, t->base_attr);
	t->row = t->col = t->top = 0;
	t->wrap_pending = false;
}

/* The guest's ESC c: its part of the screen cleared, the cursor there. */
static void guest_reset(struct textterm *t)
{
	t->attr = t->base_attr;
	fill(t, t->top * t->cols, t->rows * t->cols, t->base_attr);
	t->row = t->top;
	t->col = 0;
	t->wrap_pending = false;
}

void textterm_init(struct textterm *t, uint16_t *cells, unsigned cols, unsigned rows, uint8_t attr)
{
	t->cells = cells;
	t->cols = cols;
	t->rows = rows;
	t->attr = t->base_attr = attr;
	t->saved_row = t->saved_col = 0;
	t->state = VT_GROUND;
	t->nparams = 0;
	t->csi_private = false;
	t->utf8_left = 0;
	textterm_clear(t);
}

unsigned textterm_cursor(const struct textterm *t)
{
	return t->row * t->cols + t->col;
}

/* Everything moves up one row; the bottom row is blank. */
static void scroll_up(struct textterm *t)
{
	unsigned n = (t->rows - 1) * t->cols;

	for (unsigned i = 0; i < n; i++)
		t->cells[i] = t->cells[i + t->cols];
	fill(t, n, n + t->cols, t->base_attr);
	if (t->top)
		t->top--;
}

/* Everything moves down one row; the top row is blank (ESC M at the top). */
static void scroll_down(struct textterm *t)
{
	for (unsigned i = t->rows * t->cols; i-- > t->cols;)
		t->cells[i] = t->cells[i - t->cols];
	fill(t, 0, t->cols, t->base_attr);
}

static void line_feed(struct textterm *t)
{
	t->wrap_pending = false;
	if (t->row + 1 < t->rows)
		t->row++;
	else
		scroll_up(t);
}

static void carriage_return(struct textterm *t)
{
	t->col = 0;
	t->wrap_pending = false;
}

static void draw(struct textterm *t, uint8_t ch, uint8_t attr)
{
	if (t->wrap_pending) {
		carriage_return(t);
		line_feed(t);
	}
	*cell(t, t->row, t->col) = (uint16_t)(attr << 8 | ch);
	if (t->col + 1 < t->cols)
		t->col++;
	else
		t->wrap_pending = true;
}

/* The C0 controls a terminal acts on; the rest draw nothing. */
static void control(struct textterm *t, uint8_t c)
{
	switch (c) {
	case '\n': case '\v': case '\f':
		line_feed(t);
		break;
	case '\r':
		carriage_return(t);
		break;
	case '\b':
		t->wrap_pending = false;
		if (t->col > 0)
			t->col--;
		break;
	case '\t':
		t->wrap_pending = false;
		t->col = (t->col + 8) & ~7u;
		if (t->col >= t->cols)
			t->col = t->cols - 1;
		break;
	default:
		break;
	}
}

/* Guest cursor moves: within the screen, never above t->top. */
static void move_to(struct textterm *t, int row, int col)
{
	if (row < (int)t->top)
		row = (int)t->top;
	if (row >= (int)t->rows)
		row = (int)t->rows - 1;
	if (col < 0)
		col = 0;
	if (col >= (int)t->cols)
		col = (int)t->cols - 1;
	t->row = (unsigned)row;
	t->col = (unsigned)col;
	t->wrap_pending = false;
}

/* ANSI colour numbers (red = 1, blue = 4) to VGA's (blue = 1, red = 4). */
static const uint8_t ansi_to_vga[8] = { 0, 4, 2, 6, 1, 5, 3, 7 };

static void sgr(struct textterm *t)
{
	for (unsigned i = 0; i < t->nparams; i++) {
		unsigned p = t->params[i];
		uint8_t a = t->attr;

		if (p == 0)
			a = t->base_attr;
		else if (p == 1)
			a |= 0x08;
		else if (p == 2 || p == 22)
			a &= (uint8_t)~0x08;
		else if (p == 7)
			a = (uint8_t)((a & 0x88) | (a & 0x07) << 4 | (a & 0x70) >> 4);
		else if (p >= 30 && p <= 37)
			a = (uint8_t)((a & 0xf8) | ansi_to_vga[p - 30]);
		else if (p == 39)
			a = (uint8_t)((a & 0xf8) | (t->base_attr & 0x07));
		else if (p >= 40 && p <= 47)
			a = (uint8_t)((a & 0x8f) | ansi_to_vga[p - 40] << 4);
		else if (p == 49)
			a = (uint8_t)((a & 0x8f) | (t->base_attr & 0x70));
		else if (p >= 90 && p <= 97)
			a = (uint8_t)((a & 0xf0) | 0x08 | ansi_to_vga[p - 90]);
		else if (p >= 100 && p <= 107)
			a = (uint8_t)((a & 0x8f) | ansi_to_vga[p - 100] << 4);
		else if (p == 38 || p == 48)
			return;		/* 256-colour/RGB: its arguments follow; skip it all */
		t->attr = a;
	}
}

/* Erase [from, to) in cell indices, with the current colours (as xterm). */
static void erase(struct textterm *t, unsigned from, unsigned to)
{
	fill(t, from, to, t->attr);
}

static void csi_dispatch(struct textterm *t, uint8_t final)
{
	unsigned p0 = t->params[0], p1 = t->nparams > 1 ? t->params[1] : 0;
	int n = p0 ? (int)p0 : 1;	/* a count: 0 or missing means 1 */
	int row = (int)t->row, col = (int)t->col;
	unsigned here = textterm_cursor(t);
	unsigned line = t->row * t->cols, end = t->rows * t->cols, start = t->top * t->cols;

	switch (final) {
	case 'A': move_to(t, row - n, col); break;
	case 'B': case 'e': move_to(t, row + n, col); break;
	case 'C': case 'a': move_to(t, row, col + n); break;
	case 'D': move_to(t, row, col - n); break;
	case 'E': move_to(t, row + n, 0); break;
	case 'F': move_to(t, row - n, 0); break;
	case 'G': case '`': move_to(t, row, n - 1); break;
	case 'd': move_to(t, n - 1, col); break;
	case 'H': case 'f':
		move_to(t, n - 1, (p1 ? (int)p1 : 1) - 1);
		break;
	case 'J':
		if (p0 == 0)
			erase(t, here, end);
		else if (p0 == 1)
			erase(t, start, here + 1);
		else
			erase(t, start, end);
		break;
	case 'K':
		if (p0 == 0)
			erase(t, here, line + t->cols);
		else if (p0 == 1)
			erase(t, line, here + 1);
		else
			erase(t, line, line + t->cols);
		break;
	case 'X':	/* erase n characters from the cursor */
		erase(t, here, here + (unsigned)n < line + t->cols ? here + (unsigned)n : line + t->cols);
		break;
	case 'P':	/* delete n characters: the rest of the line moves left */
	case '@': {	/* insert n blanks: the rest of the line moves right */
		unsigned left = t->cols - t->col;
		unsigned k = (unsigned)n < left ? (unsigned)n : left;
		uint16_t *c = cell(t, t->row, t->col);

		if (final == 'P') {
			for (unsigned i = 0; i + k < left; i++)
				c[i] = c[i + k];
			fill(t, line + t->cols - k, line + t->cols, t->attr);
		} else {
			for (unsigned i = left; i-- > k;)
				c[i] = c[i - k];
			fill(t, here, here + k, t->attr);
		}
		break;
	}
	case 'm':
		sgr(t);
		break;
	case 's':
		t->saved_row = t->row;
		t->saved_col = t->col;
		break;
	case 'u':
		move_to(t, (int)t->saved_row, (int)t->saved_col);
		break;
	default:	/* n (reports), r (scroll region), h/l (modes), ...: ignored */
		break;
	}
}

static void esc_dispatch(struct textterm *t, uint8_t c)
{
	t->state = VT_GROUND;
	switch (c) {
	case '[':
		t->state = VT_CSI;
		t->nparams = 0;
		for (unsigned i = 0; i < TEXTTERM_MAX_PARAMS; i++)
			t->params[i] = 0;
		t->csi_private = false;
		break;
	case ']':
		t->state = VT_OSC;
		break;
	case '7':
		t->saved_row = t->row;
		t->saved_col = t->col;
		break;
	case '8':
		move_to(t, (int)t->saved_row, (int)t->saved_col);
		break;
	case 'c':
		guest_reset(t);
		break;
	case 'D':
		line_feed(t);
		break;
	case 'E':
		carriage_return(t);
		line_feed(t);
		break;
	case 'M':
		t->wrap_pending = false;
		if (t->row > t->top)
			t->row--;
		else if (!t->top)
			scroll_down(t);
		break;
	case 0x1b:
		t->state = VT_ESC;
		break;
	default:
		/* ESC ( B, ESC # 8, ESC % G...: an intermediate and one more byte. */
		if (c >= 0x20 && c <= 0x2f)
			t->state = VT_ESC_SKIP;
		break;
	}
}

static void csi_byte(struct textterm *t, uint8_t c)
{
	if (c >= '0' && c <= '9') {
		unsigned *p = &t->params[t->nparams];

		if (*p < 10000)
			*p = *p * 10 + (c - '0');
	} else if (c == ';' || c == ':') {
		if (t->nparams + 1 < TEXTTERM_MAX_PARAMS)
			t->nparams++;
	} else if (c >= 0x3c && c <= 0x3f) {		/* ? > = < */
		t->csi_private = true;
	} else if (c >= 0x20 && c <= 0x2f) {		/* intermediates: "ESC [ 2 SP q" */
		t->csi_private = true;
	} else if (c >= 0x40 && c <= 0x7e) {		/* the final byte */
		t->nparams++;
		if (!t->csi_private)
			csi_dispatch(t, c);
		t->state = VT_GROUND;
	} else if (c == 0x1b) {
		t->state = VT_ESC;
	} else if (c == 0x18 || c == 0x1a) {		/* CAN, SUB: abort */
		t->state = VT_GROUND;
	} else if (c < 0x20) {				/* executed in the middle, as VT100 */
		control(t, c);
	} else {					/* DEL, 8-bit: not a sequence after all */
		t->state = VT_GROUND;
	}
}

static void ground(struct textterm *t, uint8_t c)
{
	if (t->utf8_left) {
		if ((c & 0xc0) == 0x80) {
			t->utf8_left--;
			return;
		}
		t->utf8_left = 0;
	}
	if (c == 0x1b)
		t->state = VT_ESC;
	else if (c < 0x20)
		control(t, c);
	else if (c == 0x7f)
		;
	else if (c < 0x80)
		draw(t, c, t->attr);
	else {
		/* A UTF-8 lead byte: one '?' for the whole character. */
		if (c >= 0xc2 && c <= 0xf4)
			t->utf8_left = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
		draw(t, '?', t->attr);
	}
}

void textterm_putc(struct textterm *t, uint8_t c)
{
	switch (t->state) {
	case VT_GROUND:
		ground(t, c);
		break;
	case VT_ESC:
		esc_dispatch(t, c);
		break;
	case VT_ESC_SKIP:
		t->state = VT_GROUND;
		break;
	case VT_CSI:
		csi_byte(t, c);
		break;
	case VT_OSC:
		if (c == 0x07 || c == 0x18 || c == 0x1a)
			t->state = VT_GROUND;
		else if (c == 0x1b)
			t->state = VT_OSC_ESC;
		break;
	case VT_OSC_ESC:	/* ESC \ ends it; any other ESC x starts anew */
		if (c == '\\')
			t->state = VT_GROUND;
		else
			esc_dispatch(t, c);
		break;
	}
}

void textterm_fresh_line(struct textterm *t)
{
	if (t->col != 0 || t->wrap_pending) {
		carriage_return(t);
		line_feed(t);
	}
}

void textterm_plain(struct textterm *t, char ch, uint8_t attr)
{
	uint8_t c = (uint8_t)ch;

	if (c == '\n') {
		carriage_return(t);
		line_feed(t);
	} else if (c < 0x20) {
		control(t, c);
	} else {
		draw(t, c, attr);
	}
	t->top = t->row + (t->col || t->wrap_pending ? 1 : 0);
	if (t->top >= t->rows)
		t->top = t->rows - 1;
}
