/*
 * run_loop.h - the run loop's state, for run.c and the two-guest selftest
 * (run_selftest.c), which drives the same run_step() one guest at a time.
 */
#ifndef VMI_HV_RUN_LOOP_H
#define VMI_HV_RUN_LOOP_H

#include <stdint.h>
#include "guest.h"
#include "sched.h"
#include "console_keys.h"

struct run {
	struct guest **guests;
	unsigned n;
	struct sched sched;
	struct console_keys keys;
	struct guest *last_ended;
	/* The vCPU whose last exit left the loop nothing to decide
	 * (quiet_exit): entered again at once. */
	struct vcpu *again;
	/* The vCPU that made the last exit (charge_alarm_work). */
	struct vcpu *ran;
};

/* A guest's devices in their power-on state and its vCPUs' clocks
 * started; its console lines labelled when there are several. */
void run_start(struct guest *g, bool several);
/* A run of guests already started, each in the scheduler, with slices
 * of slice_us. */
void run_init(struct run *r, struct guest **guests, unsigned n, uint32_t slice_us);
/* One turn of the loop (run.c has the whole story). */
void run_step(struct run *r);

#endif
