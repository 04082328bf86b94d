/*
 * vcpu_io.c - the guest's port I/O, from trapped in/out (the emulator)
 * and from the VMI IN/OUT calls alike.
 *
 * Devices: the 8259A pair (vpic.c) and a 16550A on COM1 (vuart.c).  Ports
 * Linux touches on a PC and must get a sane answer from, without a device
 * behind them, answered without a word:
 *   - the PIT (0x40-0x43: reads 0, writes dropped; the guest's clock is
 *     the VMI time device) and port B (0x61: speaker off, reads 0);
 *   - the CMOS RTC (0x70/0x71: index kept, reads from the real RTC for the
 *     clock registers 0-13, 0 elsewhere; writes to the data port dropped);
 *   - port 0x80, the POST-code port, where Linux's outb_p() writes to wait
 *     for a slow device (io_delay): nothing is there to wait for;
 *   - port 0x87, the ISA DMA page register Linux's i8237 driver reads to
 *     learn whether the PC has a legacy DMA controller: 0xff is the "none"
 *     its comment names (as on PCs since Skylake), and the guest has none;
 *   - the keyboard controller, 0x60/0x64: it is the hypervisor's (kbd.c)
 *     and the guest must not find one.  The data port reads 0xff; the
 *     status port reads 0x01: a byte always waiting, the input buffer
 *     always free.  Linux's i8042 driver first drains the output buffer,
 *     and a controller with more than 16 bytes to give is no controller
 *     to it: "i8042: No controller found", and it leaves the ports alone.
 *     (Status 0, "empty", made it send commands that were never answered:
 *     "Can't read CTR".  Status 0xff, an absent ISA device, works as well
 *     for the probe, but Linux's reboot waits for a free input buffer
 *     before it writes 0xFE: 65,536 reads, 65,000 more hypercalls and
 *     1.4 s on TCG at every reboot.)  Writes are dropped, except command
 *     0xFE on 0x64, the pulse on the reset line that Linux's reboot uses:
 *     it reboots the guest.
 *
 * Every other port of the PC's legacy ISA range (below 0x400) is denied:
 * reads return all ones (an absent device on the ISA bus), writes are
 * dropped, and each is logged, at most GUEST_LOG_LIMIT lines per 10 s so
 * that a polling loop cannot flood the log.  Linux probes such ports for
 * devices a PC may have (VGA, more UARTs), so this must not stop it.
 * A port at or above 0x400 has nothing a PC guest without PCI could be
 * looking for: that access is a rule break, and the guest is stopped.
 */
#include "vcpu_state.h"
#include "guest_stop.h"
#include "vcpu_io.h"
#include "vpic.h"
#include "vuart.h"
#include "console.h"
#include "timer.h"
#include "io.h"

/* Output buffer full, input buffer free: see the i8042 above. */
#define I8042_STATUS_SEEN_BY_GUEST 0x01

void guest_devices_reset(struct guest *g)
{
	vpic_reset(&g->vpic);
	vuart_init(&g->vuart, &g->vpic, &g->console);
	for (unsigned i = 0; i < g->nr_vcpus; i++)
		valarm_init(&g->vcpus[i]->valarm, i ? 0 : &g->vpic, &g->vcpus[i]->lapic);
	g->ports = (struct guest_ports){ 0 };
}

static uint32_t ones(unsigned size)
{
	return size >= 4 ? 0xffffffffu : (1u << (size * 8)) - 1;
}

/* The quiet ports above; false if the port is not one of them. */
static bool misc_io(struct vcpu *v, uint16_t port, bool write, uint32_t *val)
{
	struct guest_ports *p = &v->guest->ports;

	switch (port) {
	case 0x40: case 0x41: case 0x42: case 0x43:
	case 0x61:
		if (!write)
			*val = 0;
		return true;
	case 0x70:
		if (write)
			p->cmos_index = (uint8_t)(*val & 0x7f);	/* bit 7: NMI mask, ours */
		else
			*val = p->cmos_index;
		return true;
	case 0x71:
		if (!write) {
			if (p->cmos_index <= 0x0d) {
				outb(0x70, p->cmos_index);
				*val = inb(0x71);
			} else {
				*val = 0;
			}
		}
		return true;
	case 0x80:
	case 0x87:
		if (!write)
			*val = 0xff;
		return true;
	case 0x60:
		if (!write)
			*val = 0xff;
		return true;
	case 0x64:
		if (!write)
			*val = I8042_STATUS_SEEN_BY_GUEST;
		else if ((*val & 0xff) == 0xfe)
			vcpu_guest_reboot(v, "keyboard controller reset (port 0x64, 0xfe)");
		return true;
	}
	return false;
}

#define LEGACY_IO_END VCPU_LEGACY_IO_END

bool vcpu_io_port_legal(uint32_t port, unsigned size)
{
	return port < LEGACY_IO_END && port + size <= LEGACY_IO_END;
}

static void check_port(struct vcpu *v, const char *dir, uint16_t port, unsigned size)
{
	if (!vcpu_io_port_legal(port, size))
		vcpu_stop(v, "port %s 0x%x (%u bytes) is outside the legacy PC I/O range (0-0x%x): no device of this guest is there",
			  dir, port, size, LEGACY_IO_END - 1);
}

static bool device_io(struct vcpu *v, uint16_t port, unsigned size, bool write, uint32_t *val)
{
	if (size != 1)
		return false;
	return vpic_io(&v->guest->vpic, port, write, val) ||
	       vuart_io(&v->guest->vuart, port, write, val) ||
	       misc_io(v, port, write, val);
}

/* At most GUEST_LOG_LIMIT lines per GUEST_LOG_WINDOW ms (10 s); what
 * was dropped is summed up when the next window opens. */
#define GUEST_LOG_WINDOW 10000

const char *guest_log_take(struct guest_log_limit *l, const char *what)
{
	uint64_t now = hv_uptime_ms();

	if (now - l->window_start >= GUEST_LOG_WINDOW) {
		if (l->dropped)
			log_info("guest: %llu more %s not logged", (unsigned long long)l->dropped, what);
		l->window_start = now;
		l->logged = 0;
		l->dropped = 0;
	}
	if (l->logged >= GUEST_LOG_LIMIT) {
		l->dropped++;
		return 0;
	}
	return ++l->logged == GUEST_LOG_LIMIT ? "; more in the next 10 s are only counted" : "";
}

static void log_denied(struct vcpu *v, const char *dir, uint16_t port, unsigned size, uint32_t val)
{
	struct guest_ports *p = &v->guest->ports;
	const char *more;

	p->denied++;
	more = guest_log_take(&p->log, "denied port accesses");
	if (more)
		log_info("guest: port %s 0x%x (%u bytes%s%x) denied at eip %08x%s", dir, port, size,
			 dir[0] == 'o' ? ", value 0x" : ", returning 0x", val, v->frame->eip, more);
}

enum emul_result vcpu_io_in(struct vcpu *v, uint16_t port, unsigned size, uint32_t *val)
{
	if (device_io(v, port, size, false, val))
		return EMUL_OK;
	check_port(v, "in", port, size);
	*val = ones(size);
	log_denied(v, "in", port, size, *val);
	return EMUL_OK;
}

enum emul_result vcpu_io_out(struct vcpu *v, uint16_t port, unsigned size, uint32_t val)
{
	if (device_io(v, port, size, true, &val))
		return EMUL_OK;
	check_port(v, "out", port, size);
	log_denied(v, "out", port, size, val);
	return EMUL_OK;
}
