/*
 * console_keys.c - what is typed on the hypervisor's console while guests
 * run: bytes for the console guest's UART, and the Ctrl-] commands.
 *
 * The boot CPU's loop polls it with sched_lock held (the focus and the
 * scheduler's view are read under it); what it reads or changes of a
 * guest, it does under that guest's lock, one guest at a time, so a
 * guest handling exits on another CPU is never seen half-way.  A guest
 * whose lock is busy is in an exit on another CPU, maybe a long one: its
 * lock is waited for without sched_lock (take_guest), so that the other
 * CPUs' loops go on meanwhile.
 */
#include "console_keys.h"
#include "run_internal.h"
#include "vcpu_state.h"
#include "guest_report.h"
#include "guest_stop.h"
#include "vcpu_mmu.h"
#include "console.h"
#include "io.h"
#include "timer.h"
#include "hvlib.h"
#include "pcpu.h"
#include "smp.h"

/*
 * The hypervisor's console while guests run (what arrives on COM1 and
 * what is typed on the keyboard, console_getc): the escape character
 * Ctrl-] (0x1d) followed by
 *     s  print the statistics of the guest that has the console, and
 *        every vCPU's time;
 *     r  restart the peaks (shadow pages) at the current figures, so that
 *        the next 's' shows the peak of what ran in between;
 *     q  stop the guest that has the console (the loop then reports it);
 *     1-9  give the console to guest N;
 *     l  list the guests and their state.
 * Everything else goes to the console guest's virtual UART (an escape
 * followed by another escape sends one Ctrl-] to the guest).
 */
#define CONSOLE_ESCAPE 0x1d

/*
 * g's lock for a console command, with sched_lock held.  A busy one is a
 * CPU in g's exit, which may be long: waiting for it with sched_lock held
 * would stop every CPU's loop at its next turn (docs/SMP.md, "Locks").
 * So the wait lets go of sched_lock, and returns false: sched_lock is
 * taken again by put_guest, after g's lock (the lock order), and what the
 * caller read under sched_lock before may have changed (g may have ended).
 * A command that prints lets go of it in any case (print): its lines take
 * as long as the UART needs (87 us a byte at 115200 baud).
 */
static bool take_guest(struct guest *g, bool print)
{
	if (!print && spin_trylock(&g->lock))
		return true;
	spin_unlock(&sched_lock);
	spin_lock(&g->lock);
	return false;
}

static void put_guest(struct guest *g, bool kept)
{
	spin_unlock(&g->lock);
	if (!kept)
		spin_lock(&sched_lock);
}

/* The scheduler's view of g's vCPUs (sched_lock's), copied before
 * take_guest may let sched_lock go. */
static void sched_view(const struct guest *g, struct sched_entity *view)
{
	for (unsigned j = 0; j < g->nr_vcpus; j++)
		view[j] = g->vcpus[j]->sched;
}

static const char *guest_state_name(const struct guest *g, const struct sched_entity *vcpu0)
{
	switch (g->state) {
	case GUEST_RUNNING: return sched_state_name(vcpu0->state);
	case GUEST_STOPPED: return "stopped";
	case GUEST_REBOOTED: return "rebooted";
	case GUEST_RESTARTING: return "restarting";
	case GUEST_SHUT_DOWN: return "shut down";
	}
	return "?";
}

/* Stopping frees the guest's shadows: a vCPU inside the guest on another
 * CPU is stopped there, at the exit the IPI causes, or, if that exit's
 * handling had begun already, when that CPU's loop comes back from it
 * (run_step: it may halt there and never exit again).  Written under
 * sched_lock and the guest's lock, so either may read it. */
static void stop_from_console(struct vcpu *v)
{
	static const char why[] = "stopped from the console (Ctrl-] q)";

	spin_lock(&v->guest->lock);
	if (v->sched.state == SCHED_RUNNING && v->sched.cpu != (int)this_pcpu()->index) {
		v->stop_requested = why;
		spin_unlock(&v->guest->lock);
		cpu_kick(&pcpus[v->sched.cpu]);
		return;
	}
	vcpu_stop(v, why);	/* the loop lets go of the guest's lock (run_jmp) */
}

void console_keys_stop_requested(struct vcpu *v)
{
	if (!v->stop_requested || !guest_alive(v->guest))
		return;
	spin_lock(&v->guest->lock);
	vcpu_stop(v, "%s", v->stop_requested);
}

static void list_guests(const struct console_keys *r)
{
	kprintf("vmi-hv: %u guest%s (Ctrl-] N gives guest N the console):\n", r->n,
		r->n == 1 ? "" : "s");
	for (unsigned i = 0; i < r->n; i++) {
		struct guest *g = r->guests[i];
		struct sched_entity view[GUEST_MAX_VCPUS];
		const struct sched_entity *e = &view[0];
		const char focused = g == r->console ? '*' : ' ';
		bool kept;

		sched_view(g, view);
		kept = take_guest(g, true);
		kprintf("    %c %u %-15s %-9s weight %u, %llu exits, %s CPU %d, %llu migrations\n",
			focused, i + 1, g->name, guest_state_name(g, e),
			g->weight, (unsigned long long)g->vcpus[0]->stats.exits,
			e->state == SCHED_RUNNING ? "on" : "last on", e->cpu,
			(unsigned long long)e->migrations);
		/* A guest of several vCPUs: each one (docs/SMP.md, "A guest of
		 * several vCPUs"). */
		for (unsigned j = 0; g->nr_vcpus > 1 && j < g->nr_vcpus; j++) {
			const struct vcpu *v = g->vcpus[j];

			kprintf("        vcpu %u: %s, %llu exits, %s CPU %d, %llu alarms\n", j,
				v->awaiting_start ? "waiting for its start" : sched_state_name(view[j].state),
				(unsigned long long)v->stats.exits,
				view[j].state == SCHED_RUNNING ? "on" : "last on", view[j].cpu,
				(unsigned long long)v->valarm.count);
		}
		put_guest(g, kept);
	}
}

/* Each CPU's time since it joined: in guests, idle, and the rest in the
 * hypervisor (exits, polls, scheduling, waiting for locks). */
static void print_cpus(void)
{
	const uint64_t now = rdtsc();

	for (unsigned i = 0; i < nr_online_cpus; i++) {
		const struct pcpu *c = &pcpus[i];
		/* In ms: udiv64 divides by 32 bits. */
		uint64_t up = c->joined_tsc ? tsc_to_us(now - c->joined_tsc) / 1000 : 0;
		uint64_t guest = tsc_to_us(c->guest_cycles) / 1000, idle = tsc_to_us(c->idle_cycles) / 1000;
		uint64_t hv = up > guest + idle ? up - guest - idle : 0;

		if (!up || up > UINT32_MAX)
			continue;
		kprintf("vmi-hv: cpu %u (APIC ID %u): busy in guests %llu.%llu%%, hypervisor %llu.%llu%%, idle %llu.%llu%% of %llu ms; %llu timer interrupts, %llu IPIs\n",
			i, c->apic_id,
			udiv64(guest * 100, up), udiv64(guest * 1000, up) % 10,
			udiv64(hv * 100, up), udiv64(hv * 1000, up) % 10,
			udiv64(idle * 100, up), udiv64(idle * 1000, up) % 10, (unsigned long long)up,
			(unsigned long long)c->timer_interrupts, (unsigned long long)c->ipis);
	}
}

/* What decides whether a vCPU wakes and takes its interrupts (run.c,
 * wake_halted; vcpu.c, inject_interrupt): for a guest of several vCPUs
 * whose one vCPU sleeps while it should not. */
static void print_vcpu_wake_state(unsigned n, const struct guest *g, const struct vcpu *v)
{
	kprintf("vmi-hv: vcpu wake: guest %u (%s) vcpu %u: %s, virtual IF %u, wake %s, IRR top %d, ISR top %d, TPR %x, LVTT %08x, alarms armed %u%u, latched %x\n",
		n, g->name, v->index, v->halted ? "halted" : "not halted", v->vif ? 1 : 0,
		v->wake_requested ? "requested" : "not requested",
		vlapic_highest_requested(&v->lapic), vlapic_highest_in_service(&v->lapic),
		v->lapic.tpr, v->lapic.lvtt, v->valarm.alarms[0].armed ? 1 : 0,
		v->valarm.alarms[1].armed ? 1 : 0, valarm_irq_latched(&v->valarm));
}

/*
 * Where every vCPU's time went since its guest started, in TSC cycles:
 * REAL = AVAILABLE (running + halted) + STOLEN (runnable, not running),
 * exactly, all read at one instant.
 */
static void print_times(const struct console_keys *r)
{
	const uint64_t now = rdtsc();

	for (unsigned i = 0; i < r->n; i++) {
		struct guest *g = r->guests[i];
		struct sched_entity view[GUEST_MAX_VCPUS];
		bool kept;

		sched_view(g, view);
		kept = take_guest(g, true);
		for (unsigned j = 0; j < g->nr_vcpus; j++) {
			const struct sched_entity *e = &view[j];
			struct sched_times t = sched_times(e, now);
			uint64_t real_ms = tsc_to_us(t.real) / 1000, stolen_ms = tsc_to_us(t.stolen) / 1000;

			kprintf("vmi-hv: vcpu time: guest %u (%s) vcpu %u: real=%llu available=%llu stolen=%llu cycles (running=%llu halted=%llu); %llu of %llu ms stolen; %llu alarms (at worst %llu us late, %llu us on average), %llu wake-ups (%llu took the CPU at once)\n",
				i + 1, g->name, j, (unsigned long long)t.real,
				(unsigned long long)(t.running + t.halted), (unsigned long long)t.stolen,
				(unsigned long long)t.running, (unsigned long long)t.halted,
				(unsigned long long)stolen_ms, (unsigned long long)real_ms,
				(unsigned long long)g->vcpus[j]->valarm.count,
				(unsigned long long)tsc_to_us(g->vcpus[j]->valarm.max_late),
				(unsigned long long)valarm_mean_late_us(&g->vcpus[j]->valarm),
				(unsigned long long)e->wakeups, (unsigned long long)e->preemptions);
			if (g->nr_vcpus > 1)	/* docs/SMP.md, "A guest of several vCPUs" */
				kprintf("vmi-hv: vcpu apic: guest %u (%s) vcpu %u: %s, %llu IPIs sent, %llu taken\n",
					i + 1, g->name, j,
					g->vcpus[j]->awaiting_start ? "waiting for its start" : "started",
					(unsigned long long)g->vcpus[j]->ipis_sent,
					(unsigned long long)g->vcpus[j]->ipis_taken);
			if (g->nr_vcpus > 1)
				print_vcpu_wake_state(i + 1, g, g->vcpus[j]);
		}
		put_guest(g, kept);
	}
}

/* The number of the next live guest after the focused one, in turn. */
static unsigned next_alive(const struct console_keys *r)
{
	unsigned at = 0;

	for (unsigned i = 0; i < r->n; i++)
		if (r->guests[i] == r->console)
			at = i;
	for (unsigned k = 1; k <= r->n; k++)
		if (guest_alive(r->guests[(at + k) % r->n]))
			return (at + k) % r->n + 1;
	return at + 1;
}

static void focus(struct console_keys *r, unsigned n)
{
	if (n < 1 || n > r->n) {
		kprintf("vmi-hv: no guest %u (there %s %u)\n", n, r->n == 1 ? "is" : "are", r->n);
		return;
	}
	if (!guest_alive(r->guests[n - 1])) {
		kprintf("vmi-hv: guest %u (%s) %s; the console stays with %s\n", n, r->guests[n - 1]->name,
			guest_restarting(r->guests[n - 1]) ? "is restarting" : "has ended",
			r->console ? r->console->name : "nobody");
		return;
	}
	r->console = r->guests[n - 1];
	console_show(&r->console->screen);
	kprintf("vmi-hv: console input goes to guest %u (%s)\n", n, r->console->name);
}

/* A typed byte into g's virtual UART (not if g ended while take_guest
 * waited). */
static void guest_receive(struct guest *g, uint8_t c)
{
	bool kept = take_guest(g, false);

	if (guest_alive(g))
		vuart_receive(&g->vuart, c);
	put_guest(g, kept);
}

/* Ctrl-] s: the console guest's statistics, then every vCPU's and CPU's
 * time.  Its shadows are audited only while it lives: a guest that ended
 * while take_guest waited may have been reaped, its shadows freed. */
static void print_statistics(struct console_keys *r, struct guest *g)
{
	struct console_hold hold;
	struct shadow_audit a;
	const struct shadow_audit *audit;
	bool kept = take_guest(g, true);

	if (guest_alive(g)) {
		audit = vcpu_report_audit(g->vcpus[0], &a);	/* outside console_lock */
		hold = console_enter();
		kprintf("vmi-hv: statistics (guest running, hypervisor up %llu ms, %llu timer interrupts):\n",
			(unsigned long long)hv_uptime_ms(),
			(unsigned long long)hv_timer_interrupts());
		vcpu_print_counters(g->vcpus[0], audit);
		console_leave(hold);
	}
	put_guest(g, kept);
	print_times(r);
	print_cpus();
}

/* Ctrl-] r: the peaks (shadow pages, the longest exit) start again. */
static void reset_peaks(struct guest *g)
{
	bool kept = take_guest(g, true);

	if (guest_alive(g)) {
		vcpu_mmu_reset_peaks(g->vcpus[0]);
		/* The longest exit too: from now on, not the boot's. */
		for (unsigned j = 0; j < g->nr_vcpus; j++)
			g->vcpus[j]->stats.hv_max_cycles = 0;
	}
	put_guest(g, kept);
}

void console_keys_poll(struct console_keys *r)
{
	struct guest *g;
	int c;

	/* The focus again before each byte: while take_guest waited, another
	 * CPU's reap may have moved it (console_keys_guest_ended); a dead
	 * console guest's input waits in the ring. */
	while ((g = r->console) && guest_alive(g) && (c = console_getc()) >= 0) {
		if (!r->escaped) {
			r->escaped = c == CONSOLE_ESCAPE;
			if (!r->escaped)
				guest_receive(g, (uint8_t)c);
			continue;
		}
		r->escaped = false;
		if (c == CONSOLE_ESCAPE) {
			guest_receive(g, (uint8_t)c);
		} else if (c == 's') {
			print_statistics(r, g);
		} else if (c == 'r') {
			reset_peaks(g);
		} else if (c == 'q') {
			stop_from_console(g->vcpus[0]);
		} else if (c >= '1' && c <= '9') {
			focus(r, (unsigned)(c - '0'));
		} else if (c == 'n') {
			focus(r, next_alive(r));	/* guests 10-16 have no digit */
		} else if (c == 'l') {
			list_guests(r);
		}
	}
}

void console_keys_guest_ended(struct console_keys *k)
{
	/* Not before its end is reported: a reap on another CPU while the
	 * console guest is dying elsewhere comes first, and a guest that
	 * reboots is alive again after its own reap (its input waits in the
	 * ring meanwhile, console_keys_poll), the focus staying with it
	 * while it restarts. */
	if (!k->console || guest_alive(k->console) || guest_restarting(k->console) ||
	    !k->console->end_reported || k->console->reaping)
		return;
	k->console = 0;
	for (unsigned i = 0; i < k->n && !k->console; i++)
		if (guest_alive(k->guests[i]))
			k->console = k->guests[i];
	if (k->console && k->n > 1)
		console_show(&k->console->screen);
}
