/* vuart.h - the guest's virtual 16550A on COM1 (vuart.c). */
#ifndef VMI_HV_VUART_H
#define VMI_HV_VUART_H

#include "vcpu.h"

#define VUART_BASE 0x3f8

void vuart_reset(void);
/* A byte typed on the real COM1 for the guest. */
void vuart_receive(uint8_t c);
/* Ports 0x3F8-0x3FF, size 1; false for any other port. */
bool vuart_io(struct vcpu *v, uint16_t port, bool write, uint32_t *val);
unsigned vuart_rx_dropped(void);

#endif
