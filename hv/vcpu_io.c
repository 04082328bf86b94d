/*
 * vcpu_io.c - the guest's port I/O.
 *
 * With IOPL 0 and no I/O bitmap in the TSS, every in/out from ring 1 or 3
 * traps (#GP) and the emulator hands the access here.  Before activation
 * the guest needs exactly one device: a 16550 on COM1 for
 * earlyprintk=serial (the decompressor's and the kernel's early console).
 * It is emulated just enough: a byte written to the transmit register
 * goes to the real COM1; the line status always says "transmitter empty";
 * the divisor, line and modem control and scratch registers hold what the
 * guest wrote, without touching the real UART (the hypervisor's own
 * console shares it).  Nothing is ever received.
 *
 * Every other port is denied: reads return all ones (an absent device on
 * the ISA bus), writes are dropped, and each is logged, at most
 * IO_LOG_LIMIT lines per 10 s so that a polling loop cannot flood the log.
 */
#include "vcpu.h"
#include "console.h"
#include "timer.h"

#define COM1_BASE   0x3f8
#define IO_LOG_LIMIT 20

#define LSR_THRE    0x20
#define LSR_TEMT    0x40
#define MSR_CTS_DSR_DCD 0xb0

static struct {
	uint8_t ier, lcr, mcr, scr, dll, dlm;
} com1 = { .lcr = 0x03, .dll = 1 };

static unsigned io_logged;

static uint32_t ones(unsigned size)
{
	return size >= 4 ? 0xffffffffu : (1u << (size * 8)) - 1;
}

static bool com1_in(uint16_t reg, uint32_t *val)
{
	bool dlab = com1.lcr & 0x80;

	switch (reg) {
	case 0: *val = dlab ? com1.dll : 0; return true;	/* RBR: nothing received */
	case 1: *val = dlab ? com1.dlm : com1.ier; return true;
	case 2: *val = 0x01; return true;			/* IIR: no interrupt pending */
	case 3: *val = com1.lcr; return true;
	case 4: *val = com1.mcr; return true;
	case 5: *val = LSR_THRE | LSR_TEMT; return true;
	case 6: *val = MSR_CTS_DSR_DCD; return true;
	case 7: *val = com1.scr; return true;
	}
	return false;
}

static void com1_out(struct vcpu *v, uint16_t reg, uint8_t val)
{
	bool dlab = com1.lcr & 0x80;

	switch (reg) {
	case 0:
		if (dlab) {
			com1.dll = val;
		} else {
			serial_putc_raw((char)val);
			v->stats.com1_bytes++;
		}
		return;
	case 1:
		if (dlab)
			com1.dlm = val;
		else
			com1.ier = val & 0x0f;
		return;
	case 2: return;				/* FCR: FIFOs are always fine */
	case 3: com1.lcr = val; return;
	case 4: com1.mcr = val & 0x1f; return;
	case 7: com1.scr = val; return;
	}
}

/* At most IO_LOG_LIMIT lines per IO_LOG_WINDOW ticks (10 s); what was
 * dropped is summed up when the next window opens. */
#define IO_LOG_WINDOW (10 * HV_TICK_HZ)

static void log_denied(struct vcpu *v, const char *dir, uint16_t port, unsigned size, uint32_t val)
{
	static uint64_t window_start, dropped;
	uint64_t now = hv_ticks();

	v->stats.io_denied++;
	if (now - window_start >= IO_LOG_WINDOW) {
		if (dropped)
			log_info("guest: %llu more denied port accesses not logged",
				 (unsigned long long)dropped);
		window_start = now;
		io_logged = 0;
		dropped = 0;
	}
	if (io_logged >= IO_LOG_LIMIT) {
		dropped++;
		return;
	}
	io_logged++;
	log_info("guest: port %s 0x%x (%u bytes%s%x) denied at eip %08x%s", dir, port, size,
		 dir[0] == 'o' ? ", value 0x" : ", returning 0x", val, v->frame->eip,
		 io_logged == IO_LOG_LIMIT ? "; more in the next 10 s are only counted" : "");
}

enum emul_result vcpu_io_in(struct vcpu *v, uint16_t port, unsigned size, uint32_t *val)
{
	if (port >= COM1_BASE && port < COM1_BASE + 8 && size == 1 &&
	    com1_in(port - COM1_BASE, val))
		return EMUL_OK;
	*val = ones(size);
	log_denied(v, "in", port, size, *val);
	return EMUL_OK;
}

enum emul_result vcpu_io_out(struct vcpu *v, uint16_t port, unsigned size, uint32_t val)
{
	if (port >= COM1_BASE && port < COM1_BASE + 8 && size == 1) {
		com1_out(v, port - COM1_BASE, (uint8_t)val);
		return EMUL_OK;
	}
	log_denied(v, "out", port, size, val);
	return EMUL_OK;
}
