/*
 * guest_restart.h - a rebooted guest started again from its modules
 * (guest_restart.c), and a guest's start, for the run loop.
 */
#ifndef VMI_HV_GUEST_RESTART_H
#define VMI_HV_GUEST_RESTART_H

#include <stdbool.h>

struct guest;

/* A guest's devices in their power-on state and its vCPUs' clocks
 * started; its console lines labelled when there are several. */
void guest_start(struct guest *g, bool several);

/* The guest, whose reboot has been reported, as its load left it: fresh
 * memory from its modules, a new ROM copy, its budget and counters from
 * zero, its vCPUs at the kernel's entry.  The run loop then starts it
 * and gives its vCPUs back to the scheduler.  Under the guest's lock
 * alone (the guest GUEST_RESTARTING), sched_lock not held. */
void guest_restart(struct guest *g);

#endif
