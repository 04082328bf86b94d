/*
 * tsc.c - the time base: the TSC, its frequency measured against the PIT.
 *
 * PIT channel 2 counts down once in mode 0 with its gate under our
 * control (port 0x61 bit 0) and its output readable (port 0x61 bit 5):
 * a clean, interrupt-free stopwatch of known length.  We time 20 ms
 * windows with the TSC until three are clean (known to within 0.1%: a
 * longer reading only means we were late to notice the end, an SMI or a
 * host hiccup under emulation) and take their median.  Three, not more:
 * every window is 20 ms of everyone's boot.  CPUID leaf 0x15, when the CPU has it, is shown for
 * comparison.
 */
#include "tsc.h"
#include "io.h"
#include "hvlib.h"

#define PIT_CH2     0x42
#define PIT_CMD     0x43
#define PORT_B      0x61
#define WINDOW_MS   20u
#define WINDOW_TICKS (PIT_HZ * WINDOW_MS / 1000)	/* 23863, fits 16 bits */

static uint64_t hz, per_ms;	/* cycles per second, per millisecond */

/*
 * One window.  Every PIT poll is bracketed by TSC reads, so we know the
 * window's start and end each to within one poll; a window whose
 * brackets are wide (we were interrupted, or the host descheduled the
 * emulator in the middle) is reported unusable by returning 0.
 */
static uint64_t measure_window(uint64_t *uncertainty)
{
	uint64_t start_lo, start_hi, low_seen = 0, high_seen, now, cycles;
	unsigned long spins = 0;
	uint8_t b;

	b = inb(PORT_B);
	outb(PORT_B, (b & ~0x02) & ~0x01);	/* gate low, speaker off */
	outb(PIT_CMD, 0xb0);			/* ch2, lo/hi, mode 0, binary */
	outb(PIT_CH2, WINDOW_TICKS & 0xff);
	start_lo = rdtsc();
	outb(PIT_CH2, WINDOW_TICKS >> 8);	/* counting starts here */
	outb(PORT_B, (b & ~0x02) | 0x01);	/* gate high */
	start_hi = rdtsc();
	for (;;) {
		now = rdtsc();
		if (inb(PORT_B) & 0x20)
			break;
		low_seen = now;
		/* A missing PIT would keep us here forever: give up after far
		 * more polls than 20 ms could take. */
		if (++spins > 100000000ul)
			return 0;
	}
	high_seen = rdtsc();
	outb(PORT_B, inb(PORT_B) & ~0x01);
	if (!low_seen)
		return 0;
	/* The window ended after low_seen and before high_seen. */
	cycles = (low_seen + high_seen) / 2 - (start_lo + start_hi) / 2;
	*uncertainty = (high_seen - low_seen) + (start_hi - start_lo);
	return cycles;
}

/* A leaf of the boot: it reports, and main.c speaks and stops. */
enum tsc_result tsc_calibrate(struct tsc_calibration *r)
{
	uint32_t a, b, c, d, max_leaf;
	uint64_t samples[3], best_unc = ~0ull, best = 0;
	unsigned n = 0, tries;

	*r = (struct tsc_calibration){ .window_ms = WINDOW_MS };
	cpuid(1, 0, &a, &b, &c, &d);
	if (!(d & (1u << 4)))
		return TSC_NONE;
	/* Keep windows known to within 0.1%; up to 40 tries for 3 of them. */
	for (tries = 0; tries < 40 && n < ARRAY_SIZE(samples); tries++) {
		uint64_t unc = 0, cycles = measure_window(&unc);

		if (!cycles)
			continue;
		if (unc < best_unc) {
			best_unc = unc;
			best = cycles;
		}
		if (unc * 1000 <= cycles)
			samples[n++] = cycles;
	}
	r->tries = tries;
	r->clean = n;
	if (!best)
		return TSC_NO_PIT;
	if (n) {
		/* Median of the clean windows. */
		for (unsigned i = 1; i < n; i++)
			for (unsigned j = i; j && samples[j - 1] > samples[j]; j--) {
				uint64_t t = samples[j];

				samples[j] = samples[j - 1];
				samples[j - 1] = t;
			}
		best = samples[n / 2];
	}
	hz = udiv64(best * 1000, WINDOW_MS);
	per_ms = udiv64(hz, 1000);
	r->hz = hz;

	cpuid(0, 0, &max_leaf, &b, &c, &d);
	if (max_leaf >= 0x15) {
		cpuid(0x15, 0, &a, &b, &c, &d);
		if (a && b && c)
			r->cpuid_hz = udiv64((uint64_t)c * b, a);
	}
	return TSC_OK;
}

uint64_t tsc_hz(void)
{
	return hz;
}

uint64_t tsc_per_ms(void)
{
	return per_ms;
}

uint64_t tsc_to_us(uint64_t cycles)
{
	uint32_t per_us = (uint32_t)udiv64(hz, 1000000);

	return per_us ? udiv64(cycles, per_us) : 0;
}

/* Written once, before the other CPUs start. */
static uint64_t start;

void tsc_mark_start(void)
{
	start = rdtsc();
}

uint64_t tsc_at_start(void)
{
	return start;
}
