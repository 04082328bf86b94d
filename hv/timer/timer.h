/* timer.h - the time base (TSC) and the hypervisor's periodic tick. */
#ifndef VMI_HV_TIMER_H
#define VMI_HV_TIMER_H

#include <stdint.h>

#define PIT_HZ        1193182u	/* the 8254's input clock */
#define HV_TICK_HZ    100u

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

/* Sleep with interrupts on for about ms milliseconds (halt between ticks). */
void hv_sleep_ms(uint32_t ms);

#endif
