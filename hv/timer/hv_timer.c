/*
 * hv_timer.c - the hypervisor's own periodic interrupt: PIT channel 0 in
 * rate-generator mode at HV_TICK_HZ on IRQ0.  It counts, and brings a
 * halted vCPU back to poll its devices; a vCPU scheduler would hang off
 * it.
 */
#include "timer.h"
#include "io.h"
#include "x86.h"
#include "pic.h"
#include "traps.h"
#include "segments.h"
#include "console.h"
#include "stop.h"

#define PIT_CH0  0x40
#define PIT_CMD  0x43

static volatile uint64_t ticks;

static void tick(void)
{
	ticks++;
}

uint64_t hv_ticks(void)
{
	uint64_t t;

	/* 64-bit read, not atomic on i386: read with IRQs off. */
	uint32_t flags = read_eflags();
	irq_disable();
	t = ticks;
	if (flags & X86_EFLAGS_IF)
		irq_enable();
	return t;
}

void hv_timer_start(void)
{
	uint32_t divisor = (PIT_HZ + HV_TICK_HZ / 2) / HV_TICK_HZ;

	irq_set_handler(HV_IRQ_TIMER, tick);
	outb(PIT_CMD, 0x34);		/* ch0, lo/hi, mode 2, binary */
	outb(PIT_CH0, divisor & 0xff);
	outb(PIT_CH0, divisor >> 8);
	pic_unmask(HV_IRQ_TIMER);
}

/* Wait for 100 ms of ticks and compare with the TSC: proves IRQ0 is wired, the
 * PIC passes it, and the tick rate is what we programmed. */
void hv_timer_check(void)
{
	const uint64_t want = HV_TICK_HZ / 10;	/* 100 ms worth */
	uint64_t t0, c0, c1, limit = tsc_hz() * 2;

	/* Busy-wait, not hlt: if IRQ0 never came, hlt would never return. */
	c0 = rdtsc();
	t0 = hv_ticks();
	while (hv_ticks() == t0)	/* start on a tick edge */
		if (rdtsc() - c0 > limit)
			hv_panic("timer interrupt (IRQ0) is not arriving");
		else
			cpu_relax();
	t0 = hv_ticks();
	c0 = rdtsc();
	while (hv_ticks() - t0 < want) {
		if (rdtsc() - c0 > limit)
			hv_panic("timer interrupt (IRQ0) too slow: %llu ticks in 2 s",
				 hv_ticks() - t0);
		cpu_relax();
	}
	c1 = rdtsc();
	/* Only a warning: under emulation on a busy host, ticks come late. */
	if (tsc_to_us(c1 - c0) < 50000 || tsc_to_us(c1 - c0) > 200000)
		log_warn("hypervisor timer: %llu ticks took %llu us, expected about 100000",
			 want, tsc_to_us(c1 - c0));
	log_info("hypervisor timer: IRQ0 at %u Hz; %llu ticks took %llu us by the TSC",
		 HV_TICK_HZ, want, tsc_to_us(c1 - c0));
}

void hv_sleep_ms(uint32_t ms)
{
	uint64_t end = hv_ticks() + (ms * HV_TICK_HZ + 999) / 1000;

	while (hv_ticks() < end)
		__asm__ volatile("hlt");
}
