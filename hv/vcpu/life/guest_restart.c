/*
 * guest_restart.c - a guest that rebooted starts again, alone, while the
 * others run on (docs/HV.md, "Power-off and reboot").
 *
 * The guest's end has been reported and its run-time frames given back
 * (guest_report_end).  What it had from its load it keeps: its memory,
 * its record and its vCPUs' frames.  Everything it could have changed is
 * made new: its memory zeroed and loaded again from its modules with a
 * new ROM copy (guest_reload), its frame budget back at what the load
 * charged (no peak, no refusals), its shadows, audit, devices and
 * counters from zero, its vCPUs built again at the boot protocol's entry.
 * The run loop then starts it (guest_start, as at the first start) and
 * puts its vCPUs back in the scheduler, where it is alive again
 * (run_reap.c).  All of it under the guest's lock alone, the guest
 * restarting (GUEST_RESTARTING): sched_lock is not held.
 */
#include "vcpu.h"
#include "guest_restart.h"
#include "console.h"
#include "io.h"

void guest_start(struct guest *g, bool several)
{
	guest_devices_reset(g);
	g->console = (struct guest_console){ .label = several ? g->name : 0 };
	if (several) {
		vga_screen_init(&g->screen);
		g->console.screen = &g->screen;
	}
	for (unsigned i = 0; i < g->nr_vcpus; i++)
		g->vcpus[i]->start_tsc = rdtsc();
}

void guest_restart(struct guest *g)
{
	g->reboots++;
	kprintf("vmi-hv: guest %s starts again from its modules (reboot %u): memory zeroed, a new ROM copy, its frame budget and counters from zero\n",
		g->name, g->reboots);
	frame_budget_init(&g->budget, g->budget.limit, g->load_frames);
	guest_reload(g);
	/* The shadows are built again at the new VMI activation; their
	 * index (a load-time frame) is kept in g->shadow. */
	g->shadow_ready = false;
	g->audit = (struct guest_audit){ .opt = g->audit.opt };
	memset(g->unsupported_logged, 0, sizeof(g->unsupported_logged));
	g->init_refusal_logged = false;
	g->wallclock_read = false;
	for (unsigned i = 0; i < g->nr_vcpus; i++)
		vcpu_restart(g->vcpus[i]);
	g->ended_by = 0;
	g->frames_released = false;
}
