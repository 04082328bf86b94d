/*
 * vpic.c - the guest's 8259A pair (master 0x20/0x21, slave 0xA0/0xA1,
 * slave cascaded on the master's IRQ2), as Linux's i8259 driver uses it.
 *
 * Modelled: the ICW1-ICW4 initialisation sequence (vector bases, auto-EOI),
 * OCW1 (the mask, read back from the data port), OCW2 (non-specific and
 * specific EOI), OCW3 (IRR or ISR on the command port), fully nested fixed
 * priority (IRQ0 highest).  Inputs are edge-triggered: a rising edge
 * latches the request in IRR, the vCPU's acknowledge moves it to ISR.
 * Rotation, special mask and poll mode are not used by Linux; they are
 * logged and ignored rather than half-emulated.
 *
 * The vCPU asks vpic_pending() before every entry and, when the guest's
 * virtual IF is set, takes the vector with vpic_ack() and delivers it
 * through the guest's IDT.
 */
#include "vpic.h"
#include "console.h"
#include "hvlib.h"

#define chip vpic_chip

void vpic_reset(struct vpic *p)
{
	/* Until the guest initialises them: masked, BIOS-style bases. */
	p->chips[0] = (struct chip){ .imr = 0xff, .base = 0x08 };
	p->chips[1] = (struct chip){ .imr = 0xff, .base = 0x70 };
	p->lines = 0;
}

/* Highest-priority input (0..7) that may interrupt now, or -1: requested,
 * unmasked and above everything in service. */
static int best(const struct chip *c, uint8_t req)
{
	uint8_t r = req & ~c->imr;

	if (!r)
		return -1;	/* the usual answer, asked before every entry */
	for (int i = 0; i < 8; i++) {
		if (c->isr & (1u << i))
			return -1;
		if (r & (1u << i))
			return i;
	}
	return -1;
}

static uint8_t master_requests(const struct vpic *p)
{
	return p->chips[0].irr | (best(&p->chips[1], p->chips[1].irr) >= 0 ? 0x04 : 0);
}

bool vpic_pending(const struct vpic *p)
{
	return best(&p->chips[0], master_requests(p)) >= 0;
}

unsigned vpic_ack(struct vpic *p)
{
	struct chip *chips = p->chips;
	int m = best(&chips[0], master_requests(p));
	struct chip *c = &chips[0];
	int n = m;

	if (m < 0)
		return 0;	/* caller checked vpic_pending() */
	if (m == 2 && !(chips[0].irr & 0x04)) {
		/* The slave's request, through the cascade input. */
		n = best(&chips[1], chips[1].irr);
		c = &chips[1];
		if (!chips[0].auto_eoi)
			chips[0].isr |= 0x04;
	}
	c->irr &= (uint8_t)~(1u << n);
	if (!c->auto_eoi)
		c->isr |= (uint8_t)(1u << n);
	return c->base + (unsigned)n;
}

void vpic_set_line(struct vpic *p, unsigned irq, bool level)
{
	uint16_t bit = (uint16_t)(1u << irq);

	if (irq >= 16 || irq == 2)
		return;
	if (level && !(p->lines & bit))
		p->chips[irq >> 3].irr |= (uint8_t)(1u << (irq & 7));
	p->lines = level ? p->lines | bit : p->lines & ~bit;
}

void vpic_pulse(struct vpic *p, unsigned irq)
{
	vpic_set_line(p, irq, true);
	vpic_set_line(p, irq, false);
}

static void eoi_highest(struct chip *c)
{
	for (int i = 0; i < 8; i++)
		if (c->isr & (1u << i)) {
			c->isr &= (uint8_t)~(1u << i);
			return;
		}
}

static void command(struct chip *c, unsigned which, uint8_t val)
{
	if (val & 0x10) {			/* ICW1 */
		if (val & 0x08)
			log_debug("vpic%u: level-triggered mode requested; inputs stay edge-triggered", which);
		c->irr = c->isr = c->imr = 0;
		c->need_icw4 = val & 0x01;
		c->single = val & 0x02;
		c->auto_eoi = false;
		c->read_isr = false;
		c->init_step = 2;
		return;
	}
	if ((val & 0x18) == 0x08) {		/* OCW3 */
		if (val & 0x02)
			c->read_isr = val & 0x01;
		if (val & 0x44)
			log_debug("vpic%u: OCW3 %02x: poll/special mask not emulated", which, val);
		return;
	}
	switch (val & 0xe0) {			/* OCW2 */
	case 0x20: case 0xa0:			/* non-specific EOI (rotation ignored) */
		eoi_highest(c);
		return;
	case 0x60: case 0xe0:			/* specific EOI */
		c->isr &= (uint8_t)~(1u << (val & 7));
		return;
	default:
		log_debug("vpic%u: OCW2 %02x ignored (rotation/priority not emulated)", which, val);
	}
}

static void data(struct chip *c, uint8_t val)
{
	switch (c->init_step) {
	case 0:
		c->imr = val;			/* OCW1 */
		return;
	case 2:
		c->base = val & 0xf8;
		c->init_step = c->single ? (c->need_icw4 ? 4 : 0) : 3;
		return;
	case 3:					/* cascade wiring: fixed here */
		c->init_step = c->need_icw4 ? 4 : 0;
		return;
	case 4:
		c->auto_eoi = val & 0x02;
		c->init_step = 0;
		return;
	}
}

bool vpic_io(struct vpic *p, uint16_t port, bool write, uint32_t *val)
{
	unsigned which;
	struct chip *c;

	switch (port) {
	case 0x20: case 0x21: which = 0; break;
	case 0xa0: case 0xa1: which = 1; break;
	default: return false;
	}
	c = &p->chips[which];
	if (write) {
		if (port & 1)
			data(c, (uint8_t)*val);
		else
			command(c, which, (uint8_t)*val);
	} else {
		*val = (port & 1) ? c->imr : c->read_isr ? c->isr : c->irr;
	}
	return true;
}

void vpic_state(const struct vpic *p, uint8_t irr[2], uint8_t isr[2], uint8_t imr[2])
{
	for (int i = 0; i < 2; i++) {
		irr[i] = p->chips[i].irr;
		isr[i] = p->chips[i].isr;
		imr[i] = p->chips[i].imr;
	}
}

/*
 * The ROM's share of the 8259s (docs/VROM.md, "The 8259s and the alarm
 * without an exit"): between an entry and the next exit it changes the
 * masks and clears in-service bits of the chips published as ready, in
 * the guest-writable shared page.
 */
unsigned vpic_rom_ready(const struct vpic *p)
{
	unsigned ready = 0;

	for (unsigned i = 0; i < 2; i++)
		if (p->chips[i].init_step == 0 && !p->chips[i].auto_eoi)
			ready |= 1u << i;
	return ready;
}

void vpic_rom_publish(struct vpic *p, uint32_t imr[2], uint32_t isr[2], uint32_t irr[2])
{
	for (unsigned i = 0; i < 2; i++) {
		imr[i] = p->rom_imr[i] = p->chips[i].imr;
		isr[i] = p->rom_isr[i] = p->chips[i].isr;
	}
	/* Any slave request may come through the master's cascade input. */
	irr[0] = p->chips[0].irr | (p->chips[1].irr ? 0x04 : 0);
	irr[1] = p->chips[1].irr;
}

uint64_t vpic_rom_key(const struct vpic *p)
{
	const struct chip *c = p->chips;
	uint32_t irr0 = c[0].irr | (c[1].irr ? 0x04 : 0);

	return (uint64_t)(c[0].imr | (uint32_t)c[1].imr << 8 | (uint32_t)c[0].isr << 16 |
			  (uint32_t)c[1].isr << 24) |
	       (uint64_t)(irr0 | (uint32_t)c[1].irr << 8 | vpic_rom_ready(p) << 16) << 32;
}

bool vpic_rom_take(struct vpic *p, const uint32_t imr[2], const uint32_t isr[2], struct rule_break *brk)
{
	static const char *const name[2] = { "master", "slave" };
	unsigned ready = vpic_rom_ready(p);

	/* Check both chips before changing either. */
	for (unsigned i = 0; i < 2; i++) {
		if (!(ready & (1u << i)))
			continue;	/* the ROM does not serve it: nothing to take */
		if (imr[i] > 0xff) {
			rule_break_note(brk, "8259 %s mask 0x%x is not 8 bits", name[i], imr[i]);
			return false;
		}
		if (isr[i] & ~(uint32_t)p->rom_isr[i]) {
			rule_break_note(brk, "8259 %s in-service bits 0x%x were never set (in service: 0x%x); an EOI only clears them",
					name[i], isr[i], p->rom_isr[i]);
			return false;
		}
	}
	/* Another vCPU's mask or EOI since the publication (a hypercall,
	 * vCPU 0 running meanwhile) is not undone by vCPU 0's stale copy. */
	for (unsigned i = 0; i < 2; i++)
		if (ready & (1u << i)) {
			if (imr[i] != p->rom_imr[i])
				p->chips[i].imr = (uint8_t)imr[i];
			p->chips[i].isr &= (uint8_t)~(p->rom_isr[i] & ~isr[i]);
		}
	return true;
}
