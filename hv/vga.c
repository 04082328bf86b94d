/*
 * vga.c - 80x25 colour text mode at 0xB8000 (identity-mapped), scrolling,
 * with the hardware cursor following the output.
 */
#include "console.h"
#include "io.h"
#include "hvlib.h"

#define VGA_COLS 80
#define VGA_ROWS 25

static volatile uint16_t *const vga_mem = (volatile uint16_t *)0xb8000;
static unsigned row, col;
static unsigned char attr = 0x07;

static void move_cursor(void)
{
	unsigned pos = row * VGA_COLS + col;

	outb(0x3d4, 0x0f);
	outb(0x3d5, pos & 0xff);
	outb(0x3d4, 0x0e);
	outb(0x3d5, (pos >> 8) & 0xff);
}

void vga_init(void)
{
	for (unsigned i = 0; i < VGA_COLS * VGA_ROWS; i++)
		vga_mem[i] = (uint16_t)(0x07 << 8 | ' ');
	row = col = 0;
	move_cursor();
}

void vga_set_attr(unsigned char a)
{
	attr = a;
}

static void scroll(void)
{
	for (unsigned i = 0; i < VGA_COLS * (VGA_ROWS - 1); i++)
		vga_mem[i] = vga_mem[i + VGA_COLS];
	for (unsigned i = 0; i < VGA_COLS; i++)
		vga_mem[VGA_COLS * (VGA_ROWS - 1) + i] = (uint16_t)(0x07 << 8 | ' ');
	row = VGA_ROWS - 1;
}

void vga_putc(char c)
{
	if (c == '\n') {
		col = 0;
		row++;
	} else if (c == '\r') {
		col = 0;
	} else if (c == '\t') {
		col = (col + 8) & ~7u;
	} else {
		vga_mem[row * VGA_COLS + col] = (uint16_t)(attr << 8 | (uint8_t)c);
		col++;
	}
	if (col >= VGA_COLS) {
		col = 0;
		row++;
	}
	if (row >= VGA_ROWS)
		scroll();
	move_cursor();
}
