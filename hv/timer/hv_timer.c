/*
 * hv_timer.c - the hypervisor's own timer, one-shot, programmed for the
 * next event the run loop names (the nearest guest alarm or the end of a
 * time slice) instead of ticking at a fixed rate.  An idle guest then
 * costs only the interrupts its own alarms need.
 *
 * Two devices can serve:
 *   - the local APIC timer (lapic.c), 32 bits at its measured rate: a
 *     shot can wait over a minute.  Used when the CPU has a local APIC.
 *   - PIT channel 0 in mode 0 ("interrupt on terminal count") on IRQ0, the
 *     fallback: 16 bits at 1.193182 MHz, so a shot lasts at most 54.9 ms
 *     and an event further away takes intermediate interrupts, which
 *     only bring the run loop round to re-arm.
 * Writing a new count restarts either of them without an interrupt for
 * the old deadline.
 */
#include "timer.h"
#include "hvlib.h"
#include "io.h"
#include "x86.h"
#include "pic.h"
#include "traps.h"
#include "segments.h"
#include "log.h"
#include "stop.h"
#include "lapic.h"
#include "pcpu.h"

#define PIT_CH0  0x40
#define PIT_CMD  0x43
#define PIT_CH0_ONESHOT 0x30	/* channel 0, lo/hi byte, mode 0, binary */
#define PIT_MAX_COUNT   0xffffu

/* The deadline (TSC) the PIT is counting down to; NO_DEADLINE when it is
 * not counting (it fired, or was never armed). */
/* Each CPU arms its own local APIC timer; what is armed and the counts
 * are per CPU (struct pcpu: timer_deadline, 0 for none). */
static bool use_lapic;
static uint32_t lapic_hz;

static void timer_irq(void)
{
	struct pcpu *c = this_pcpu();

	c->timer_interrupts++;
	c->timer_deadline = 0;
}

static void use_pit(void)
{
	use_lapic = false;
	irq_set_handler(HV_IRQ_TIMER, timer_irq);
	pic_unmask(HV_IRQ_TIMER);
}

static void lapic_timer_irq(void)
{
	timer_irq();
	lapic_eoi();
}

/* Read a 64-bit counter the IRQ handler writes, with IRQs off (not atomic
 * on i386). */
static uint64_t read_counter(const volatile uint64_t *p)
{
	uint32_t flags = read_eflags();
	uint64_t v;

	irq_disable();
	v = *p;
	if (flags & X86_EFLAGS_IF)
		irq_enable();
	return v;
}

/* Over every CPU. */
uint64_t hv_timer_interrupts(void)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < HV_NR_PCPUS; i++)
		n += read_counter(&pcpus[i].timer_interrupts);
	return n;
}

uint64_t hv_timer_arms(void)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < HV_NR_PCPUS; i++)
		n += read_counter(&pcpus[i].timer_arms);
	return n;
}

static void pit_oneshot(uint32_t count)
{
	outb(PIT_CMD, PIT_CH0_ONESHOT);
	outb(PIT_CH0, count & 0xff);
	outb(PIT_CH0, (count >> 8) & 0xff);
}

/* PIT counts for `cycles` of the TSC, rounded up (firing early would only
 * cost a second interrupt), 1..PIT_MAX_COUNT.  Through microseconds, so
 * that no division needs the TSC rate to fit 32 bits. */
static uint32_t pit_count_for(uint64_t cycles)
{
	uint64_t us = tsc_to_us(cycles) + 1;
	uint64_t count;

	if (us >= udiv64((uint64_t)PIT_MAX_COUNT * 1000000, PIT_HZ))
		return PIT_MAX_COUNT;
	count = udiv64(us * PIT_HZ + 999999, 1000000);
	return count ? (uint32_t)count : 1;
}

/* Local APIC counts for `cycles` of the TSC, rounded up, 1..UINT32_MAX. */
static uint32_t lapic_count_for(uint64_t cycles)
{
	uint64_t us = tsc_to_us(cycles) + 1, count;

	if (us >= udiv64((uint64_t)UINT32_MAX * 1000000, lapic_hz))
		return UINT32_MAX;
	count = udiv64(us * lapic_hz + 999999, 1000000);
	return count ? (uint32_t)count : 1;
}

void hv_timer_arm(uint64_t deadline)
{
	uint64_t now, left;

	/* Called with interrupts off.  A shot already due at or before the
	 * deadline will bring the loop round in time: leave it. */
	struct pcpu *c = this_pcpu();

	if (c->timer_deadline && deadline >= c->timer_deadline)
		return;
	now = rdtsc();
	left = deadline > now ? deadline - now : 0;
	if (use_lapic)
		lapic_timer_oneshot(lapic_count_for(left));
	else
		pit_oneshot(pit_count_for(left));
	c->timer_deadline = deadline ? deadline : 1;
	c->timer_arms++;
}

/* The local APIC timer where there is one, else the PIT. */
bool hv_timer_per_cpu(void)
{
	return use_lapic;
}

void hv_timer_start(void)
{
	const char *why = 0;
	uint64_t hz = 0;

	use_lapic = lapic_init(&why) && lapic_timer_calibrate(&hz, &why);
	if (use_lapic && hz > UINT32_MAX) {
		use_lapic = false;
		why = "the local APIC timer counts faster than 4 GHz";
	}
	if (use_lapic) {
		lapic_hz = (uint32_t)hz;
		local_vector_set_handler(HV_LOCAL_TIMER_VECTOR, lapic_timer_irq);
		return;
	}
	log_info("hypervisor timer: the PIT, at most 54.9 ms a shot: %s", why);
	use_pit();
}

/* Arm one shot of shot_us and busy-wait for it (not hlt: if the interrupt
 * never came, hlt would never return); false after 2 s without it. */
static bool shot_arrives(uint64_t shot_us, uint64_t *took_us)
{
	uint64_t before = hv_timer_interrupts(), c0, limit = tsc_hz() * 2;

	irq_disable();
	this_pcpu()->timer_deadline = 0;
	c0 = rdtsc();
	hv_timer_arm(c0 + udiv64(tsc_hz() * shot_us, 1000000));
	irq_enable();
	while (hv_timer_interrupts() == before) {
		if (rdtsc() - c0 > limit)
			return false;
		cpu_relax();
	}
	*took_us = tsc_to_us(rdtsc() - c0);
	return true;
}

/* One 10 ms shot, timed by the TSC: proves the interrupt is wired and the
 * timer counts at the rate we assume.  A local APIC timer whose shot
 * does not come is given up for the PIT (seen once under heavy host
 * load); a PIT whose shot does not come stops the hypervisor. */
void hv_timer_check(void)
{
	const uint64_t shot_us = 10000;
	uint64_t took = 0;

	if (!shot_arrives(shot_us, &took)) {
		if (!use_lapic)
			hv_panic("the hypervisor timer's interrupt (PIT, IRQ0) is not arriving");
		log_warn("hypervisor timer: the local APIC timer (calibrated at %u kHz) did not fire within 2 s of a %llu us shot; using the PIT instead",
			 lapic_hz / 1000, (unsigned long long)shot_us);
		lapic_timer_oneshot(0);
		use_pit();
		if (!shot_arrives(shot_us, &took))
			hv_panic("the hypervisor timer's interrupt (PIT, IRQ0) is not arriving either");
	}
	/* Only a warning: under emulation on a busy host, interrupts come late. */
	if (took < shot_us / 2 || took > shot_us * 2)
		log_warn("hypervisor timer: a %llu us shot took %llu us by the TSC",
			 (unsigned long long)shot_us, (unsigned long long)took);
	if (use_lapic)
		log_info("hypervisor timer: one-shot local APIC timer at %u kHz, armed for the next event; a %llu us shot took %llu us by the TSC",
			 lapic_hz / 1000, (unsigned long long)shot_us, (unsigned long long)took);
	else
		log_info("hypervisor timer: one-shot IRQ0 (PIT mode 0), armed for the next event; a %llu us shot took %llu us by the TSC",
			 (unsigned long long)shot_us, (unsigned long long)took);
}

uint64_t hv_uptime_ms(void)
{
	return udiv64(tsc_to_us(rdtsc()), 1000);
}
