/* vuart.h - a guest's virtual 16550A on COM1 (vuart.c); one per guest. */
#ifndef VMI_HV_VUART_H
#define VMI_HV_VUART_H

#include <stdint.h>
#include <stdbool.h>
#include "vpic.h"
#include "console.h"

#define VUART_BASE 0x3f8
#define VUART_RX_SIZE 256

struct vuart {
	struct vpic *pic;		/* its IRQ4 goes to this guest's vPIC */
	uint8_t ier, lcr, mcr, scr, dll, dlm, fcr;
	bool thre_pending;
	uint8_t rx[VUART_RX_SIZE];
	unsigned rx_head, rx_tail, rx_dropped;
	uint64_t tx_bytes;		/* bytes the guest sent to COM1 */
	/* Moves with every change of the registers (vuart_io, vuart_receive,
	 * vuart_reset: the only ways in), so that what vuart_plain_reads
	 * returned can be kept until it does. */
	uint32_t gen;
	/* Where the bytes the guest sends go: its guest's console (COM1,
	 * whole lines named after the guest when several share it, and a VGA
	 * screen), which is the guest's, not the UART's. */
	struct guest_console *console;
};

/* Wire the UART to its guest's vPIC and console, and reset it. */
void vuart_init(struct vuart *u, struct vpic *pic, struct guest_console *console);
void vuart_reset(struct vuart *u);
/* A byte typed on the real COM1 for the guest. */
void vuart_receive(struct vuart *u, uint8_t c);
/* Ports 0x3F8-0x3FF, size 1; false for any other port. */
bool vuart_io(struct vuart *u, uint16_t port, bool write, uint32_t *val);
unsigned vuart_rx_dropped(const struct vuart *u);
/* Up to max registers whose reads have no side effect, and their values
 * now: the count filled in.  They stay so while gen does not move. */
unsigned vuart_plain_reads(const struct vuart *u, uint16_t *ports, uint8_t *vals, unsigned max);

#endif
