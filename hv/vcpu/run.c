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
 * (run_selftest.c) drives the same step() with one guest at a time.
 *
 * Every CPU runs this loop over its own scheduler queue.  It decides
 * under sched_lock (run_loop.h), reaching into one guest at a time under
 * that guest's lock; it enters a vCPU and handles its exits under the
 * guest's lock alone, so two guests' exits proceed at once on two CPUs
 * (docs/ARCHITECTURE.md, "Who owns what on several CPUs").  A guest's
 * alarms and console lines are its home CPU's (the CPU its vCPU runs on
 * or ran on last, home_cpu()): that CPU polls
 * them and arms its own timer for them, so a busy guest's tick costs one
 * interrupt where it runs and an idle guest's wakes one CPU.  The boot
 * CPU polls the console's input (its 8259 brings COM1 and the keyboard);
 * every CPU arms its timer for its running vCPU's slice end too.  A CPU that makes work for another
 * (a woken vCPU, an interrupt for a vCPU running there, a runnable vCPU
 * while it idles) sends it an IPI (HV_LOCAL_IPI_VECTOR), which makes it
 * leave its guest or its halt and look again.
 */
#include "run.h"
#include "run_loop.h"
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
#include "lock_selftest.h"

struct spinlock sched_lock = SPINLOCK_INIT("sched_lock", LOCK_RANK_SCHED);
/* The run the other CPUs join, once the boot CPU has set it up. */
static struct run *volatile published_run;

/* Tell CPU k to look at the queue, once until it has looked. */
static void kick(struct run *r, int k)
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
static bool try_guest(struct run *r, struct guest *g)
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
static void kick_for_interrupts(struct run *r)
{
	for (unsigned i = 0; i < r->n && r->ncpus > 1; i++) {
		struct guest *g = r->guests[i];
		bool looked = guest_alive(g) && try_guest(r, g);
		int holder = looked ? -1 : __atomic_load_n(&g->lock.owner, __ATOMIC_RELAXED);

		if (!guest_alive(g))
			continue;
		for (unsigned j = 0; j < g->nr_vcpus; j++) {
			struct vcpu *v = g->vcpus[j];

			if (v->sched.state == SCHED_RUNNING &&
			    (looked ? vcpu_irq_pending(v) : v->sched.cpu != holder))
				kick(r, v->sched.cpu);
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
 * back long enough out; on the boot CPU, console input.  ran: the vCPU
 * whose exit brought the loop round, if any. */
static void poll_devices(struct run *r, struct vcpu *ran)
{
	unsigned me = this_pcpu()->index;

	for (unsigned i = 0; i < r->n; i++) {
		struct guest *g = r->guests[i];

		if (!guest_alive(g) || !try_guest(r, g))
			continue;
		for (unsigned j = 0; j < g->nr_vcpus; j++) {
			struct vcpu *v = g->vcpus[j];

			if (home_cpu(v) == me && valarm_poll(&v->valarm, &v->sched))
				charge_alarm_work(ran, v);
		}
		if (guest_home_cpu(g) == me)
			console_guest_flush_due(&g->vuart.console, rdtsc());
		spin_unlock(&g->lock);
	}
	if (me == 0)
		console_keys_poll(&r->keys);
	kick_for_interrupts(r);
}

void run_start(struct guest *g, bool several)
{
	guest_devices_reset(g);
	g->vuart.console = (struct guest_console){ .label = several ? g->name : 0 };
	if (several) {
		vga_screen_init(&g->screen);
		g->vuart.console.screen = &g->screen;
	}
	for (unsigned i = 0; i < g->nr_vcpus; i++)
		g->vcpus[i]->start_tsc = rdtsc();
}

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
		if (r->guests[i] != g && guest_alive(r->guests[i]))
			return true;
	return !hv_debug_exit_present();
}

/* A vCPU the guest has yet to start (vcpu_state.h) is not runnable:
 * halted, and woken by nothing but its start. */
static void park_unstarted(struct run *r, struct vcpu *v)
{
	if (!v->awaiting_start)
		return;
	v->halted = true;
	sched_halt(&r->sched, &v->sched, rdtsc());
}

/* Its guest's CPUs and vcpus_at_once, at load and after each reboot. */
static void place(struct vcpu *v)
{
	v->sched.allowed = v->guest->cpus;
	v->sched.group = v->guest->vcpus_at_once ? 0 : v->guest;
	/* Its wake-ups preempt other guests' vCPUs within one bound for
	 * all of its guest's vCPUs (sched.c, preempt). */
	v->sched.guest = v->guest;
}

/* A rebooted guest started again: in the scheduler as a new vCPU. */
static void rejoin(struct run *r, struct guest *g)
{
	guest_restart(g);
	run_start(g, r->n > 1);
	for (unsigned j = 0; j < g->nr_vcpus; j++) {
		place(g->vcpus[j]);
		if (!sched_rejoin(&r->sched, &g->vcpus[j]->sched, g->vcpus[j], g->weight, rdtsc()))
			hv_panic("guest %s's vCPU %u is not the scheduler's", g->name, j);
		park_unstarted(r, g->vcpus[j]);
	}
	if (r->keys.console == g && r->n > 1)
		console_show(&g->screen);
}

static bool any_alive(const struct run *r)
{
	for (unsigned i = 0; i < r->n; i++)
		if (guest_alive(r->guests[i]))
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

/* Report the guests that died since the last look; the console moves on
 * to a guest still alive.  A guest that rebooted starts again.  With
 * sched_lock held; each dead guest's lock is taken for its report and
 * restart. */
static void reap(struct run *r)
{
	for (unsigned i = 0; i < r->n; i++) {
		struct guest *g = r->guests[i];
		bool again;

		if (guest_alive(g) || g->end_reported || dying_elsewhere(g))
			continue;
		spin_lock(&g->lock);
		again = g->state == GUEST_REBOOTED && reboot_restarts(r, g);
		for (unsigned j = 0; j < g->nr_vcpus; j++)
			sched_gone(&r->sched, &g->vcpus[j]->sched, rdtsc());
		console_guest_flush(&g->vuart.console);
		if (r->n > 1 && !again) {
			unsigned left = 0;

			for (unsigned j = 0; j < r->n; j++)
				left += guest_alive(r->guests[j]);
			kprintf("\nvmi-hv: guest %u (%s) has ended; %u other%s go%s on\n", i + 1, g->name,
				left, left == 1 ? "" : "s", left == 1 ? "es" : "");
		}
		guest_report_end(g);
		if (again)
			rejoin(r, g);
		else
			r->last_ended = g;
		spin_unlock(&g->lock);
	}
	console_keys_guest_ended(&r->keys);
	/* The boot CPU ends the hypervisor when no guest is left (idle):
	 * it may be asleep with nothing armed. */
	if (!any_alive(r))
		kick(r, 0);
}

/* A guest died and is not reported yet: its vCPUs ran at once, and the
 * last one inside it on another CPU may leave it without coming back
 * through run_jmp (its CPU picked another vCPU), so every turn looks. */
static bool unreaped(const struct run *r)
{
	for (unsigned i = 0; i < r->n; i++)
		if (!guest_alive(r->guests[i]) && !r->guests[i]->end_reported)
			return true;
	return false;
}

/*
 * Make sure the loop comes round by the next event: the nearest alarm of
 * a live guest's vCPU whose home is this CPU (it may wake a halted vCPU, which may preempt the
 * running one), the running vCPU's slice end when another waits, or a
 * console line held back long enough.
 * Everything else that needs the loop (console input) interrupts anyway.
 */
static void arm_next_event(struct run *r, uint64_t now)
{
	uint64_t next = sched_next_event(&r->sched, this_pcpu()->index);

	unsigned me = this_pcpu()->index;

	for (unsigned i = 0; i < r->n; i++) {
		struct guest *g = r->guests[i];
		uint64_t at;

		if (!guest_alive(g) || !try_guest(r, g))
			continue;
		for (unsigned j = 0; j < g->nr_vcpus; j++) {
			struct vcpu *v = g->vcpus[j];

			if (home_cpu(v) != me)
				continue;
			at = valarm_next(&v->valarm, &v->sched, now);
			if (at < next)
				next = at;
		}
		at = guest_home_cpu(g) == me ? console_guest_flush_at(&g->vuart.console) : UINT64_MAX;
		if (at < next)
			next = at;
		spin_unlock(&g->lock);
	}
	if (r->cpu[me].retry && now + tsc_hz() / (1000000 / RUN_RETRY_US) < next)
		next = now + tsc_hz() / (1000000 / RUN_RETRY_US);	/* try_guest */
	if (next != UINT64_MAX)
		hv_timer_arm(next);
}

__attribute__((noreturn)) static void no_guest_left(struct run *r)
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

/* Halted vCPUs with an interrupt to take become runnable again. */
static void wake_halted(struct run *r, uint64_t now)
{
	for (unsigned i = 0; i < r->n; i++) {
		struct guest *g = r->guests[i];

		if (!guest_alive(g) || !try_guest(r, g))
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
				kick(r, sched_wake(&r->sched, &v->sched, now));
			}
		}
		spin_unlock(&g->lock);
	}
}

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
	in->flush_at = console_guest_flush_at(&v->guest->vuart.console);
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
static bool quiet_exit(const struct vcpu *v, const struct loop_inputs *before)
{
	struct loop_inputs now;

	if (v->halted || (v->exit_vector >= 32 && v->exit_vector != VMI_HYPERCALL_VECTOR))
		return false;
	note_loop_inputs(v, &now);
	return now.alarm_changes == before->alarm_changes && now.wakes_requested == before->wakes_requested &&
	       now.flush_at == before->flush_at &&
	       now.alarm_irq_latched == before->alarm_irq_latched;
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
	if (c->index == 0 && !any_alive(r) && !unreaped(r))
		no_guest_left(r);
	pcpu_leave(c);
	c->exit_tsc = 0;	/* sleeping is not exit handling */
	vcpu_exit_handling_end(c);
	spin_unlock(&sched_lock);
	slept = rdtsc();
	__asm__ volatile("sti; hlt; cli" ::: "memory");
	c->idle_cycles += rdtsc() - slept;
	spin_lock(&sched_lock);
}

/* A vCPU of a dead guest RUNNING on this CPU is gone from the scheduler. */
static void leave_scheduler(struct run *r, struct pcpu *c, struct vcpu *v)
{
	if (v->sched.state == SCHED_RUNNING && v->sched.cpu == (int)c->index)
		sched_gone(&r->sched, &v->sched, rdtsc());
}

/*
 * Back in the loop from a guest's death (run_jmp): from its exit handling,
 * with its lock held and sched_lock not, or from the console's 'q' on the
 * boot CPU, with both.  The loop goes on with sched_lock alone.
 */
static void after_death(struct run *r)
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
	if (picked && !guest_alive(picked->guest))
		leave_scheduler(r, c, picked);
	reap(r);
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
	for (;;) {
		note_loop_inputs(v, &before);
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
		after_death(r);
		return;
	}
	irq_disable();
	rc->retry = false;
	if (unreaped(r))
		reap(r);
	poll_devices(r, rc->ran);
	wake_halted(r, rdtsc());
	rc->kicked = false;
	e = sched_pick(&r->sched, c->index, rdtsc());
	if (r->ncpus > 1)
		kick(r, sched_idle_cpu_for_waiting(&r->sched, c->index));
	arm_next_event(r, rdtsc());
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
	run_vcpu(v);
	spin_lock(&sched_lock);
	rc->ran = v;
	console_keys_stop_requested(v);
	if (v->halted) {
		sched_halt(&r->sched, &v->sched, rdtsc());
		/* Idle: what it printed of a line (a prompt) is complete
		 * (a sibling's exit holding the lock: at its flush time). */
		if (try_guest(r, v->guest)) {
			console_guest_flush(&v->guest->vuart.console);
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
			place(guests[i]->vcpus[j]);
			park_unstarted(r, guests[i]->vcpus[j]);
		}
	}
}

void run_guests(struct guest **guests, unsigned n, uint32_t slice_us)
{
	struct run r;

	irq_disable();
	spin_lock(&sched_lock);
	for (unsigned i = 0; i < n; i++)
		run_start(guests[i], n > 1);
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
		kick(&r, (int)k);
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
