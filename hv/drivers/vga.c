/*
 * vga.c - the VGA text screen (80x25 at 0xB8000, identity-mapped), shared
 * by the hypervisor's messages and the guest's console output.
 *
 * The rendering is hv/drivers/vterm.c's (a small terminal emulator; see there for
 * why).  This file is only the hardware around it: the cell buffer, the
 * hardware cursor, and the two colours that tell the writers apart on one
 * screen: the guest's output in light grey (0x07, which its own SGR
 * colours change), the hypervisor's messages in the colour log_msg sets
 * (vga_set_attr: cyan for info, red/yellow/dark grey for error/warning/
 * debug).
 */
#include "console.h"
#include "io.h"
#include "vterm.h"

#define VGA_COLS 80
#define VGA_ROWS 25

static struct vterm screen;
static unsigned char hv_attr = VGA_ATTR_HV;

static void move_cursor(void)
{
	unsigned pos = vterm_cursor(&screen);

	outb(0x3d4, 0x0f);
	outb(0x3d5, pos & 0xff);
	outb(0x3d4, 0x0e);
	outb(0x3d5, (pos >> 8) & 0xff);
}

void vga_init(void)
{
	vterm_init(&screen, (uint16_t *)0xb8000, VGA_COLS, VGA_ROWS, VGA_ATTR_GUEST);
	move_cursor();
}

void vga_set_attr(unsigned char a)
{
	hv_attr = a;
}

/* A hypervisor message: "\n" starts a new line, no escape sequences. */
void vga_putc(char c)
{
	vterm_plain(&screen, c, hv_attr);
	move_cursor();
}

/* Before hypervisor output that follows the guest's: start a new line,
 * so a hypervisor message never continues a guest line (the prompt). */
void vga_fresh_line(void)
{
	vterm_fresh_line(&screen);
	move_cursor();
}

/* A byte the guest sent to its COM1, rendered as a terminal would. */
void vga_guest_putc(char c)
{
	vterm_putc(&screen, (uint8_t)c);
	move_cursor();
}
