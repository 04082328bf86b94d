/* timer.h - the hypervisor's one-shot timer and the wall clock, on the
 * time base (tsc.h). */
#ifndef VMI_HV_TIMER_H
#define VMI_HV_TIMER_H

#include <stdint.h>
#include <stdbool.h>
#include "tsc.h"

/* The hypervisor's one-shot timer (hv_timer.c): take IRQ0, then check
 * that a shot arrives when it should (interrupts must be on). */
void hv_timer_start(void);
void hv_timer_check(void);
/* With interrupts off: make sure IRQ0 comes by the TSC time `deadline`
 * (an earlier shot already armed stays). */
void hv_timer_arm(uint64_t deadline);
/* Each CPU has its own one-shot timer (the local APIC's), not the PIT. */
bool hv_timer_per_cpu(void);
/* Timer interrupts taken, and PIT reprogrammings, since boot. */
uint64_t hv_timer_interrupts(void);
uint64_t hv_timer_arms(void);
/* Milliseconds since the TSC started (about since power-on). */
uint64_t hv_uptime_ms(void);

/* The CMOS RTC, read once at boot (rtc.c); the wall clock since. */
void rtc_read_boot(void);
uint64_t wallclock_ns(void);

#endif
