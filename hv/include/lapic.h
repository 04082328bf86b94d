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

#endif
