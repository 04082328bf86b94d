/*
 * serial.c - COM1, a 16550 UART: polled output, interrupt-driven input.
 *
 * Output polls the transmitter, so messages get out even with interrupts
 * off (panics, exception dumps).  Input arrives on IRQ4 into a ring buffer.
 */
#include "console.h"
#include "io.h"
#include "segments.h"
#include "pic.h"

#define COM1        0x3f8
#define UART_DATA   0   /* RBR/THR; divisor low with DLAB */
#define UART_IER    1   /* interrupt enable; divisor high with DLAB */
#define UART_IIR    2   /* interrupt identification / FIFO control */
#define UART_LCR    3
#define UART_MCR    4
#define UART_LSR    5
#define UART_SCR    7

#define LSR_DATA_READY  0x01
#define LSR_THR_EMPTY   0x20

static bool present;
static char rx_buf[256];
static volatile unsigned rx_head, rx_tail, rx_total;

bool serial_init(void)
{
	/* No UART answers with 0xff; the scratch register tells us. */
	outb(COM1 + UART_SCR, 0x5a);
	if (inb(COM1 + UART_SCR) != 0x5a)
		return false;
	outb(COM1 + UART_IER, 0x00);
	outb(COM1 + UART_LCR, 0x80);	/* DLAB on */
	outb(COM1 + UART_DATA, 1);	/* 115200 baud */
	outb(COM1 + UART_IER, 0);
	outb(COM1 + UART_LCR, 0x03);	/* 8N1, DLAB off */
	outb(COM1 + UART_IIR, 0xc7);	/* FIFO on, cleared, 14-byte trigger */
	outb(COM1 + UART_MCR, 0x0b);	/* DTR, RTS, OUT2 (gates the IRQ line) */
	present = true;
	return true;
}

void serial_putc(char c)
{
	if (c == '\n')
		serial_putc_raw('\r');
	serial_putc_raw(c);
}

void serial_putc_raw(char c)
{
	unsigned spins = 0;

	if (!present)
		return;
	/* Bounded: a wedged UART must not hang a panic message. */
	while (!(inb(COM1 + UART_LSR) & LSR_THR_EMPTY) && ++spins < 100000)
		cpu_relax();
	outb(COM1 + UART_DATA, (uint8_t)c);
}

void serial_enable_rx_irq(void)
{
	if (!present)
		return;
	outb(COM1 + UART_IER, 0x01);	/* received data available */
	pic_unmask(HV_IRQ_COM1);
}

/* IRQ4: drain the receiver into the ring; drop input when it is full. */
void serial_irq(void)
{
	while (inb(COM1 + UART_LSR) & LSR_DATA_READY) {
		char c = (char)inb(COM1 + UART_DATA);
		unsigned next = (rx_head + 1) % sizeof(rx_buf);

		rx_total++;
		if (next != rx_tail) {
			rx_buf[rx_head] = c;
			rx_head = next;
		}
	}
}

int serial_getc(void)
{
	char c;

	if (rx_tail == rx_head)
		return -1;
	c = rx_buf[rx_tail];
	rx_tail = (rx_tail + 1) % sizeof(rx_buf);
	return (unsigned char)c;
}

unsigned serial_rx_count(void)
{
	return rx_total;
}
