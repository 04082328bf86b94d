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
#include "spinlock.h"

/*
 * hv_lock: the one lock of the run loops (docs/ARCHITECTURE.md, "Who owns
 * what on several CPUs").  A CPU holds it whenever it runs hypervisor
 * code for the guests: from an exit to the next entry, through polls,
 * scheduling and reports; it lets go only inside the guest (vcpu.c, around
 * switch_to_guest) and while it idles.  Guests run in parallel; their
 * exits are handled one at a time.
 */
extern struct spinlock hv_lock;

/* What one CPU's loop keeps between turns. */
struct run_cpu {
	/* The vCPU whose last exit left the loop nothing to decide
	 * (quiet_exit): entered again at once. */
	struct vcpu *again;
	/* The vCPU that made the last exit (charge_alarm_work). */
	struct vcpu *ran;
	/* Told to look at the queue (an IPI sent, not yet looked). */
	bool kicked;
};

struct run {
	struct guest **guests;
	unsigned n;
	struct sched sched;
	struct console_keys keys;
	struct guest *last_ended;
	unsigned ncpus;			/* the CPUs running this loop */
	struct run_cpu cpu[HV_MAX_CPUS];
};

/* A guest's devices in their power-on state and its vCPUs' clocks
 * started; its console lines labelled when there are several. */
void run_start(struct guest *g, bool several);
/* A run of guests already started, each in the scheduler, with slices
 * of slice_us. */
void run_init(struct run *r, struct guest **guests, unsigned n, uint32_t slice_us);
/* One turn of this CPU's loop, with hv_lock held (run.c has the whole
 * story). */
void run_step(struct run *r);

#endif
