/* valarm.h - the VMI time device: counters and alarms (valarm.c). */
#ifndef VMI_HV_VALARM_H
#define VMI_HV_VALARM_H

#include <stdint.h>
#include <stdbool.h>

extern uint64_t valarm_count;	/* alarm interrupts raised */
extern uint64_t valarm_max_late;	/* worst lateness seen, TSC cycles */

/* GetCycleCounter(which); false for an unknown counter. */
bool valarm_counter(uint32_t which, uint64_t *val);
/* SetAlarm; 0, or why the arguments are invalid. */
const char *valarm_set(uint32_t flags, uint64_t expiry, uint64_t period);
/* CancelAlarm: whether an alarm was armed; *why set on bad flags. */
bool valarm_cancel(uint32_t flags, const char **why);
/* Raise IRQ0 for every expired alarm; true if one fired. */
bool valarm_poll(void);
bool valarm_armed(void);

#endif
