/* timer.h - the time base (TSC) and the hypervisor's one-shot timer. */
#ifndef VMI_HV_TIMER_H
#define VMI_HV_TIMER_H

#include <stdint.h>
#include <stdbool.h>

#define PIT_HZ        1193182u	/* the 8254's input clock */

/* What tsc_calibrate() found, for the boot log. */
enum tsc_result {
	TSC_OK,
	TSC_NONE,	/* CPUID.1:EDX.TSC clear */
	TSC_NO_PIT,	/* PIT channel 2 never finished a window */
};
struct tsc_calibration {
	uint64_t hz;		/* the frequency in use */
	uint64_t cpuid_hz;	/* CPUID.15h's claim, 0 if none */
	unsigned window_ms;	/* one window's length */
	unsigned tries;		/* windows timed */
	unsigned clean;		/* of them known to within 0.1% (0: the least disturbed used) */
};
/* Measure the TSC frequency against PIT channel 2. */
enum tsc_result tsc_calibrate(struct tsc_calibration *r);
uint64_t tsc_hz(void);
/* TSC cycles -> microseconds / nanoseconds at the measured frequency. */
uint64_t tsc_to_us(uint64_t cycles);

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
