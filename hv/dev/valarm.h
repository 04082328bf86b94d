/* valarm.h - the VMI time device: counters and alarms (valarm.c); one per
 * vCPU, each alarm wired to the guest's IRQ0 (vCPU 0 only) or to that
 * vCPU's local APIC timer vector (LVTT). */
#ifndef VMI_HV_VALARM_H
#define VMI_HV_VALARM_H

#include <stdint.h>
#include <stdbool.h>
#include "vpic.h"
#include "vlapic.h"
#include "vmi_abi.h"
#include "sched.h"
#include "rule_break.h"

/*
 * The least distance between an alarm's interrupts, and from SetAlarm to
 * the first one (docs/TIME.md, "Rates a guest controls"): a shorter period
 * or a nearer expiry is raised to this.  Every alarm costs the
 * hypervisor a timer interrupt, which lands on whichever guest runs.
 */
#define VALARM_MIN_US 100

/*
 * Alarms set without an exit (docs/TIME.md, "Alarms set without an exit"):
 * the ROM leaves a one-shot expiry in the shared page when it is no
 * earlier than the time the hypervisor looks at the guest anyway, less
 * this slack; so such an alarm fires at most this late.  After a
 * one-shot fires, the hypervisor expects the next one an interval as
 * long as the last one later, and looks then, VALARM_LAZY_SLACK_US / 2
 * past it (the guest's next expiry jitters around it by a few us).
 */
#define VALARM_LAZY_SLACK_US 100
/* The longest interval between one-shots that makes the hypervisor look
 * for the next one (a guest's tick; 1 s is HZ=1). */
#define VALARM_LOOK_MAX_US 1000000

struct valarm {
	struct vpic *pic;	/* IRQ0's: the guest's vPIC for vCPU 0, else none */
	struct vlapic *lapic;	/* its vCPU's local APIC (LVTT) */
	struct {
		bool armed;
		bool lvtt;	/* wired to the LVT timer, not IRQ0 */
		uint64_t expiry, period;	/* period 0: one-shot */
		/* Not armed: when the hypervisor looks for an alarm the guest
		 * may have set without an exit (0: it does not); the last
		 * one-shot expiry that fired, which that guess comes from. */
		uint64_t look, last_fired, last_interval;
	} alarms[VMI_ALARM_COUNTERS];
	uint64_t lazy_slack;	/* VALARM_LAZY_SLACK_US in TSC cycles (valarm_floors) */
	uint64_t lazy_taken;	/* one-shots set in the shared page, taken at an exit */
	uint64_t lazy_early;	/* of them, before the published floor (raised as a call) */
	uint64_t looks_unused;	/* looks that found no alarm set meanwhile */
	/* SetAlarm and CancelAlarm calls: the run loop re-arms its timer
	 * after an exit that changed this. */
	uint64_t changes;
	uint64_t count;		/* alarm interrupts raised */
	uint64_t max_late;	/* cycles from expiry to our noticing, worst seen */
	uint64_t sum_late;	/* and summed, for the mean */
	uint64_t raised;	/* SetAlarm calls whose period or expiry was raised */
	bool period_raise_said;	/* a period below the minimum logged (once) */
	uint64_t skipped;	/* expiries that found their IRQ0 or LVTT vector already requested */
	uint64_t masked;	/* LVTT-wired expiries that found LVTT masked */
	/* Cycles of another guest's exits spent on these alarms, charged
	 * to this guest (run.c, charge_alarm_work). */
	uint64_t charged;
};

/* pic: 0 for a vCPU that IRQ0 does not reach (all but vCPU 0). */
void valarm_init(struct valarm *a, struct vpic *pic, struct vlapic *lapic);
/* GetCycleCounter(which) at now for the vCPU whose time e accounts:
 * REAL is the TSC, STOLEN the cycles it was runnable but not running,
 * AVAILABLE = REAL - STOLEN.  false for an unknown counter. */
bool valarm_counter(uint32_t which, const struct sched_entity *e, uint64_t now, uint64_t *val);
/* SetAlarm at TSC time now for the vCPU whose time e accounts; false,
 * with why in *brk, if the arguments are invalid (IRQ0 wiring without a
 * pic among them).  A period or an expiry distance below VALARM_MIN_US is
 * raised to it (counted in raised; *was_raised says). */
bool valarm_set(struct valarm *a, uint32_t flags, uint64_t expiry, uint64_t period,
		const struct sched_entity *e, uint64_t now, bool *was_raised, struct rule_break *brk);
/* A one-shot on counter (REAL or AVAILABLE) that the guest left in the
 * shared page, taken at an exit, now the TSC then; floor is what was
 * published for it.  An expiry at or after the floor is armed as it is
 * (the hypervisor looked by then, so it costs no timer interrupt of its
 * own); an earlier one is SetAlarm made at this exit (raised to the
 * minimum distance from now). */
void valarm_set_lazy(struct valarm *a, unsigned counter, uint64_t expiry, uint64_t floor,
		     const struct sched_entity *e, uint64_t now);
/* Per counter, the least one-shot expiry the ROM may set without an exit:
 * the time the hypervisor looks anyway (its armed one-shot, or the look
 * it expects after one fired) less the slack; UINT64_MAX when it will not
 * look (nothing armed, IRQ0 latched: valarm_next) or the counter has a
 * periodic alarm (whose timer the run loop keeps as before).  Returns
 * whether any is not UINT64_MAX (a promise to look).  Asked before every
 * entry: no division, no call. */
bool valarm_floors(const struct valarm *a, uint64_t floor[VMI_ALARM_COUNTERS]);
/* CancelAlarm: whether an alarm was armed; bad flags noted in *brk
 * (rule_broken then says so). */
bool valarm_cancel(struct valarm *a, uint32_t flags, struct rule_break *brk);
/* Raise IRQ0 or the LVTT vector for every expired alarm (an AVAILABLE
 * alarm against e's available time); true if one fired. */
bool valarm_poll(struct valarm *a, const struct sched_entity *e);
bool valarm_armed(const struct valarm *a);
/* How late the alarms fired so far were, on average, in microseconds. */
uint64_t valarm_mean_late_us(const struct valarm *a);
/* The earliest TSC time at which an armed alarm can fire, for the vCPU
 * whose time e accounts; UINT64_MAX when none is armed, or while each
 * armed one's IRQ0 or LVTT vector is still requested (another edge would change
 * nothing, so no timer interrupt is spent on it).  An AVAILABLE alarm is
 * placed as if the vCPU kept all its time from now on (it can only come
 * later), so waking then is never too late. */
uint64_t valarm_next(const struct valarm *a, const struct sched_entity *e, uint64_t now);
/* Would counter i's expiry change nothing now?  IRQ0 still requested
 * (masked in the vPIC, or the guest's interrupts off): another edge adds
 * nothing, as on an 8259.  The LVT timer masked, or its vector still
 * requested: nothing is delivered.  Such an alarm costs no timer
 * interrupt (valarm_next); unmasking or taking the vector ends it, and
 * an exit that does so makes the run loop re-arm its timer, so an expiry
 * that passed meanwhile fires then, once.  Inline, as the next: asked
 * several times an exit. */
static inline bool valarm_latched(const struct valarm *a, unsigned i)
{
	if (a->alarms[i].lvtt)
		return vlapic_timer_latched(a->lapic);
	return a->pic && vpic_requested(a->pic, 0);
}
/* What valarm_next() depends on besides the alarms and the clock, as a
 * bit per counter (its IRQ0 or LVTT vector still requested): the run
 * loop re-arms its timer after an exit that changed it. */
static inline unsigned valarm_irq_latched(const struct valarm *a)
{
	unsigned bits = 0;

	for (unsigned i = 0; i < VMI_ALARM_COUNTERS; i++)
		bits |= (unsigned)valarm_latched(a, i) << i;
	return bits;
}

#endif
