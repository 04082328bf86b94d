/*
 * valarm.c - the VMI time device of one vCPU: cycle counters and alarms.
 *
 * REAL counts the TSC at the frequency tsc.c measured; AVAILABLE = REAL
 * (one vCPU, nothing else runs); STOLEN = 0.  Each of REAL and AVAILABLE
 * has one alarm, one-shot or periodic, wired to the guest's IRQ0 (the
 * local APIC timer wiring is refused: there is no virtual APIC).  The vCPU
 * calls valarm_poll() before every guest entry and while the guest
 * halts; the hypervisor tick (1 kHz) bounds how late an alarm can be.
 */
#include "valarm.h"
#include "vpic.h"
#include "io.h"
#include "vmi_abi.h"

static struct {
	bool armed;
	uint64_t expiry, period;	/* period 0: one-shot */
} alarms[VMI_ALARM_COUNTERS];

uint64_t valarm_count;
uint64_t valarm_max_late;	/* cycles from expiry to our noticing, worst seen */

bool valarm_counter(uint32_t which, uint64_t *val)
{
	switch (which) {
	case VMI_CYCLES_REAL:
	case VMI_CYCLES_AVAILABLE:
		*val = rdtsc();
		return true;
	case VMI_CYCLES_STOLEN:
		*val = 0;
		return true;
	}
	return false;
}

const char *valarm_set(uint32_t flags, uint64_t expiry, uint64_t period)
{
	uint32_t counter = flags & VMI_ALARM_COUNTER_MASK;

	if (counter >= VMI_ALARM_COUNTERS)
		return "SetAlarm: counter is not REAL or AVAILABLE";
	if (flags & VMI_ALARM_WIRED_LVTT)
		return "SetAlarm: wired to the local APIC timer, which this vCPU does not have";
	if (flags & ~(VMI_ALARM_COUNTER_MASK | VMI_ALARM_IS_PERIODIC))
		return "SetAlarm: unknown flag bits";
	if ((flags & VMI_ALARM_IS_PERIODIC) && !period)
		return "SetAlarm: periodic with period 0";
	alarms[counter].expiry = expiry;
	alarms[counter].period = (flags & VMI_ALARM_IS_PERIODIC) ? period : 0;
	alarms[counter].armed = true;
	return 0;
}

bool valarm_cancel(uint32_t flags, const char **why)
{
	uint32_t counter = flags & VMI_ALARM_COUNTER_MASK;
	bool was;

	if (counter >= VMI_ALARM_COUNTERS || (flags & ~VMI_ALARM_COUNTER_MASK)) {
		*why = "CancelAlarm: bad flags";
		return false;
	}
	*why = 0;
	was = alarms[counter].armed;
	alarms[counter].armed = false;
	return was;
}

bool valarm_poll(void)
{
	uint64_t now = rdtsc();
	bool fired = false;

	for (unsigned i = 0; i < VMI_ALARM_COUNTERS; i++) {
		if (!alarms[i].armed || now < alarms[i].expiry)
			continue;
		vpic_pulse(0);
		valarm_count++;
		if (now - alarms[i].expiry > valarm_max_late)
			valarm_max_late = now - alarms[i].expiry;
		fired = true;
		if (!alarms[i].period) {
			alarms[i].armed = false;
			continue;
		}
		/* One interrupt however many periods passed (the guest counts
		 * elapsed time from REAL); next expiry in the future. */
		unsigned n = 0;
		do
			alarms[i].expiry += alarms[i].period;
		while (alarms[i].expiry <= now && ++n < 1000);
		if (alarms[i].expiry <= now)
			alarms[i].expiry = now + alarms[i].period;
	}
	return fired;
}

bool valarm_armed(void)
{
	for (unsigned i = 0; i < VMI_ALARM_COUNTERS; i++)
		if (alarms[i].armed)
			return true;
	return false;
}
