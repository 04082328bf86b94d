/*
 * run.c - the run loop: what happens between guest entries.
 *
 * Like lguest's run_guest, the loop enters a vCPU (vcpu_run_once: one
 * entry, one exit handled) again and again.  Between entries it polls
 * the devices (every live guest's alarms, and the hypervisor's console
 * for the guest that has it) with interrupts off.  A vCPU that halts
 * (hlt, VMI Halt) is entered no more until its vPIC has an interrupt to
 * deliver; while it waits, the CPU sleeps in sti;hlt.  A guest that is
 * stopped for a rule break, or reboots or powers off, is marked dead
 * (guest_stop.c) and control comes back here through pcpu->run_jmp; the
 * loop prints why and goes on with the guests that are left.  With none
 * left, the hypervisor exits with the last guest's end code, or, if a
 * guest was stopped, stays up on the console ('s' statistics, 'q' exit).
 *
 * The scheduler (sched/sched.c) says which vCPU to enter: after every
 * exit the loop asks again, and a vCPU whose slice is over makes way for
 * the one owed the most time.  A halted vCPU is not runnable until its
 * vPIC has an interrupt for it; with none runnable the CPU sleeps.
 * Before it enters a vCPU or sleeps, the loop arms the hypervisor's
 * one-shot timer for the next event (the nearest alarm of any guest, or
 * the slice's end when another vCPU waits): there is no periodic tick.
 * What is typed on the console is console_keys.c's; selftest=two-guests
 * (run_selftest.c) drives the same run_step() with one guest at a time.
 * The work across CPUs (kicks, homes, waking, the timer, idling) is
 * run_smp.c's; guests that end or reboot are run_reap.c's.
 *
 * Every CPU runs this loop over its own scheduler queue.  It decides
 * under sched_lock (run_internal.h), reaching into one guest at a time under
 * that guest's lock; it enters a vCPU and handles its exits under the
 * guest's lock alone, so two guests' exits proceed at once on two CPUs
 * (docs/ARCHITECTURE.md, "Who owns what on several CPUs").  A guest's
 * alarms and console lines are its home CPU's (the CPU its vCPU runs on
 * or ran on last, home_cpu() in run_smp.c): that CPU polls
 * them and arms its own timer for them, so a busy guest's tick costs one
 * interrupt where it runs and an idle guest's wakes one CPU.  The boot
 * CPU polls the console's input (its 8259 brings COM1 and the keyboard);
 * every CPU arms its timer for its running vCPU's slice end too.  A CPU that makes work for another
 * (a woken vCPU, an interrupt for a vCPU running there, a runnable vCPU
 * while it idles) sends it an IPI (HV_LOCAL_IPI_VECTOR), which makes it
 * leave its guest or its halt and look again.
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
#include "lock_selftest.h"
#include "debug_delay.h"

/* The run the other CPUs join, once the boot CPU has set it up. */
static struct run *volatile published_run;

/* What the loop decides from, as it was before an entry (quiet_exit). */
struct loop_inputs {
	uint64_t alarm_changes;
	uint64_t wakes_requested;
	uint64_t flush_at;
	unsigned alarm_irq_latched;
};

static void note_loop_inputs(const struct vcpu *v, struct loop_inputs *in)
{
	in->alarm_changes = v->valarm.changes;
	in->wakes_requested = v->guest->wakes_requested;
	in->alarm_irq_latched = valarm_irq_latched(&v->valarm);
	in->flush_at = console_guest_flush_at(&v->guest->console);
}

/*
 * Did v's exit leave the loop nothing to decide?  The loop polls the
 * devices, wakes halted vCPUs, asks the scheduler and arms the timer, and
 * what they decide changes only through
 *   - a hardware interrupt: an alarm's time, a slice's end and a held
 *     console line's time are the timer's shots; console input is the
 *     UART's or the keyboard's IRQ.  In the hypervisor interrupts are
 *     off, so one that comes meanwhile is taken right after the next
 *     entry, as an exit of its own;
 *   - an alarm set or cancelled, IRQ0's or LVTT's request taken or latched (the
 *     alarms wake nobody while it is latched: valarm_next()), or a console
 *     line started (the timer must be armed for them);
 *   - a halt, a halted vCPU to wake (its start: wakes_requested), or the
 *     guest's end (which comes back through run_jmp).
 * After any other exit (page faults, MMU and descriptor calls: most of
 * them) the loop enters v again straight away.  That matters under TCG,
 * where every page the hypervisor touches after the world switch costs a
 * TLB refill.
 */
static bool quiet_exit(const struct vcpu *v, struct loop_inputs *before)
{
	struct loop_inputs now;

	if (v->halted || (v->exit_vector >= 32 && v->exit_vector != VMI_HYPERCALL_VECTOR))
		return false;
	note_loop_inputs(v, &now);
	if (now.alarm_changes != before->alarm_changes || now.wakes_requested != before->wakes_requested ||
	    now.flush_at != before->flush_at || now.alarm_irq_latched != before->alarm_irq_latched)
		return false;
	/* Nothing runs before the next entry: what the loop decides from
	 * is the same then, not noted again. */
	*before = now;
	return true;
}

/*
 * Nothing to run on this CPU: its vCPU's registers saved (another CPU may
 * take it), sched_lock released, and the CPU halted until an interrupt: its
 * timer, an IPI, or (the boot CPU) a device.  sti takes effect after hlt
 * has begun: no wake-up is lost between the decision and the halt.
 */
static void idle(struct run *r, struct pcpu *c)
{
	uint64_t slept;

	/* Not while a dead guest waits for its report: the last CPU out of
	 * a guest whose vCPUs ran at once reaps it (dying_elsewhere), and
	 * kicks this one then.  Ending before would find no last_ended and
	 * wait at the console's prompt with the guest's end never said
	 * (a reboot of Linux with vcpus_at_once=on, 2 runs in 5). */
	if (c->index == 0 && !run_any_alive(r) && !run_unreaped(r))
		run_no_guest_left(r);
	pcpu_leave(c);
	c->exit_tsc = 0;	/* sleeping is not exit handling */
	vcpu_exit_handling_end(c);
	spin_unlock(&sched_lock);
	slept = rdtsc();
	__asm__ volatile("sti; hlt; cli" ::: "memory");
	c->idle_cycles += rdtsc() - slept;
	spin_lock(&sched_lock);
}

/*
 * Enter v and handle its exits under its guest's lock alone, again and
 * again while they leave the loop nothing to decide (quiet_exit): this is
 * where two guests' vCPUs on two CPUs proceed at once.
 */
static void run_vcpu(struct vcpu *v)
{
	struct guest *g = v->guest;
	struct loop_inputs before;

	spin_lock(&g->lock);
	note_loop_inputs(v, &before);
	for (;;) {
		vcpu_run_once(v);
		if (!quiet_exit(v, &before))
			break;
		v->stats.quiet_exits++;
	}
	/* Exit handling in parallel counts only under the guest's lock. */
	vcpu_exit_handling_end(this_pcpu());
	spin_unlock(&g->lock);
}

/*
 * One turn of the loop, entered and left with sched_lock held: poll, let
 * the scheduler choose, then (sched_lock released) run that vCPU until an
 * exit that needs the loop.  A guest's death comes back here through
 * run_jmp from wherever in the exit handling (or the console) it happened.
 */
void run_step(struct run *r)
{
	struct pcpu *c = this_pcpu();
	struct run_cpu *rc = &r->cpu[c->index];
	struct sched_entity *e;
	struct vcpu *v;

	if (hv_setjmp(&c->run_jmp)) {
		run_after_death(r);
		return;
	}
	irq_disable();
	rc->retry = false;
	if (run_unreaped(r))
		run_reap(r);
	run_poll_devices(r, rc->ran);
	if (c->index == 0)	/* console input: the boot CPU takes COM1's IRQs */
		console_keys_poll(&r->keys);
	run_kick_for_interrupts(r);
	run_wake_halted(r, rdtsc());
	rc->kicked = false;
	e = sched_pick(&r->sched, c->index, rdtsc());
	if (r->ncpus > 1)
		run_kick(r, sched_idle_cpu_for_waiting(&r->sched, c->index));
	run_arm_next_event(r, rdtsc());
	if (!e) {
		idle(r, c);
		return;
	}
	v = e->owner;
	/* Saved before another CPU can take it: it can once sched_lock
	 * goes. */
	if (c->current && c->current != v)
		pcpu_leave(c);
	rc->ran = 0;		/* until it has exited */
	rc->picked = v;
	spin_unlock(&sched_lock);
	debug_delay(debug_pick_delay_us);	/* test-only: its guest may die meanwhile */
	run_vcpu(v);
	spin_lock(&sched_lock);
	rc->ran = v;
	console_keys_stop_requested(v);
	if (v->halted) {
		sched_halt(&r->sched, &v->sched, rdtsc());
		/* Idle: what it printed of a line (a prompt) is complete
		 * (a sibling's exit holding the lock: at its flush time). */
		if (run_try_guest(r, v->guest)) {
			console_guest_flush(&v->guest->console);
			spin_unlock(&v->guest->lock);
		}
	}
}

void run_init(struct run *r, struct guest **guests, unsigned n, uint32_t slice_us)
{
	*r = (struct run){ .guests = guests, .n = n, .ncpus = nr_online_cpus,
			   .keys = { .guests = guests, .n = n, .console = n ? guests[0] : 0 } };
	sched_init(&r->sched, udiv64(tsc_hz() * slice_us, 1000000), r->ncpus);
	for (unsigned i = 0; i < n; i++) {
		for (unsigned j = 0; j < guests[i]->nr_vcpus; j++) {
			if (!sched_add(&r->sched, &guests[i]->vcpus[j]->sched, guests[i]->vcpus[j],
				       guests[i]->weight, rdtsc()))
				hv_panic("more vCPUs than the scheduler takes (%u)", SCHED_MAX);
			run_place(guests[i]->vcpus[j]);
			run_park_unstarted(r, guests[i]->vcpus[j]);
		}
	}
}

void run_guests(struct guest **guests, unsigned n, uint32_t slice_us)
{
	struct run r;

	irq_disable();
	spin_lock(&sched_lock);
	for (unsigned i = 0; i < n; i++)
		guest_start(guests[i], n > 1);
	run_init(&r, guests, n, slice_us);
	if (n > 1) {
		console_show(&r.keys.console->screen);
		if (r.ncpus == 1)
			log_info("%u guests share the CPU: %u us slices, shares by weight; Ctrl-] N gives guest N the console and its VGA screen, Ctrl-] l lists them",
				 n, slice_us);
		else
			log_info("%u guests share %u CPUs: %u us slices, shares by weight; Ctrl-] N gives guest N the console and its VGA screen, Ctrl-] l lists them",
				 n, r.ncpus, slice_us);
	}
	this_pcpu()->joined_tsc = rdtsc();
	published_run = &r;
	for (unsigned k = 1; k < r.ncpus; k++)
		run_kick(&r, (int)k);
	for (;;)
		run_step(&r);
}

void run_cpu(struct pcpu *c)
{
	struct run *r;

	/* Parked until the boot CPU has the guests running (its IPI). */
	while (!(r = published_run))
		__asm__ volatile("sti; hlt; cli" ::: "memory");
	lock_selftest_ap(c);
	spin_lock(&sched_lock);
	c->joined_tsc = rdtsc();
	for (;;)
		run_step(r);
}
