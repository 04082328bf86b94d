/* tsc.h - the time base: the TSC, its frequency measured at boot (tsc.c). */
#ifndef VMI_HV_TSC_H
#define VMI_HV_TSC_H

#include <stdint.h>

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
/* tsc_hz() / 1000, without a 64-bit division (asked at every exit). */
uint64_t tsc_per_ms(void);
/* TSC cycles -> microseconds / nanoseconds at the measured frequency. */
uint64_t tsc_to_us(uint64_t cycles);

/* When the hypervisor started: marked first thing at boot (main.c). */
void tsc_mark_start(void);
uint64_t tsc_at_start(void);

#endif
