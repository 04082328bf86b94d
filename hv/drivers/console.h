/*
 * console.h - output to COM1 and VGA text: the hypervisor's log (log.h)
 * and the guests' consoles.
 *
 * Every line that reports bad input starts with "vmi-hv: error:"; the
 * tests and people grep for exactly that.
 */
#ifndef VMI_HV_CONSOLE_H
#define VMI_HV_CONSOLE_H

#include "log.h"
#include "textterm.h"
#include <stdbool.h>
#include <stdarg.h>
#include "guest_text.h"
#include "guest_mark.h"
#include <stdint.h>

/* Sets itself as the log's output (log.h: kprintf, log_info, ...). */
void console_init(void);
void console_putc(char c);

/*
 * A report of several lines (a guest's stop or end, its activation, the
 * statistics of Ctrl-] s) goes out whole: console_lock is held from
 * console_enter() to console_leave(), so that what other CPUs
 * print (another guest's report, a guest's line) comes before or after it,
 * never between its lines or inside one printed in pieces.  console_lock
 * ranks last: no other lock may be taken in between.
 */
/* console_enter's hold as the log's token: EFLAGS has bit 31 clear. */
#define CONSOLE_TAKEN 0x80000000u
struct console_hold {
	bool taken;
	uint32_t eflags;
};
struct console_hold console_enter(void);
void console_leave(struct console_hold h);

/* COM1 */
bool serial_init(void);
void serial_putc(char c);
void serial_putc_raw(char c);	/* no \n -> \r\n: for a guest's own bytes */
void serial_enable_rx_irq(void);	/* serial_irq must be IRQ 4's handler by then */
int serial_getc(void);		/* -1 if no input is waiting */
unsigned serial_rx_count(void);
void serial_irq(void);

/* Console input: what arrives on COM1 and what is typed on the PS/2
 * keyboard (hv/drivers/kbd.c), one stream; -1 if nothing is waiting.  One person
 * types, so the two are not interleaved byte by byte: COM1's bytes first. */
int console_getc(void);
/* Sleep until source() (serial_getc, console_getc) has a byte; returns it
 * with interrupts on. */
int console_wait_char(int (*source)(void));

/* The guest's console output (the bytes it sends to its virtual COM1):
 * to the real COM1 as they are, and rendered on the VGA text screen. */
void console_guest_putc(char c);
/*
 * A guest's console output when several guests share COM1: each of its
 * lines goes out whole, starting with its name, so that lines from
 * different guests never cut into each other.  A line still open (a shell
 * prompt) goes out when the guest halts, or once it has waited
 * CONSOLE_LINE_HOLD_US (a prompt printed before a busy loop), whichever
 * comes first (console_guest_flush, console_guest_flush_at).  On VGA its
 * bytes go to its own screen at once.
 *
 * When another line cuts a row the guest has begun on COM1 (the
 * hypervisor's, or another guest's that waited long enough), the guest's
 * next byte shows that row again from its start, so that the log holds
 * every guest line whole, after its cut piece (rows up to GUEST_ROW_MAX
 * bytes; a longer one goes on where it was cut).
 */
#define CONSOLE_LINE_HOLD_US 50000
#define GUEST_LINE_MAX 160
#define GUEST_ROW_MAX 256
struct vga_screen;
struct guest_console {
	const char *label;		/* its name on COM1; 0 with one guest */
	struct guest_text text;		/* what COM1 gets of it (guest_text.h) */
	struct vga_screen *screen;	/* its own VGA screen, or 0: the shared one */
	char line[GUEST_LINE_MAX];	/* COM1: what is not written out yet */
	unsigned len;
	uint64_t flush_at;		/* TSC by which line[] must go out */
	char row[GUEST_ROW_MAX];	/* COM1: its row's bytes written out */
	unsigned row_len;		/* GUEST_ROW_MAX + 1: more than row[] holds */
	bool row_cut;			/* another line ended the row: show it again */
	struct guest_mark mark;		/* its lines that start like the hypervisor's are marked */
};
/* One byte the guest sent to its COM1 (its UART hands each one over):
 * marked when a line starts like the hypervisor's (guest_mark.h), so that
 * a guest cannot print our lines, on COM1 or on its own VGA screen. */
void console_guest_write(struct guest_console *gc, char c);
/* Write out the part of a line held back (the guest went idle). */
void console_guest_flush(struct guest_console *gc);
/* When a line held back must go out (a TSC time), UINT64_MAX if none is;
 * console_guest_flush_due() writes it out if that time has come. */
uint64_t console_guest_flush_at(const struct guest_console *gc);
void console_guest_flush_due(struct guest_console *gc, uint64_t now);

/* VGA text mode (hv/drivers/vga.c, rendering by hv/drivers/textterm.c).  Hypervisor messages
 * and the guest's output share the screen in different colours. */
#define VGA_ATTR_GUEST 0x07	/* light grey: the guest's console output */
#define VGA_ATTR_HV    0x0b	/* light cyan: the hypervisor's messages */
#define VGA_COLS 80
#define VGA_ROWS 25
void vga_init(void);
void vga_putc(char c);		/* hypervisor output: \n is a new line */
void vga_guest_putc(char c);	/* guest output: a terminal's rendering */
void vga_fresh_line(void);	/* new line unless at a line's start */
void vga_set_attr(unsigned char attr);	/* colour of the hypervisor's output */

/* With several guests each has a screen of its own, and the VGA shows
 * the one whose guest has the console (the hypervisor's messages go to
 * the screen shown).  A screen starts as a copy of what is shown. */
struct vga_screen {
	struct textterm term;
	uint16_t backing[VGA_COLS * VGA_ROWS];	/* its cells while not shown */
};
void vga_screen_init(struct vga_screen *s);
void vga_show(struct vga_screen *s);
/* vga_show under console_lock: a guest on another CPU may be writing. */
void console_show(struct vga_screen *s);
bool vga_shown(const struct vga_screen *s);
void vga_guest_putc_on(struct vga_screen *s, char c);

#endif
