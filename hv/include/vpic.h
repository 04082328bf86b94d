/* vpic.h - a guest's virtual 8259A pair (vpic.c); one per guest. */
#ifndef VMI_HV_VPIC_H
#define VMI_HV_VPIC_H

#include <stdint.h>
#include <stdbool.h>

struct vpic_chip {
	uint8_t irr, isr, imr;
	uint8_t base;		/* ICW2: vector of input 0 */
	uint8_t init_step;	/* 0: operational; 2..4: expecting ICW2..4 */
	bool need_icw4, single, auto_eoi, read_isr;
};

struct vpic {
	struct vpic_chip chips[2];	/* master, slave */
	uint16_t lines;			/* input levels, for edge detection */
};

void vpic_reset(struct vpic *p);
/* An input line changed; a rising edge latches a request. */
void vpic_set_line(struct vpic *p, unsigned irq, bool level);
/* A rising and falling edge: one request (the alarm on IRQ0). */
void vpic_pulse(struct vpic *p, unsigned irq);
/* Input irq's request is latched in IRR (masked or not): a new edge on
 * it would change nothing until the guest takes it. */
bool vpic_requested(const struct vpic *p, unsigned irq);
/* An unmasked request could interrupt the guest now. */
bool vpic_pending(const struct vpic *p);
/* INTA: move the best request to in-service; returns its vector. */
unsigned vpic_ack(struct vpic *p);
/* Ports 0x20/0x21/0xA0/0xA1 (size 1); false for any other port. */
bool vpic_io(struct vpic *p, uint16_t port, bool write, uint32_t *val);
void vpic_state(const struct vpic *p, uint8_t irr[2], uint8_t isr[2], uint8_t imr[2]);

#endif
