/*
 * run_reap.c - the run loop's guests that end: a dead guest reported
 * (by the last CPU out of it), a rebooted one started again as new
 * vCPUs, the end of the hypervisor when none is left; and where a vCPU
 * may run (its guest's CPUs) and waits until its guest starts it.
 */
#include "run.h"
#include "run_internal.h"
#include "vcpu.h"
#include "guest_report.h"
#include "guest_restart.h"
#include "pcpu.h"
#include "vcpu_switcher.h"
#include "console.h"
#include "stop.h"
#include "io.h"
#include "timer.h"
#include "hvlib.h"
#include "exit_codes.h"
#include "vmi_abi.h"
#include "smp.h"
#include "spinlock.h"

/*
 * Does a guest's reboot start it again?  Always, but for one case: the
 * last guest running rebooted on a machine with QEMU's isa-debug-exit
 * (the test harness's; docs/HV.md, "Power-off and reboot"), where the
 * run ends with HV_EXIT_GUEST_REBOOT, as QEMU's -no-reboot ends a native
 * guest's reboot.
 */
static bool reboot_restarts(const struct run *r, const struct guest *g)
{
	for (unsigned i = 0; i < r->n; i++)
		if (r->guests[i] != g && (guest_alive(r->guests[i]) || guest_restarting(r->guests[i])))
			return true;
	return !hv_debug_exit_present();
}

/* A vCPU the guest has yet to start (vcpu_state.h) is not runnable:
 * halted, and woken by nothing but its start. */
void run_park_unstarted(struct run *r, struct vcpu *v)
{
	if (!v->awaiting_start)
		return;
	v->halted = true;
	sched_halt(&r->sched, &v->sched, rdtsc());
}

/* Its guest's CPUs and vcpus_at_once, at load and after each reboot. */
void run_place(struct vcpu *v)
{
	v->sched.allowed = v->guest->cpus;
	v->sched.group = v->guest->vcpus_at_once ? 0 : v->guest;
	/* Its wake-ups preempt other guests' vCPUs within one bound for
	 * all of its guest's vCPUs (sched.c, preempt). */
	v->sched.guest = v->guest;
}

/* The reap's hold of sched_lock from reap_held_since to now, kept if
 * the longest; before each let-go of sched_lock in a reap, and at its end. */
static void reap_hold_ends(struct run *r)
{
	uint64_t held = rdtsc() - r->reap_held_since;

	if (held > r->reap_hold_max)
		r->reap_hold_max = held;
}

/* After a guest's end, with several: how long a reap stalled every CPU's
 * scheduling, at most (the test beside a reboot loop reads it). */
static void say_reap_hold(const struct run *r, uint64_t held_max)
{
	if (r->n > 1)
		kprintf("vmi-hv: guest ends held sched_lock at most %llu us at once\n",
			(unsigned long long)tsc_to_us(held_max));
}

/* A rebooted guest's vCPUs, with sched_lock again, join the scheduler
 * as new ones; the console shows it again if it has the focus. */
static void rejoin(struct run *r, struct guest *g)
{
	for (unsigned j = 0; j < g->nr_vcpus; j++) {
		run_place(g->vcpus[j]);
		if (!sched_rejoin(&r->sched, &g->vcpus[j]->sched, g->vcpus[j], g->weight, rdtsc()))
			hv_panic("guest %s's vCPU %u is not the scheduler's", g->name, j);
		run_park_unstarted(r, g->vcpus[j]);
	}
	g->end_reported = false;
	g->state = GUEST_RUNNING;
	if (r->keys.console == g && r->n > 1)
		console_show(&g->screen);
}

/*
 * Guest i's end, reaped: out of the scheduler with sched_lock, then its
 * partial line, its report and the return of its frames (~7 ms, 93 ms the
 * first time under TCG) and a rebooted guest's reload (tens of ms) under
 * its lock alone, sched_lock let go meanwhile: under sched_lock every
 * other CPU's scheduling waited for them at every end.  Nobody else
 * touches the guest: it is in no scheduler queue, not alive (no poll, no
 * console input) and reaping (no other reap; the run does not end,
 * run_unreaped; the console's focus stays, console_keys_guest_ended).
 * Then, with sched_lock again, the scheduler's part: a rebooted guest's
 * vCPUs rejoin it, or the guest is the last ended.  Entered with
 * sched_lock and the guest's lock, left with sched_lock alone.
 */
static void reap_outside_sched_lock(struct run *r, unsigned i)
{
	struct guest *g = r->guests[i];
	struct pcpu *c = this_pcpu();
	bool again = g->state == GUEST_REBOOTED && reboot_restarts(r, g);
	unsigned left = 0;
	uint64_t held_max;

	for (unsigned j = 0; j < g->nr_vcpus; j++)
		sched_gone(&r->sched, &g->vcpus[j]->sched, rdtsc());
	for (unsigned j = 0; j < r->n; j++)
		left += guest_alive(r->guests[j]);
	if (again)
		g->state = GUEST_RESTARTING;
	g->reaping = true;
	/* This CPU's loaded vCPU saved: another CPU may take it meanwhile. */
	if (c->current)
		pcpu_leave(c);
	reap_hold_ends(r);
	held_max = r->reap_hold_max;
	spin_unlock(&sched_lock);
	console_guest_flush(&g->console);
	if (r->n > 1 && !again)
		kprintf("\nvmi-hv: guest %u (%s) has ended; %u other%s go%s on\n", i + 1, g->name,
			left, left == 1 ? "" : "s", left == 1 ? "es" : "");
	guest_report_end(g);
	if (again) {
		guest_restart(g);
		guest_start(g, r->n > 1);
	} else {
		say_reap_hold(r, held_max);
	}
	spin_unlock(&g->lock);
	spin_lock(&sched_lock);
	r->reap_held_since = rdtsc();
	if (again)
		rejoin(r, g);
	else
		r->last_ended = g;
	g->reaping = false;
}

/* A guest alive or restarting: the run goes on. */
bool run_any_alive(const struct run *r)
{
	for (unsigned i = 0; i < r->n; i++)
		if (guest_alive(r->guests[i]) || guest_restarting(r->guests[i]))
			return true;
	return false;
}

/* Did g die where its vCPU still runs, on another CPU?  That CPU reaps
 * it when it comes back to the loop: its registers are still loaded
 * there (pcpu->current). */
static bool dying_elsewhere(const struct guest *g)
{
	for (unsigned j = 0; j < g->nr_vcpus; j++) {
		const struct sched_entity *e = &g->vcpus[j]->sched;

		if (e->state == SCHED_RUNNING && e->cpu != (int)this_pcpu()->index)
			return true;
	}
	return false;
}

/* Report the guests that died since the last look, with sched_lock let
 * go (reap_outside_sched_lock); the console moves on to a guest still
 * alive.  With sched_lock held; each dead guest's lock is taken for its
 * report if it is free, else at a later turn. */
void run_reap(struct run *r)
{
	bool reaped = false;

	r->reap_held_since = rdtsc();
	for (unsigned i = 0; i < r->n; i++) {
		struct guest *g = r->guests[i];

		if (guest_alive(g) || g->end_reported || g->reaping || dying_elsewhere(g))
			continue;
		/* Not waited for under sched_lock (run_try_guest): a CPU
		 * holding a dead guest's lock is leaving it, and this loop
		 * comes round again within RUN_RETRY_US (run_unreaped). */
		if (!spin_trylock(&g->lock)) {
			r->cpu[this_pcpu()->index].retry = true;
			continue;
		}
		reap_outside_sched_lock(r, i);
		reaped = true;
	}
	console_keys_guest_ended(&r->keys);
	reap_hold_ends(r);
	/* The boot CPU ends the hypervisor when no guest is left (idle):
	 * it may be asleep with nothing armed.  And it polls the console:
	 * a byte typed while the guest was reported, sched_lock let go,
	 * waited in the ring for the focus (console_keys_poll). */
	if (reaped || !run_any_alive(r))
		run_kick(r, 0);
}

/* A guest died and is not reported yet, or its report is being printed
 * (reaping): its vCPUs ran at once, and the last one inside it on
 * another CPU may leave it without coming back through run_jmp (its CPU
 * picked another vCPU), so every turn looks. */
bool run_unreaped(const struct run *r)
{
	for (unsigned i = 0; i < r->n; i++)
		if (r->guests[i]->reaping ||
		    (!guest_alive(r->guests[i]) && !guest_restarting(r->guests[i]) && !r->guests[i]->end_reported))
			return true;
	return false;
}

/* A vCPU of a dead guest RUNNING on this CPU is gone from the scheduler
 * (true if it was still there). */
static bool leave_scheduler(struct run *r, struct pcpu *c, struct vcpu *v)
{
	if (v->sched.state != SCHED_RUNNING || v->sched.cpu != (int)c->index)
		return false;
	sched_gone(&r->sched, &v->sched, rdtsc());
	return true;
}

/*
 * Back in the loop from a guest's death (run_jmp): from its exit handling,
 * with its lock held and sched_lock not, or from the console's 'q' on the
 * boot CPU, with both.  The loop goes on with sched_lock alone.
 */
void run_after_death(struct run *r)
{
	struct pcpu *c = this_pcpu();
	struct vcpu *picked = r->cpu[c->index].picked;

	vcpu_exit_handling_end(c);
	for (unsigned i = 0; i < r->n; i++)
		if (spin_held(&r->guests[i]->lock))
			spin_unlock(&r->guests[i]->lock);
	if (!spin_held(&sched_lock))
		spin_lock(&sched_lock);
	/* This CPU is out of the dead guest: its vCPU here leaves the CPU
	 * (registers saved) and the scheduler, so that the last CPU out of
	 * a guest whose vCPUs ran at once reaps it (dying_elsewhere). */
	if (c->current && !guest_alive(c->current->guest)) {
		leave_scheduler(r, c, c->current);
		pcpu_leave(c);
	}
	/* And the one it picked but never entered (its guest died first):
	 * left RUNNING, two such on two CPUs block each other's reap. */
	if (picked && !guest_alive(picked->guest) && leave_scheduler(r, c, picked))
		log_info("guest %s's vcpu %u, picked on CPU %u but never entered, leaves the scheduler",
			 picked->guest->name, picked->index, c->index);
	run_reap(r);
}

/* No guest is left: the hypervisor ends with the last guest's end, or
 * stays on the console after a stop (guests_after_stop). */
__attribute__((noreturn)) void run_no_guest_left(struct run *r)
{
	bool stopped = false;

	for (unsigned i = 0; i < r->n; i++)
		stopped |= r->guests[i]->state == GUEST_STOPPED;
	if (locks_checking())
		for (unsigned i = 0; i < nr_online_cpus; i++)
			log_info("locks=check: CPU %u checked %llu lock takes", i,
				 (unsigned long long)pcpus[i].locks.checked);
	if (stopped || !r->last_ended)
		guests_after_stop(r->guests, r->n);
	if (r->last_ended->state == GUEST_REBOOTED)
		hv_stop(HV_EXIT_GUEST_REBOOT, "guest reboot");
	hv_stop(HV_EXIT_GUEST_SHUTDOWN, "guest powered off");
}
