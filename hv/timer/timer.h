/* timer.h - the time base (TSC) and the hypervisor's periodic tick. */
#ifndef VMI_HV_TIMER_H
#define VMI_HV_TIMER_H

#include <stdint.h>

#define PIT_HZ        1193182u	/* the 8254's input clock */
/* 1 kHz: the tick bounds how late a guest alarm can be (~1 ms). */
#define HV_TICK_HZ    1000u

/* Measure the TSC frequency against PIT channel 2; prints it. */
void tsc_calibrate(void);
uint64_t tsc_hz(void);
/* TSC cycles -> microseconds / nanoseconds at the measured frequency. */
uint64_t tsc_to_us(uint64_t cycles);

/* Program PIT channel 0 at HV_TICK_HZ on IRQ0; then check that ticks
 * arrive at that rate (interrupts must be on). */
void hv_timer_start(void);
void hv_timer_check(void);
uint64_t hv_ticks(void);

/* 64-by-32 division (no libgcc in the hypervisor). */
uint64_t udiv64(uint64_t n, uint32_t d);

/* The CMOS RTC, read once at boot (rtc.c); the wall clock since. */
void rtc_read_boot(void);
uint64_t wallclock_ns(void);

/* Sleep with interrupts on for about ms milliseconds (halt between ticks). */
void hv_sleep_ms(uint32_t ms);

#endif
