/*
 * textterm.h - a small terminal emulator on a text-mode cell buffer.
 *
 * Why: the guest's console is its virtual COM1, and what it sends there
 * is written for a terminal (a VT100-ish one: busybox's shell and line
 * editing move the cursor and erase with "ESC [ ... letter").  To show it
 * on the VGA text screen we must render it as a terminal would, and not
 * draw the escape sequences as garbage.  This file is pure (no hardware,
 * no libc): hv/drivers/vga.c runs it on the real 0xB8000 buffer, and
 * tests/unit/test_textterm.c on a fake 80x25 array.
 *
 * A cell is a VGA text cell: character in the low byte, attribute (colour)
 * in the high byte.
 *
 * Two ways in, for the two writers that share the screen:
 *   textterm_putc()   the guest's bytes: C0 controls, ESC sequences, UTF-8;
 *   textterm_plain()  the hypervisor's own messages: \n means a new line
 *                  (CR LF), no escape parsing, and a guest's half-sent
 *                  escape sequence is left alone (its state is not
 *                  touched), so neither writer can garble the other.
 */
#ifndef VMI_HV_TEXTTERM_H
#define VMI_HV_TEXTTERM_H

#include <stdbool.h>
#include <stdint.h>

#define TEXTTERM_MAX_PARAMS 8

struct textterm {
	uint16_t *cells;		/* rows * cols cells, row-major */
	unsigned cols, rows;
	unsigned row, col;		/* cursor */
	bool wrap_pending;		/* wrote the last column: wrap on the next printable */
	uint8_t attr;			/* current attribute of the guest's output */
	uint8_t base_attr;		/* SGR 0 resets to this */
	unsigned saved_row, saved_col;	/* ESC 7 / ESC 8 */
	/* The first row guest output may move to or erase: the row after the
	 * hypervisor's last message (it moves up as the screen scrolls), so
	 * that a guest cannot rewrite the hypervisor's lines. */
	unsigned top;

	/* Escape sequence parser (guest output only). */
	enum { VT_GROUND, VT_ESC, VT_ESC_SKIP, VT_CSI, VT_OSC, VT_OSC_ESC } state;
	unsigned params[TEXTTERM_MAX_PARAMS];
	unsigned nparams;
	bool csi_private;		/* "ESC [ ?" (or > = <): modes we do not have */
	unsigned utf8_left;		/* continuation bytes still to swallow */
};

/* Attach to a buffer of rows * cols cells and clear it with attr. */
void textterm_init(struct textterm *t, uint16_t *cells, unsigned cols, unsigned rows, uint8_t attr);
void textterm_clear(struct textterm *t);

/* One byte of guest output, interpreted as a terminal would. */
void textterm_putc(struct textterm *t, uint8_t c);

/* One byte of a hypervisor message, drawn with attr. */
void textterm_plain(struct textterm *t, char c, uint8_t attr);

/* Go to the start of a new line unless the cursor is at a line's start
 * (a hypervisor message after the guest's prompt gets its own line). */
void textterm_fresh_line(struct textterm *t);

/* The cursor's cell index (row * cols + col), for the hardware cursor. */
unsigned textterm_cursor(const struct textterm *t);

#endif
