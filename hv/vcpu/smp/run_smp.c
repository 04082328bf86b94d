/*
 * run_smp.c - the run loop's work across CPUs: the kicks (IPIs) that make
 * another CPU look again, a guest's home CPU (its alarms and console
 * lines are polled there), waking halted vCPUs, arming the one-shot timer
 * for the next event, and idling.  run.c tells the whole loop.
 */
#include "run.h"
#include "run_internal.h"
#include "vcpu.h"
#include "guest_report.h"
#include "guest_restart.h"
#include "pcpu.h"
#include "console.h"
#include "stop.h"
#include "io.h"
#include "timer.h"
#include "hvlib.h"
#include "exit_codes.h"
#include "vmi_abi.h"
#include "smp.h"
#include "spinlock.h"


/* The run loops' lock: the scheduler's queues and struct run, taken by
 * every CPU's loop (docs/ARCHITECTURE.md, lock order; run_internal.h). */
struct spinlock sched_lock = SPINLOCK_INIT("sched_lock", LOCK_RANK_SCHED);

/* Tell CPU k to look at the queue, once until it has looked. */
void run_kick(struct run *r, int k)
{
	if (k < 0 || (unsigned)k == this_pcpu()->index || (unsigned)k >= r->ncpus || r->cpu[k].kicked)
		return;
	r->cpu[k].kicked = true;
	cpu_kick(&pcpus[k]);
}

/*
 * The vCPU `ran` left the guest for a hardware interrupt, and the loop
 * found vCPU v's alarm due: the timer interrupt was v's guest's, so the cycles
 * from that exit to now (the interrupt, the world switch, the poll) are
 * v's too, not the interrupted vCPU's (docs/TIME.md, "Rates a guest
 * controls").
 */
static void charge_alarm_work(struct vcpu *ran, struct vcpu *v)
{
	uint64_t exit_tsc = this_pcpu()->exit_tsc, now = rdtsc();

	if (!ran || ran->guest == v->guest || !exit_tsc || now <= exit_tsc ||
	    ran->exit_vector < 32 || ran->exit_vector == VMI_HYPERCALL_VECTOR)
		return;
	v->valarm.charged += sched_charge(&ran->sched, &v->sched, now - exit_tsc, now);
}

/* The CPU whose timer serves vCPU v's alarms: where it runs or ran last
 * (the boot CPU before it ever ran). */
static unsigned home_cpu(const struct vcpu *v)
{
	int cpu = v->sched.cpu;

	return cpu < 0 ? 0 : (unsigned)cpu;
}

/* g's lock if it is free: a busy one is a CPU in g's exit, for which the
 * loop, holding sched_lock, must not wait (every CPU would wait behind it:
 * docs/ARCHITECTURE.md).  Without g this turn; soon again if a vCPU of g
 * is at home here (its alarms, console line and wake-up are ours). */
bool run_try_guest(struct run *r, struct guest *g)
{
	if (spin_trylock(&g->lock))
		return true;
	for (unsigned j = 0; j < g->nr_vcpus; j++)
		r->cpu[this_pcpu()->index].retry |= home_cpu(g->vcpus[j]) == this_pcpu()->index;
	return false;
}

/* A vCPU running on another CPU with an interrupt to take (its vPIC's,
 * vCPU 0 only, or its local APIC's) is kicked, to take it at the entry.
 * A guest with its lock busy: kicked unlooked (an IPI too many costs it an
 * exit), but on the holder's CPU, which enters it next anyway. */
void run_kick_for_interrupts(struct run *r)
{
	for (unsigned i = 0; i < r->n && r->ncpus > 1; i++) {
		struct guest *g = r->guests[i];
		bool looked = guest_alive(g) && run_try_guest(r, g);
		int holder = looked ? -1 : __atomic_load_n(&g->lock.owner, __ATOMIC_RELAXED);

		if (!guest_alive(g))
			continue;
		for (unsigned j = 0; j < g->nr_vcpus; j++) {
			struct vcpu *v = g->vcpus[j];

			if (v->sched.state == SCHED_RUNNING &&
			    (looked ? vcpu_irq_pending(v) : v->sched.cpu != holder))
				run_kick(r, v->sched.cpu);
		}
		if (looked)
			spin_unlock(&g->lock);
	}
}

/* The CPU whose loop flushes guest g's console lines: vCPU 0's home. */
static unsigned guest_home_cpu(const struct guest *g)
{
	return home_cpu(g->vcpus[0]);
}

/* With interrupts off: the expired alarms of the vCPUs at home on this
 * CPU into their vPIC or local APIC, their guests' console lines held
 * back long enough out.  ran: the vCPU whose exit brought the loop round,
 * if any. */
void run_poll_devices(struct run *r, struct vcpu *ran)
{
	unsigned me = this_pcpu()->index;

	for (unsigned i = 0; i < r->n; i++) {
		struct guest *g = r->guests[i];

		if (!guest_alive(g) || !run_try_guest(r, g))
			continue;
		for (unsigned j = 0; j < g->nr_vcpus; j++) {
			struct vcpu *v = g->vcpus[j];

			if (home_cpu(v) == me && valarm_poll(&v->valarm, &v->sched))
				charge_alarm_work(ran, v);
		}
		if (guest_home_cpu(g) == me)
			console_guest_flush_due(&g->console, rdtsc());
		spin_unlock(&g->lock);
	}
}

/*
 * Make sure the loop comes round by the next event: the nearest alarm of
 * a live guest's vCPU whose home is this CPU (it may wake a halted vCPU, which may preempt the
 * running one), the running vCPU's slice end when another waits, or a
 * console line held back long enough.
 * Everything else that needs the loop (console input) interrupts anyway.
 */
void run_arm_next_event(struct run *r, uint64_t now)
{
	uint64_t next = sched_next_event(&r->sched, this_pcpu()->index);

	unsigned me = this_pcpu()->index;

	for (unsigned i = 0; i < r->n; i++) {
		struct guest *g = r->guests[i];
		uint64_t at;

		if (!guest_alive(g) || !run_try_guest(r, g))
			continue;
		for (unsigned j = 0; j < g->nr_vcpus; j++) {
			struct vcpu *v = g->vcpus[j];

			if (home_cpu(v) != me)
				continue;
			at = valarm_next(&v->valarm, &v->sched, now);
			if (at < next)
				next = at;
		}
		at = guest_home_cpu(g) == me ? console_guest_flush_at(&g->console) : UINT64_MAX;
		if (at < next)
			next = at;
		spin_unlock(&g->lock);
	}
	if (r->cpu[me].retry && now + tsc_hz() / (1000000 / RUN_RETRY_US) < next)
		next = now + tsc_hz() / (1000000 / RUN_RETRY_US);	/* try_guest */
	if (next != UINT64_MAX)
		hv_timer_arm(next);
}

/* Halted vCPUs with an interrupt to take become runnable again. */
void run_wake_halted(struct run *r, uint64_t now)
{
	for (unsigned i = 0; i < r->n; i++) {
		struct guest *g = r->guests[i];

		if (!guest_alive(g) || !run_try_guest(r, g))
			continue;
		for (unsigned j = 0; j < g->nr_vcpus; j++) {
			struct vcpu *v = g->vcpus[j];
			bool wake;

			/* v->halted is set in v's exit handling (g's lock)
			 * and cleared only here (both locks).  The vPIC is
			 * vCPU 0's (vcpu.c, inject_interrupt). */
			wake = v->halted && !v->awaiting_start &&
			       (v->wake_requested || (v->vif && vlapic_pending(&v->lapic) >= 0) ||
				(!v->index && vpic_pending(&g->vpic)));
			if (wake) {
				v->halted = v->wake_requested = false;
				run_kick(r, sched_wake(&r->sched, &v->sched, now));
			}
		}
		spin_unlock(&g->lock);
	}
}
