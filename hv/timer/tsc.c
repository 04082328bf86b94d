/*
 * tsc.c - the time base: the TSC, its frequency measured against the PIT.
 *
 * PIT channel 2 counts down once in mode 0 with its gate under our
 * control (port 0x61 bit 0) and its output readable (port 0x61 bit 5):
 * a clean, interrupt-free stopwatch of known length.  We time three
 * 20 ms windows with the TSC and keep the smallest: a longer reading
 * only means we were late to notice the end (an SMI, a host hiccup under
 * emulation).  CPUID leaf 0x15, when the CPU has it, is shown for
 * comparison.
 */
#include "timer.h"
#include "io.h"
#include "console.h"
#include "stop.h"

#define PIT_CH2     0x42
#define PIT_CMD     0x43
#define PORT_B      0x61
#define WINDOW_MS   20u
#define WINDOW_TICKS (PIT_HZ * WINDOW_MS / 1000)	/* 23863, fits 16 bits */

static uint64_t hz;

/* 64-by-32 division without libgcc: n / d, d < 2^32. */
static uint64_t udiv64(uint64_t n, uint32_t d)
{
	uint32_t hi = (uint32_t)(n >> 32), lo = (uint32_t)n, q_hi, r;
	uint32_t q_lo;

	q_hi = hi / d;
	r = hi % d;
	__asm__("divl %4" : "=a"(q_lo), "=d"(r) : "a"(lo), "d"(r), "rm"(d));
	return ((uint64_t)q_hi << 32) | q_lo;
}

static uint64_t measure_window(void)
{
	uint64_t start, end;
	uint8_t b;
	unsigned long spins = 0;

	b = inb(PORT_B);
	outb(PORT_B, (b & ~0x02) & ~0x01);	/* gate low, speaker off */
	outb(PIT_CMD, 0xb0);			/* ch2, lo/hi, mode 0, binary */
	outb(PIT_CH2, WINDOW_TICKS & 0xff);
	outb(PIT_CH2, WINDOW_TICKS >> 8);
	b = inb(PORT_B);
	outb(PORT_B, b | 0x01);			/* gate high: count starts */
	start = rdtsc();
	while (!(inb(PORT_B) & 0x20)) {
		/* A missing PIT would leave us here forever: give up after
		 * far more polls than 20 ms could ever take. */
		if (++spins > 200000000ul)
			return 0;
	}
	end = rdtsc();
	outb(PORT_B, inb(PORT_B) & ~0x01);
	return end - start;
}

void tsc_calibrate(void)
{
	uint32_t a, b, c, d, max_leaf;
	uint64_t best = ~0ull;

	cpuid(1, 0, &a, &b, &c, &d);
	if (!(d & (1u << 4)))
		hv_fail("this CPU has no time-stamp counter (CPUID.1:EDX.TSC); vmi-hv needs one");
	for (int i = 0; i < 3; i++) {
		uint64_t cycles = measure_window();

		if (cycles && cycles < best)
			best = cycles;
	}
	if (best == ~0ull)
		hv_panic("PIT channel 2 never finished counting: no PIT?");
	hz = udiv64(best * 1000, WINDOW_MS);
	log_info("TSC frequency %llu.%03llu MHz (measured against the PIT, %u ms window)",
		 udiv64(hz, 1000000), udiv64(hz, 1000) % 1000, WINDOW_MS);

	cpuid(0, 0, &max_leaf, &b, &c, &d);
	if (max_leaf >= 0x15) {
		cpuid(0x15, 0, &a, &b, &c, &d);
		if (a && b && c)
			log_info("CPUID.15h says TSC %llu Hz",
				 udiv64((uint64_t)c * b, a));
	}
}

uint64_t tsc_hz(void)
{
	return hz;
}

uint64_t tsc_to_us(uint64_t cycles)
{
	uint32_t per_us = (uint32_t)udiv64(hz, 1000000);

	return per_us ? udiv64(cycles, per_us) : 0;
}
