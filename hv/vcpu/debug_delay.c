/*
 * debug_delay.c - the test-only delays of debug_delay.h.
 */
#include "debug_delay.h"
#include "timer.h"
#include "io.h"
#include "hvlib.h"

uint32_t debug_pick_delay_us, debug_halt_delay_us;

void debug_delay(uint32_t us)
{
	uint64_t end;

	if (!us)
		return;
	end = rdtsc() + udiv64(tsc_hz() * us, 1000000);
	while (rdtsc() < end)
		__asm__ volatile("pause");
}
