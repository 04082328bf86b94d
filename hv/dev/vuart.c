/*
 * vuart.c - the guest's 16550A on COM1 (0x3F8-0x3FF, IRQ4).
 *
 * Enough of the chip for Linux's 8250 driver, which probes before it
 * trusts: the scratch register, IER read-back, the loopback test (MSR
 * follows MCR's RTS/DTR/OUT1/OUT2 as CTS/DSR/RI/DCD, and THR bytes come
 * back in RBR), the FIFO bits of IIR after FCR enables them ("16550A"),
 * and the THRE interrupt test at startup.
 *
 * Transmit is instantaneous: a THR byte goes straight to the real COM1
 * (and is rendered on the VGA text screen, console_guest_write),
 * so the transmitter is always empty.  Receive: the hypervisor's serial
 * driver (real IRQ4) hands us the bytes that are not its escape sequence
 * (vcpu->c); they wait in a FIFO until the guest reads RBR.
 *
 * Interrupts: RX data (IER bit 0) while the FIFO is not empty, THRE
 * (IER bit 1) from the moment the transmitter is empty until IIR reports
 * it or THR is written.  The line to the virtual PIC is the OR of those,
 * gated by MCR.OUT2 as on a PC, and not driven in loopback mode.
 */
#include "vuart.h"
#include "vpic.h"
#include "console.h"

#define RX_SIZE VUART_RX_SIZE
#define IRQ_COM1 4

#define IER_RDI   0x01
#define IER_THRI  0x02
#define LSR_DR    0x01
#define LSR_THRE  0x20
#define LSR_TEMT  0x40
#define MCR_OUT2  0x08
#define MCR_LOOP  0x10

void vuart_init(struct vuart *u, struct vpic *pic, struct guest_console *console)
{
	u->pic = pic;
	u->console = console;
	vuart_reset(u);
}

void vuart_reset(struct vuart *u)
{
	u->ier = u->mcr = u->scr = u->fcr = u->dlm = 0;
	u->lcr = 0x03;
	u->dll = 1;
	u->thre_pending = false;
	u->rx_head = u->rx_tail = 0;
	u->gen++;
}

static bool rx_empty(const struct vuart *u)
{
	return u->rx_head == u->rx_tail;
}

static void rx_put(struct vuart *u, uint8_t c)
{
	unsigned next = (u->rx_head + 1) % RX_SIZE;

	if (next == u->rx_tail) {
		u->rx_dropped++;
		return;
	}
	u->rx[u->rx_head] = c;
	u->rx_head = next;
}

/* The interrupt the chip would report, by 16550 priority; 0x01 = none. */
static uint8_t iir_cause(const struct vuart *u)
{
	if ((u->ier & IER_RDI) && !rx_empty(u))
		return 0x04;
	if ((u->ier & IER_THRI) && u->thre_pending)
		return 0x02;
	return 0x01;
}

static void update_irq(struct vuart *u)
{
	bool level = iir_cause(u) != 0x01 && (u->mcr & MCR_OUT2) && !(u->mcr & MCR_LOOP);

	vpic_set_line(u->pic, IRQ_COM1, level);
}

void vuart_receive(struct vuart *u, uint8_t c)
{
	u->gen++;
	rx_put(u, c);
	update_irq(u);
}

static uint8_t msr(const struct vuart *u)
{
	if (u->mcr & MCR_LOOP)	/* RTS->CTS, DTR->DSR, OUT1->RI, OUT2->DCD */
		return (uint8_t)(((u->mcr & 0x02) << 3) | ((u->mcr & 0x01) << 5) |
				 ((u->mcr & 0x04) << 4) | ((u->mcr & 0x08) << 4));
	return 0xb0;		/* CTS, DSR, DCD: a cable is there */
}

/* Registers 1 and 3-7: reading them changes nothing. */
static uint8_t plain_reg(const struct vuart *u, unsigned reg)
{
	switch (reg) {
	case 1: return (u->lcr & 0x80) ? u->dlm : u->ier;
	case 3: return u->lcr;
	case 4: return u->mcr;
	case 5: return (rx_empty(u) ? 0 : LSR_DR) | LSR_THRE | LSR_TEMT;
	case 6: return msr(u);
	case 7: return u->scr;
	}
	return 0xff;
}

static uint8_t read_reg(struct vuart *u, unsigned reg)
{
	bool dlab = u->lcr & 0x80;
	uint8_t val = 0;

	switch (reg) {
	case 0:
		if (dlab)
			return u->dll;
		if (!rx_empty(u)) {
			val = u->rx[u->rx_tail];
			u->rx_tail = (u->rx_tail + 1) % RX_SIZE;
		}
		break;
	case 2:
		val = iir_cause(u);
		if (val == 0x02)	/* reading IIR acknowledges THRE */
			u->thre_pending = false;
		if (u->fcr & 0x01)
			val |= 0xc0;
		break;
	default:
		return plain_reg(u, reg);
	}
	update_irq(u);
	return val;
}

/* A byte the guest sends: to its guest's console (console.c). */
static void transmit(struct vuart *u, char c)
{
	console_guest_write(u->console, c);
}

/*
 * The registers whose reads change nothing (not RBR, which takes a byte,
 * nor IIR, which acknowledges THRE), with what a read returns now, for
 * the ROM to answer without an exit (F_INB).  They change only through
 * the guest's own writes and received input, both of which happen at an
 * exit, after which the hypervisor publishes them again.
 */
unsigned vuart_plain_reads(const struct vuart *u, uint16_t *ports, uint8_t *vals, unsigned max)
{
	static const unsigned regs[] = { 5, 6, 1, 3, 4, 7 };	/* LSR first: the console polls it */
	unsigned n = 0;

	for (unsigned i = 0; i < sizeof(regs) / sizeof(regs[0]) && n < max; i++, n++) {
		ports[n] = (uint16_t)(VUART_BASE + regs[i]);
		vals[n] = plain_reg(u, regs[i]);
	}
	return n;
}

static void write_reg(struct vuart *u, unsigned reg, uint8_t val)
{
	bool dlab = u->lcr & 0x80;

	switch (reg) {
	case 0:
		if (dlab) {
			u->dll = val;
			return;
		}
		if (u->mcr & MCR_LOOP) {
			rx_put(u, val);
		} else {
			transmit(u, (char)val);	/* COM1 and VGA */
			u->tx_bytes++;
		}
		u->thre_pending = true;	/* sent at once: empty again */
		break;
	case 1:
		if (dlab) {
			u->dlm = val;
			return;
		}
		/* Enabling THRE with the transmitter empty raises it. */
		if ((val & IER_THRI) && !(u->ier & IER_THRI))
			u->thre_pending = true;
		u->ier = val & 0x0f;
		break;
	case 2:
		u->fcr = val & 0xc9;
		if (val & 0x02)		/* clear the receive FIFO */
			u->rx_head = u->rx_tail = 0;
		break;
	case 3: u->lcr = val; return;
	case 4: u->mcr = val & 0x1f; break;
	case 7: u->scr = val; return;
	default: return;		/* LSR, MSR: read-only */
	}
	update_irq(u);
}

bool vuart_io(struct vuart *u, uint16_t port, bool write, uint32_t *val)
{
	if (port < VUART_BASE || port >= VUART_BASE + 8)
		return false;
	u->gen++;	/* reads too: RBR and IIR have side effects */
	if (write)
		write_reg(u, port - VUART_BASE, (uint8_t)*val);
	else
		*val = read_reg(u, port - VUART_BASE);
	return true;
}

unsigned vuart_rx_dropped(const struct vuart *u)
{
	return u->rx_dropped;
}
