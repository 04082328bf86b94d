/*
 * run_internal.h - the run loop's state, inside the loop: run.c, its work
 * across CPUs (smp/run_smp.c) and on guests that end (smp/run_reap.c), and
 * the two-guest selftest (run_selftest.c), which drives the same run_step()
 * one guest at a time.  What the rest of the hypervisor calls is run.h.
 */
#ifndef VMI_HV_RUN_INTERNAL_H
#define VMI_HV_RUN_INTERNAL_H

#include <stdint.h>
#include "guest.h"
#include "sched.h"
#include "console_keys.h"
#include "spinlock.h"

/*
 * sched_lock: the scheduler queue and struct run (docs/ARCHITECTURE.md,
 * "Who owns what on several CPUs").  A CPU holds it while its loop
 * decides: polls, wake-ups, the pick, reports of guests that ended, the
 * console's commands; under it the loop takes one guest's lock at a time
 * to reach that guest's devices.  It lets go to run a vCPU (run_vcpu:
 * the entry and the exit handling hold the guest's lock alone) and while
 * it idles.  Exit handling never takes it.
 */
extern struct spinlock sched_lock;

/* What one CPU's loop keeps between turns. */
/* How soon a loop that passed over a busy guest looks again (run.c). */
#define RUN_RETRY_US 100

struct run_cpu {
	/* The vCPU that made the last exit (charge_alarm_work). */
	struct vcpu *ran;
	/* The vCPU this CPU's scheduler turn picked last, entered or not:
	 * its guest may die before this CPU takes the guest's lock, and it
	 * must still leave the scheduler here (after_death). */
	struct vcpu *picked;
	/* Told to look at the queue (an IPI sent, not yet looked). */
	bool kicked;
	/* This turn passed over a guest whose lock was busy and that has a
	 * vCPU at home here (alarms, console, wake-up): the loop comes round
	 * again soon (RUN_RETRY_US) to look at it. */
	bool retry;
};

struct run {
	struct guest **guests;
	unsigned n;
	struct sched sched;
	struct console_keys keys;
	struct guest *last_ended;
	/* How long a reap held sched_lock, at most (TSC cycles), and since
	 * when the reap now running holds it; shown after each guest's end
	 * (run_reap.c).  Under sched_lock. */
	uint64_t reap_hold_max, reap_held_since;
	unsigned ncpus;			/* the CPUs running this loop */
	struct run_cpu cpu[HV_MAX_CPUS];
};

/* A run of guests already started, each in the scheduler, with slices
 * of slice_us. */
void run_init(struct run *r, struct guest **guests, unsigned n, uint32_t slice_us);
/* One turn of this CPU's loop, with sched_lock held (run.c has the whole
 * story). */
void run_step(struct run *r);

/* The loop's work across CPUs (run_smp.c). */
/* Tell CPU k to look at the queue, once until it has looked. */
void run_kick(struct run *r, int k);
/* g's lock if it is free (true, held); a busy one is a CPU in g's exit. */
bool run_try_guest(struct run *r, struct guest *g);
/* Interrupts off: the alarms and console lines at home here. */
void run_poll_devices(struct run *r, struct vcpu *ran);
/* A vCPU running on another CPU with an interrupt to take is kicked. */
void run_kick_for_interrupts(struct run *r);
/* The timer armed for the next event this CPU must see. */
void run_arm_next_event(struct run *r, uint64_t now);
/* Halted vCPUs with an interrupt to take become runnable again. */
void run_wake_halted(struct run *r, uint64_t now);

/* Guests that end, reboot or are yet to start (run_reap.c). */
/* A vCPU its guest has yet to start waits halted. */
void run_park_unstarted(struct run *r, struct vcpu *v);
/* Its guest's CPUs and vcpus_at_once in its scheduler entity. */
void run_place(struct vcpu *v);
bool run_any_alive(const struct run *r);
/* Report the guests that died since the last look (run_unreaped). */
void run_reap(struct run *r);
bool run_unreaped(const struct run *r);
/* Back in the loop from a guest's death (run_jmp). */
void run_after_death(struct run *r);
/* No guest left: end the hypervisor, or stay on the console. */
__attribute__((noreturn)) void run_no_guest_left(struct run *r);

#endif
