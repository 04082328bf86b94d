/* vpic.h - a guest's virtual 8259A pair (vpic.c); one per guest. */
#ifndef VMI_HV_VPIC_H
#define VMI_HV_VPIC_H

#include <stdint.h>
#include <stdbool.h>
#include "rule_break.h"

struct vpic_chip {
	uint8_t irr, isr, imr;
	uint8_t base;		/* ICW2: vector of input 0 */
	uint8_t init_step;	/* 0: operational; 2..4: expecting ICW2..4 */
	bool need_icw4, single, auto_eoi, read_isr;
};

struct vpic {
	struct vpic_chip chips[2];	/* master, slave */
	uint16_t lines;			/* input levels, for edge detection */
	/* The masks and in-service bits vCPU 0's page was last published
	 * with: what its ROM changed since is what differs from these. */
	uint8_t rom_imr[2], rom_isr[2];
};

void vpic_reset(struct vpic *p);
/* An input line changed; a rising edge latches a request. */
void vpic_set_line(struct vpic *p, unsigned irq, bool level);
/* A rising and falling edge: one request (the alarm on IRQ0). */
void vpic_pulse(struct vpic *p, unsigned irq);
/* Input irq's request is latched in IRR (masked or not): a new edge on
 * it would change nothing until the guest takes it.  Inline: the alarms
 * ask it several times an exit (valarm.c). */
static inline bool vpic_requested(const struct vpic *p, unsigned irq)
{
	return irq < 16 && (p->chips[irq >> 3].irr & (1u << (irq & 7)));
}
/* An unmasked request could interrupt the guest now. */
bool vpic_pending(const struct vpic *p);
/* INTA: move the best request to in-service; returns its vector. */
unsigned vpic_ack(struct vpic *p);
/* Ports 0x20/0x21/0xA0/0xA1 (size 1); false for any other port. */
bool vpic_io(struct vpic *p, uint16_t port, bool write, uint32_t *val);
void vpic_state(const struct vpic *p, uint8_t irr[2], uint8_t isr[2], uint8_t imr[2]);

/* The ROM serves the masks and EOIs of the chips in this bit set (bit 0
 * master, 1 slave): initialised, not auto-EOI. */
unsigned vpic_rom_ready(const struct vpic *p);
/* What the ROM works from: masks, in-service bits, requests (the
 * master's with the cascade input when the slave has any), kept as
 * published for vpic_rom_take.  vCPU 0's page only. */
void vpic_rom_publish(struct vpic *p, uint32_t imr[2], uint32_t isr[2], uint32_t irr[2]);
/* All that vpic_rom_publish and vpic_rom_ready would write, in one word:
 * while it stays the same, the page needs no new publication (the
 * caller keeps the key it published with). */
uint64_t vpic_rom_key(const struct vpic *p);
/* The page's masks and in-service bits are still those last published:
 * the ROM changed nothing, so there is nothing to take back or check.
 * What another vCPU changed meanwhile is in the chips, not the page, and
 * stays (the key moved: the next publication carries it). */
static inline bool vpic_rom_untouched(const struct vpic *p, const uint32_t imr[2], const uint32_t isr[2])
{
	return ((imr[0] ^ p->rom_imr[0]) | (imr[1] ^ p->rom_imr[1]) |
		(isr[0] ^ p->rom_isr[0]) | (isr[1] ^ p->rom_isr[1])) == 0;
}
/* Take back what the ROM changed since the publication, for the ready
 * chips: a mask it wrote, the in-service bits it cleared; what another
 * vCPU's port writes changed meanwhile stays.  false (nothing changed),
 * with why in *brk, if the guest-written values are impossible: a mask
 * wider than 8 bits, in-service bits that were not published. */
bool vpic_rom_take(struct vpic *p, const uint32_t imr[2], const uint32_t isr[2], struct rule_break *brk);

#endif
