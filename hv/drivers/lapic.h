/* lapic.h - the machine's local APIC (hv/drivers/lapic.c): its timer, as
 * the hypervisor's one-shot timer where there is one. */
#ifndef VMI_HV_LAPIC_H
#define VMI_HV_LAPIC_H

#include <stdint.h>
#include <stdbool.h>

/* Map and software-enable the local APIC, keep the 8259's interrupts
 * coming through LINT0, and route its timer to HV_LOCAL_TIMER_VECTOR.
 * false, with *why set, when there is no usable local APIC. */
bool lapic_init(const char **why);
/* The timer's count rate (after its divider), measured against the TSC. */
bool lapic_timer_calibrate(uint64_t *hz, const char **why);
/* One shot after `count` timer counts (1..UINT32_MAX); 0 stops it. */
void lapic_timer_oneshot(uint32_t count);
/* End of interrupt for the vector being served. */
void lapic_eoi(void);
/* This CPU's local APIC ID. */
uint8_t lapic_id(void);
/* Inter-processor interrupts to the CPU with apic_id: INIT, a startup
 * IPI at the real-mode page `page` (below 1 MiB, 4 KiB aligned), a fixed
 * vector.  false when the local APIC does not take the IPI. */
bool lapic_send_init(uint8_t apic_id);
bool lapic_send_startup(uint8_t apic_id, uint32_t page);
bool lapic_send_fixed(uint8_t apic_id, uint8_t vector);
/* On a started CPU: its local APIC as the boot CPU's, but LINT0 masked
 * (the 8259 reaches the boot CPU alone) and the timer at its rate. */
void lapic_init_secondary(void);

#endif
