/*
 * valarm.c - the VMI time device of a guest: cycle counters and alarms.
 *
 * REAL counts the TSC at the frequency tsc.c measured; STOLEN the cycles
 * the vCPU was runnable while another ran (sched.c); AVAILABLE = REAL -
 * STOLEN, the time it ran or halted.  Each vCPU has its own valarm, and
 * in it each of REAL and AVAILABLE has one alarm, one-shot or periodic,
 * wired to the guest's IRQ0 (vCPU 0 only: the 8259 is its) or to the
 * vCPU's local APIC timer entry (LVTT: its vector, unless masked).  The vCPU
 * calls valarm_poll() before every guest entry and while the guest
 * halts, and arms the hypervisor's one-shot timer for valarm_next(), so
 * an alarm is late only by the time the timer interrupt takes to arrive.
 *
 * A guest chooses how often its alarms fire, and every one costs a timer
 * interrupt on whichever guest has the CPU then.  So the period and the
 * distance to the first expiry are at least VALARM_MIN_US, and while
 * IRQ0's request is still latched (masked, or the guest's interrupts
 * off) expiries wake nobody: their edge would be lost on an 8259 too;
 * so with the LVTT vector still requested or LVTT masked (valarm_latched()).
 */
#include "valarm.h"
#include "vpic.h"
#include "io.h"
#include "vmi_abi.h"
#include "timer.h"
#include "hvlib.h"

static uint64_t us_cycles(uint32_t us)
{
	return udiv64(tsc_hz() * us, 1000000);
}

void valarm_init(struct valarm *a, struct vpic *pic, struct vlapic *lapic)
{
	*a = (struct valarm){ .pic = pic, .lapic = lapic,
			      .lazy_slack = us_cycles(VALARM_LAZY_SLACK_US) };
}

/* Counter i's alarm expired: its IRQ0 or LVTT vector. */
static void raise(struct valarm *a, unsigned i)
{
	if (!a->alarms[i].lvtt) {
		if (valarm_latched(a, i))
			a->skipped++;
		vpic_pulse(a->pic, 0);
	} else if (vlapic_timer_requested(a->lapic)) {
		a->skipped++;
	} else if (!vlapic_timer_fire(a->lapic)) {
		a->masked++;
	}
}

bool valarm_counter(uint32_t which, const struct sched_entity *e, uint64_t now, uint64_t *val)
{
	switch (which) {
	case VMI_CYCLES_REAL:
		*val = now;
		return true;
	case VMI_CYCLES_AVAILABLE:
		*val = sched_available(e, now);
		return true;
	case VMI_CYCLES_STOLEN:
		*val = sched_stolen(e, now);
		return true;
	}
	return false;
}

/* A SetAlarm or CancelAlarm the guest got wrong: why, for its stop. */
static bool refused(struct rule_break *brk, const char *why)
{
	rule_break_note(brk, "%s", why);
	return false;
}

static uint64_t min_cycles(void)
{
	return udiv64(tsc_hz() * VALARM_MIN_US, 1000000);
}

bool valarm_set(struct valarm *a, uint32_t flags, uint64_t expiry, uint64_t period,
		const struct sched_entity *e, uint64_t now, bool *was_raised, struct rule_break *brk)
{
	uint32_t counter = flags & VMI_ALARM_COUNTER_MASK;
	uint64_t least = min_cycles(), at;

	if (counter >= VMI_ALARM_COUNTERS)
		return refused(brk, "SetAlarm: counter is not REAL or AVAILABLE");
	if (flags & ~(VMI_ALARM_COUNTER_MASK | VMI_ALARM_IS_PERIODIC | VMI_ALARM_WIRED_LVTT))
		return refused(brk, "SetAlarm: unknown flag bits");
	if (!(flags & VMI_ALARM_WIRED_LVTT) && !a->pic)
		return refused(brk, "SetAlarm: wired to IRQ0 on a vCPU other than 0 (the 8259 is vCPU 0's; wire it to LVTT)");
	if ((flags & VMI_ALARM_IS_PERIODIC) && !period)
		return refused(brk, "SetAlarm: periodic with period 0");
	valarm_counter(counter, e, now, &at);
	*was_raised = false;
	if ((flags & VMI_ALARM_IS_PERIODIC) && period < least) {
		period = least;
		*was_raised = true;
	}
	/* Wrap-safe: an expiry in the past or nearer than the minimum (a
	 * far-away one stays far away). */
	if (expiry < at || expiry - at < least) {
		expiry = at + least;
		*was_raised = true;
	}
	a->raised += *was_raised;
	a->alarms[counter].look = 0;
	a->alarms[counter].expiry = expiry;
	a->alarms[counter].period = (flags & VMI_ALARM_IS_PERIODIC) ? period : 0;
	a->alarms[counter].lvtt = flags & VMI_ALARM_WIRED_LVTT;
	a->alarms[counter].armed = true;
	a->changes++;
	return true;
}

bool valarm_cancel(struct valarm *a, uint32_t flags, struct rule_break *brk)
{
	uint32_t counter = flags & VMI_ALARM_COUNTER_MASK;
	bool was;

	if (counter >= VMI_ALARM_COUNTERS || (flags & ~VMI_ALARM_COUNTER_MASK)) {
		return refused(brk, "CancelAlarm: bad flags");
	}
	was = a->alarms[counter].armed;
	a->alarms[counter].armed = false;
	a->alarms[counter].look = 0;
	a->changes++;
	return was;
}

/*
 * A one-shot on counter i has just fired.  A guest that ticks sets the
 * next one in its handler, one interval later, and may do so without an
 * exit (docs/TIME.md, "Alarms set without an exit"); so the hypervisor
 * looks for it then: the last interval after this expiry, plus half the
 * slack, which covers the guest's jitter.  Only intervals of a tick's
 * length count (the minimum distance up to VALARM_LOOK_MAX_US); the
 * look is a timer interrupt at most per fired one-shot, never nearer
 * than the minimum distance.
 */
static void expect_next(struct valarm *a, unsigned i, uint64_t now)
{
	uint64_t fired = a->alarms[i].expiry, last = a->alarms[i].last_fired, interval, look;
	uint64_t before = a->alarms[i].last_interval;
	unsigned n = 0;

	a->alarms[i].last_fired = fired;
	a->alarms[i].look = 0;
	a->alarms[i].last_interval = 0;
	/* The ROM sets IRQ0's one-shots only (valarm_floor): after an LVTT
	 * one-shot there is nothing to look for. */
	if (!last || fired <= last || a->alarms[i].lvtt || !a->pic)
		return;
	interval = fired - last;
	if (interval < min_cycles() || interval > us_cycles(VALARM_LOOK_MAX_US))
		return;
	a->alarms[i].last_interval = interval;
	/* The shorter of the last two: a tick the guest skipped (it came
	 * late) makes one interval twice as long, and the next tick is one
	 * period after this one all the same. */
	if (before && before < interval)
		interval = before;
	/* A tick that fired late is followed by the first one still ahead
	 * (Linux forwards its tick timer over the periods it missed). */
	look = fired + interval;
	while (look <= now && ++n < 1000)
		look += interval;
	if (look <= now)
		return;
	a->alarms[i].look = look + us_cycles(VALARM_LAZY_SLACK_US / 2);
}

void valarm_set_lazy(struct valarm *a, unsigned counter, uint64_t expiry, uint64_t floor,
		     const struct sched_entity *e, uint64_t now)
{
	struct rule_break unused;
	bool raised;

	/* The ROM takes IRQ0-wired one-shots only, which reach vCPU 0
	 * alone; other vCPUs are published no floor (valarm_floor), and a
	 * value written there past the ROM is ignored. */
	if (!a->pic)
		return;
	a->lazy_taken++;
	if (expiry >= floor) {
		a->alarms[counter].look = 0;
		a->alarms[counter].expiry = expiry;
		a->alarms[counter].period = 0;
		a->alarms[counter].lvtt = false;
		a->alarms[counter].armed = true;
		a->changes++;
		return;
	}
	/* Not through the ROM (it makes the call for these): as the call,
	 * made now. */
	a->lazy_early++;
	valarm_set(a, counter, expiry, 0, e, now, &raised, &unused);	/* counter and flags are valid */
}

bool valarm_floors(const struct valarm *a, uint64_t floor[VMI_ALARM_COUNTERS])
{
	bool promised = false;

	for (unsigned c = 0; c < VMI_ALARM_COUNTERS; c++)
		floor[c] = UINT64_MAX;
	/* The ROM's one-shots are IRQ0's (vmi.S, fast_SetAlarm): none on a
	 * vCPU IRQ0 does not reach, and none while it is latched. */
	if (!a->pic || vpic_requested(a->pic, 0))
		return false;
	for (unsigned c = 0; c < VMI_ALARM_COUNTERS; c++) {
		uint64_t at;

		if (valarm_latched(a, c) || (a->alarms[c].armed && a->alarms[c].period))
			continue;	/* latched; periodic: the ROM's one-shots wait for none */
		if (a->alarms[c].armed)
			at = a->alarms[c].expiry;
		else if (a->alarms[c].look)
			at = a->alarms[c].look;
		else
			continue;
		floor[c] = at > a->lazy_slack ? at - a->lazy_slack : 0;
		promised = true;
	}
	return promised;
}

/*
 * A periodic alarm fired at expiry: one interrupt however many periods
 * passed (the guest counts elapsed time from REAL), the next expiry in
 * the future.  A period that takes it past 2^64 cycles (the guest's to
 * choose, up to 2^64-1) means never again: a wrapped sum would be in the
 * past, and the alarm due at every entry, without the minimum period.
 */
static uint64_t next_expiry(uint64_t expiry, uint64_t period, uint64_t now)
{
	unsigned n = 0;

	do {
		if (period > UINT64_MAX - expiry)
			return UINT64_MAX;
		expiry += period;
	} while (expiry <= now && ++n < 1000);
	if (expiry > now)
		return expiry;
	return period > UINT64_MAX - now ? UINT64_MAX : now + period;
}

bool valarm_poll(struct valarm *a, const struct sched_entity *e)
{
	uint64_t tsc = rdtsc();
	bool fired = false;

	for (unsigned i = 0; i < VMI_ALARM_COUNTERS; i++) {
		uint64_t now;

		if (!valarm_counter(i, e, tsc, &now))
			continue;
		if (!a->alarms[i].armed && a->alarms[i].look && now >= a->alarms[i].look) {
			a->alarms[i].look = 0;	/* the guest set nothing meanwhile */
			a->looks_unused++;
		}
		if (!a->alarms[i].armed || now < a->alarms[i].expiry)
			continue;
		raise(a, i);
		a->count++;
		if (now - a->alarms[i].expiry > a->max_late)
			a->max_late = now - a->alarms[i].expiry;
		a->sum_late += now - a->alarms[i].expiry;
		fired = true;
		if (!a->alarms[i].period) {
			a->alarms[i].armed = false;
			expect_next(a, i, now);
			continue;
		}
		a->alarms[i].expiry = next_expiry(a->alarms[i].expiry, a->alarms[i].period, now);
	}
	return fired;
}

bool valarm_armed(const struct valarm *a)
{
	for (unsigned i = 0; i < VMI_ALARM_COUNTERS; i++)
		if (a->alarms[i].armed)
			return true;
	return false;
}

uint64_t valarm_next(const struct valarm *a, const struct sched_entity *e, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	for (unsigned i = 0; i < VMI_ALARM_COUNTERS; i++) {
		uint64_t counter, at, when;

		if (valarm_latched(a, i))
			continue;

		/* A look (valarm_floor) is a time the hypervisor promised. */
		if (a->alarms[i].armed)
			when = a->alarms[i].expiry;
		else if (a->alarms[i].look)
			when = a->alarms[i].look;
		else
			continue;
		if (!valarm_counter(i, e, now, &counter))
			continue;
		/* REAL is the TSC; AVAILABLE advances at most as fast.  The
		 * expiry is the guest's: far away must not wrap to soon. */
		if (when <= counter)
			at = now;
		else if (when - counter > UINT64_MAX - now)
			at = UINT64_MAX;
		else
			at = now + (when - counter);
		if (at < next)
			next = at;
	}
	return next;
}

uint64_t valarm_mean_late_us(const struct valarm *a)
{
	return a->count ? tsc_to_us(udiv64(a->sum_late, (uint32_t)a->count)) : 0;
}
