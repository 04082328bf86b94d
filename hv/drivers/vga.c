/*
 * vga.c - the VGA text screen (80x25 at 0xB8000, identity-mapped), shared
 * by the hypervisor's messages and the guest's console output; with
 * several guests, one screen per guest, and the VGA shows the one whose
 * guest has the console (vga_show).
 *
 * The rendering is hv/drivers/textterm.c's (a small terminal emulator; see there for
 * why).  This file is only the hardware around it: the cell buffer, the
 * hardware cursor, and the two colours that tell the writers apart on one
 * screen: the guest's output in light grey (0x07, which its own SGR
 * colours change), the hypervisor's messages in the colour log_msg sets
 * (vga_set_attr: cyan for info, red/yellow/dark grey for error/warning/
 * debug).
 */
#include "console.h"
#include "io.h"
#include "textterm.h"
#include "hvlib.h"

#define VGA_MEM ((uint16_t *)0xb8000)

/* The hypervisor's own screen, shown until several guests have theirs. */
static struct vga_screen hv_screen;
static struct vga_screen *shown = &hv_screen;
static unsigned char hv_attr = VGA_ATTR_HV;

static void move_cursor(void)
{
	unsigned pos = textterm_cursor(&shown->term);

	outb(0x3d4, 0x0f);
	outb(0x3d5, pos & 0xff);
	outb(0x3d4, 0x0e);
	outb(0x3d5, (pos >> 8) & 0xff);
}

void vga_init(void)
{
	textterm_init(&hv_screen.term, VGA_MEM, VGA_COLS, VGA_ROWS, VGA_ATTR_GUEST);
	shown = &hv_screen;
	move_cursor();
}

void vga_set_attr(unsigned char a)
{
	hv_attr = a;
}

/* A hypervisor message: "\n" starts a new line, no escape sequences. */
void vga_putc(char c)
{
	textterm_plain(&shown->term, c, hv_attr);
	move_cursor();
}

/* Before hypervisor output that follows the guest's: start a new line,
 * so a hypervisor message never continues a guest line (the prompt). */
void vga_fresh_line(void)
{
	textterm_fresh_line(&shown->term);
	move_cursor();
}

/* A byte the guest sent to its COM1, rendered as a terminal would. */
void vga_guest_putc(char c)
{
	textterm_putc(&shown->term, (uint8_t)c);
	move_cursor();
}

void vga_screen_init(struct vga_screen *s)
{
	textterm_init(&s->term, s->backing, VGA_COLS, VGA_ROWS, VGA_ATTR_GUEST);
	memcpy(s->backing, shown->term.cells, sizeof(s->backing));
	s->term.row = shown->term.row;
	s->term.col = shown->term.col;
}

/* Swap: the shown screen's cells go to its backing store, s's come to
 * the VGA memory, and each terminal writes where its cells now are. */
void vga_show(struct vga_screen *s)
{
	if (s == shown)
		return;
	memcpy(shown->backing, VGA_MEM, sizeof(shown->backing));
	shown->term.cells = shown->backing;
	memcpy(VGA_MEM, s->backing, sizeof(s->backing));
	s->term.cells = VGA_MEM;
	shown = s;
	move_cursor();
}

bool vga_shown(const struct vga_screen *s)
{
	return s == shown;
}

void vga_guest_putc_on(struct vga_screen *s, char c)
{
	textterm_putc(&s->term, (uint8_t)c);
	if (s == shown)
		move_cursor();
}
