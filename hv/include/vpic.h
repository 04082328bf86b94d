/* vpic.h - the guest's virtual 8259A pair (vpic.c). */
#ifndef VMI_HV_VPIC_H
#define VMI_HV_VPIC_H

#include <stdint.h>
#include <stdbool.h>

void vpic_reset(void);
/* An input line changed; a rising edge latches a request. */
void vpic_set_line(unsigned irq, bool level);
/* A rising and falling edge: one request (the alarm on IRQ0). */
void vpic_pulse(unsigned irq);
/* An unmasked request could interrupt the guest now. */
bool vpic_pending(void);
/* INTA: move the best request to in-service; returns its vector. */
unsigned vpic_ack(void);
/* Ports 0x20/0x21/0xA0/0xA1 (size 1); false for any other port. */
bool vpic_io(uint16_t port, bool write, uint32_t *val);
void vpic_state(uint8_t irr[2], uint8_t isr[2], uint8_t imr[2]);

#endif
