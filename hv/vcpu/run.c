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
 * The scheduler (timer/sched.c) says which vCPU to enter: after every
 * exit the loop asks again, and a vCPU whose slice is over makes way for
 * the one owed the most time.  A halted vCPU is not runnable until its
 * vPIC has an interrupt for it; with none runnable the CPU sleeps.
 * Before it enters a vCPU or sleeps, the loop arms the hypervisor's
 * one-shot timer for the next event (the nearest alarm of any guest, or
 * the slice's end when another vCPU waits): there is no periodic tick.
 * selftest=two-guests alternates two guests by exit counts instead, to
 * show that their devices and shadows are their own.
 */
#include "run.h"
#include "vcpu.h"
#include "pcpu.h"
#include "console.h"
#include "stop.h"
#include "io.h"
#include "timer.h"
#include "hvlib.h"
#include "exit_codes.h"
#include "vmi_abi.h"

struct run {
	struct guest **guests;
	unsigned n;
	struct sched sched;
	/* The guest the console belongs to: its UART gets what is typed,
	 * and Ctrl-] s/r/q act on it. */
	struct guest *console;
	bool escaped;		/* Ctrl-] seen, the command comes next */
	struct guest *last_ended;
	/* The vCPU whose last exit left the loop nothing to do (quiet_exit):
	 * entered again at once. */
	struct vcpu *again;
	/* The vCPU that made the last exit (charge_alarm_work). */
	struct vcpu *ran;
};

static bool alive(const struct guest *g)
{
	return g->state == GUEST_RUNNING;
}

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

static const char *guest_state_name(const struct guest *g)
{
	switch (g->state) {
	case GUEST_RUNNING: return sched_state_name(g->vcpus[0]->sched.state);
	case GUEST_STOPPED: return "stopped";
	case GUEST_REBOOTED: return "rebooted";
	case GUEST_SHUT_DOWN: return "shut down";
	}
	return "?";
}

static void list_guests(const struct run *r)
{
	kprintf("vmi-hv: %u guest%s (Ctrl-] N gives guest N the console):\n", r->n,
		r->n == 1 ? "" : "s");
	for (unsigned i = 0; i < r->n; i++) {
		const struct guest *g = r->guests[i];

		kprintf("    %c %u %-15s %-9s weight %u, %llu exits\n",
			g == r->console ? '*' : ' ', i + 1, g->name, guest_state_name(g),
			g->weight, (unsigned long long)g->vcpus[0]->stats.exits);
	}
}

/*
 * Where every vCPU's time went since its guest started, in TSC cycles:
 * REAL = AVAILABLE (running + halted) + STOLEN (runnable, not running),
 * exactly, all read at one instant.
 */
static void print_times(const struct run *r)
{
	const uint64_t now = rdtsc();

	for (unsigned i = 0; i < r->n; i++) {
		const struct guest *g = r->guests[i];

		for (unsigned j = 0; j < g->nr_vcpus; j++) {
			struct sched_times t = sched_times(&g->vcpus[j]->sched, now);
			uint64_t real_ms = tsc_to_us(t.real) / 1000, stolen_ms = tsc_to_us(t.stolen) / 1000;

			const struct sched_entity *e = &g->vcpus[j]->sched;

			kprintf("vmi-hv: vcpu time: guest %u (%s) vcpu %u: real=%llu available=%llu stolen=%llu cycles (running=%llu halted=%llu); %llu of %llu ms stolen; %llu alarms (at worst %llu us late, %llu us on average), %llu wake-ups (%llu took the CPU at once)\n",
				i + 1, g->name, j, (unsigned long long)t.real,
				(unsigned long long)(t.running + t.halted), (unsigned long long)t.stolen,
				(unsigned long long)t.running, (unsigned long long)t.halted,
				(unsigned long long)stolen_ms, (unsigned long long)real_ms,
				(unsigned long long)g->valarm.count,
				(unsigned long long)tsc_to_us(g->valarm.max_late),
				(unsigned long long)valarm_mean_late_us(&g->valarm),
				(unsigned long long)e->wakeups, (unsigned long long)e->preemptions);
		}
	}
}

static void focus(struct run *r, unsigned n)
{
	if (n < 1 || n > r->n) {
		kprintf("vmi-hv: no guest %u (there %s %u)\n", n, r->n == 1 ? "is" : "are", r->n);
		return;
	}
	if (!alive(r->guests[n - 1])) {
		kprintf("vmi-hv: guest %u (%s) has ended; the console stays with %s\n", n,
			r->guests[n - 1]->name, r->console ? r->console->name : "nobody");
		return;
	}
	r->console = r->guests[n - 1];
	vga_show(&r->console->screen);
	kprintf("vmi-hv: console input goes to guest %u (%s)\n", n, r->console->name);
}

static void console_commands(struct run *r)
{
	struct guest *g = r->console;
	int c;

	if (!g || !alive(g))
		return;
	while ((c = console_getc()) >= 0) {
		if (!r->escaped) {
			r->escaped = c == CONSOLE_ESCAPE;
			if (!r->escaped)
				vuart_receive(&g->vuart, (uint8_t)c);
			continue;
		}
		r->escaped = false;
		if (c == CONSOLE_ESCAPE) {
			vuart_receive(&g->vuart, (uint8_t)c);
		} else if (c == 's') {
			kprintf("vmi-hv: statistics (guest running, hypervisor up %llu ms, %llu timer interrupts):\n",
				(unsigned long long)hv_uptime_ms(),
				(unsigned long long)hv_timer_interrupts());
			vcpu_print_counters(g->vcpus[0]);
			print_times(r);
		} else if (c == 'r') {
			vcpu_mmu_reset_peaks(g->vcpus[0]);
		} else if (c == 'q') {
			vcpu_stop(g->vcpus[0], "stopped from the console (Ctrl-] q)");
		} else if (c >= '1' && c <= '9') {
			focus(r, (unsigned)(c - '0'));
			g = r->console;
		} else if (c == 'l') {
			list_guests(r);
		}
	}
}

/*
 * The vCPU `ran` left the guest for a hardware interrupt, and the loop
 * found guest g's alarm due: the timer interrupt was g's, so the cycles
 * from that exit to now (the interrupt, the world switch, the poll) are
 * g's too, not the interrupted vCPU's (docs/HV.md, "Rates a guest
 * controls").
 */
static void charge_alarm_work(struct run *r, struct vcpu *ran, struct guest *g)
{
	uint64_t exit_tsc = this_pcpu()->exit_tsc, now = rdtsc();

	if (!ran || ran->guest == g || !exit_tsc || now <= exit_tsc ||
	    ran->exit_vector < 32 || ran->exit_vector == VMI_HYPERCALL_VECTOR)
		return;
	g->valarm.charged += sched_charge(&ran->sched, &g->vcpus[0]->sched, now - exit_tsc, now);
}

/* With interrupts off: expired alarms into their vPICs, console lines
 * held back long enough out, console input.  ran: the vCPU whose exit
 * brought the loop round, if any. */
static void poll_devices(struct run *r, struct vcpu *ran)
{
	for (unsigned i = 0; i < r->n; i++)
		if (alive(r->guests[i])) {
			if (valarm_poll(&r->guests[i]->valarm, &r->guests[i]->vcpus[0]->sched))
				charge_alarm_work(r, ran, r->guests[i]);
			console_guest_flush_due(&r->guests[i]->vuart.console, rdtsc());
		}
	console_commands(r);
}

static void start(struct guest *g, bool several)
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

/* Report the guests that died since the last look; the console moves on
 * to a guest still alive. */
static void reap(struct run *r)
{
	for (unsigned i = 0; i < r->n; i++) {
		struct guest *g = r->guests[i];

		if (alive(g) || g->end_reported)
			continue;
		for (unsigned j = 0; j < g->nr_vcpus; j++)
			sched_gone(&r->sched, &g->vcpus[j]->sched, rdtsc());
		console_guest_flush(&g->vuart.console);
		if (r->n > 1) {
			unsigned left = 0;

			for (unsigned j = 0; j < r->n; j++)
				left += alive(r->guests[j]);
			kprintf("\nvmi-hv: guest %u (%s) has ended; %u other%s go%s on\n", i + 1, g->name,
				left, left == 1 ? "" : "s", left == 1 ? "es" : "");
		}
		guest_report_end(g);
		r->last_ended = g;
	}
	if (r->console && !alive(r->console)) {
		r->console = 0;
		for (unsigned i = 0; i < r->n && !r->console; i++)
			if (alive(r->guests[i]))
				r->console = r->guests[i];
		if (r->console && r->n > 1)
			vga_show(&r->console->screen);
	}
}

/*
 * Make sure the loop comes round by the next event: the nearest alarm of
 * any live guest (it may wake a halted vCPU, which may preempt the
 * running one), the running vCPU's slice end when another waits, or a
 * console line held back long enough.
 * Everything else that needs the loop (console input) interrupts anyway.
 */
static void arm_next_event(struct run *r, uint64_t now)
{
	uint64_t next = sched_next_event(&r->sched);

	for (unsigned i = 0; i < r->n; i++) {
		struct guest *g = r->guests[i];
		uint64_t at;

		if (!alive(g))
			continue;
		at = valarm_next(&g->valarm, &g->vcpus[0]->sched, now);
		if (at < next)
			next = at;
		at = console_guest_flush_at(&g->vuart.console);
		if (at < next)
			next = at;
	}
	if (next != UINT64_MAX)
		hv_timer_arm(next);
}

/*
 * Enter v, again and again, until it has made `exits` more exits or its
 * guest dies; while it is halted, sleep until an interrupt (a device
 * poll after each) makes it runnable.  A guest's death comes back here
 * through run_jmp from wherever in the exit handling it happened.
 */
static void run_vcpu(struct run *r, struct vcpu *v, uint64_t exits)
{
	struct pcpu *c = this_pcpu();
	/* volatile: read again after a longjmp. */
	const volatile uint64_t until = exits > UINT64_MAX - v->stats.exits ? UINT64_MAX :
			       v->stats.exits + exits;

	if (hv_setjmp(&c->run_jmp)) {
		reap(r);
		return;
	}
	while (alive(v->guest) && v->stats.exits < until) {
		irq_disable();
		poll_devices(r, 0);
		if (!alive(v->guest))
			break;
		if (v->halted) {
			if (vpic_pending(&v->guest->vpic)) {
				v->halted = false;
				continue;
			}
			arm_next_event(r, rdtsc());
			c->exit_tsc = 0;	/* sleeping is not exit handling */
			/* sti takes effect after hlt has begun: no wake-up is
			 * lost between the poll and the halt. */
			__asm__ volatile("sti; hlt; cli" ::: "memory");
			continue;
		}
		arm_next_event(r, rdtsc());
		vcpu_run_once(v);
	}
}

__attribute__((noreturn)) static void no_guest_left(struct run *r)
{
	bool stopped = false;

	for (unsigned i = 0; i < r->n; i++)
		stopped |= r->guests[i]->state == GUEST_STOPPED;
	if (stopped || !r->last_ended)
		guests_after_stop(r->guests, r->n);
	if (r->last_ended->state == GUEST_REBOOTED)
		hv_stop(HV_EXIT_GUEST_REBOOT, "guest reboot");
	hv_stop(HV_EXIT_GUEST_SHUTDOWN, "guest shutdown");
}

/* Halted vCPUs with an interrupt to take become runnable again. */
static void wake_halted(struct run *r, uint64_t now)
{
	for (unsigned i = 0; i < r->n; i++) {
		struct guest *g = r->guests[i];

		if (!alive(g))
			continue;
		for (unsigned j = 0; j < g->nr_vcpus; j++) {
			struct vcpu *v = g->vcpus[j];

			if (v->halted && vpic_pending(&g->vpic)) {
				v->halted = false;
				sched_wake(&r->sched, &v->sched, now);
			}
		}
	}
}

/* What the loop decides from, as it was before an entry (quiet_exit). */
struct loop_inputs {
	uint64_t alarm_changes;
	uint64_t flush_at;
	bool alarm_irq_latched;
};

static void note_loop_inputs(const struct vcpu *v, struct loop_inputs *in)
{
	in->alarm_changes = v->guest->valarm.changes;
	in->alarm_irq_latched = valarm_irq_latched(&v->guest->valarm);
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
 *   - an alarm set or cancelled, IRQ0's request taken or latched (the
 *     alarms wake nobody while it is latched: valarm_next()), or a console
 *     line started (the timer must be armed for them);
 *   - a halt, or the guest's end (which comes back through run_jmp).
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
	return now.alarm_changes == before->alarm_changes && now.flush_at == before->flush_at &&
	       now.alarm_irq_latched == before->alarm_irq_latched;
}

/*
 * One turn of the loop: poll, let the scheduler choose, enter that vCPU
 * once; or, after a quiet exit, enter the same vCPU again at once.  A
 * guest's death comes back here through run_jmp from wherever in the
 * exit handling (or the console) it happened.
 */
static void step(struct run *r)
{
	struct pcpu *c = this_pcpu();
	struct loop_inputs before;
	struct sched_entity *e;
	struct vcpu *v;

	if (hv_setjmp(&c->run_jmp)) {
		r->again = 0;
		reap(r);
		return;
	}
	irq_disable();
	v = r->again;
	r->again = 0;
	if (!v) {
		poll_devices(r, r->ran);
		wake_halted(r, rdtsc());
		e = sched_pick(&r->sched, rdtsc());
		arm_next_event(r, rdtsc());
		if (!e) {
			bool any = false;

			for (unsigned i = 0; i < r->n; i++)
				any |= alive(r->guests[i]);
			if (!any)
				no_guest_left(r);
			c->exit_tsc = 0;	/* sleeping is not exit handling */
			/* sti takes effect after hlt has begun: no wake-up is
			 * lost between the poll and the halt. */
			__asm__ volatile("sti; hlt; cli" ::: "memory");
			return;
		}
		v = e->owner;
	}
	note_loop_inputs(v, &before);
	r->ran = 0;		/* until it has exited */
	vcpu_run_once(v);
	r->ran = v;
	if (v->halted) {
		sched_halt(&r->sched, &v->sched, rdtsc());
		/* Idle: what it printed of a line (a prompt) is complete. */
		console_guest_flush(&v->guest->vuart.console);
	}
	if (quiet_exit(v, &before)) {
		r->again = v;
		v->stats.quiet_exits++;
	}
}

void run_guests(struct guest **guests, unsigned n, uint32_t slice_us)
{
	struct run r = { .guests = guests, .n = n, .console = n ? guests[0] : 0 };

	sched_init(&r.sched, udiv64(tsc_hz() * slice_us, 1000000));
	for (unsigned i = 0; i < n; i++) {
		start(guests[i], n > 1);
		for (unsigned j = 0; j < guests[i]->nr_vcpus; j++)
			if (!sched_add(&r.sched, &guests[i]->vcpus[j]->sched, guests[i]->vcpus[j],
				       guests[i]->weight, rdtsc()))
				hv_panic("more vCPUs than the scheduler takes (%u)", SCHED_MAX);
	}
	if (n > 1) {
		vga_show(&r.console->screen);
		log_info("%u guests share the CPU: %u us slices, shares by weight; Ctrl-] N gives guest N the console and its VGA screen, Ctrl-] l lists them",
			 n, slice_us);
	}
	for (;;)
		step(&r);
}

/* selftest=two-guests */

struct snapshot {
	uint64_t exits, uart_bytes;
	bool paravirtual;
	uint8_t vpic_base[2], vpic_imr[2];
	unsigned shadow_pages;
	uint32_t shadow_cr3;
};

static void snap(const struct guest *g, struct snapshot *s)
{
	const struct vcpu *v = g->vcpus[0];

	s->exits = v->stats.exits;
	s->paravirtual = v->paravirtual;
	s->uart_bytes = g->vuart.tx_bytes;
	for (int i = 0; i < 2; i++) {
		s->vpic_base[i] = g->vpic.chips[i].base;
		s->vpic_imr[i] = g->vpic.chips[i].imr;
	}
	s->shadow_pages = g->shadow.stats.pages_in_use;
	s->shadow_cr3 = v->shadows_active ? vcpu_mmu_cr3(v) : 0;
}

static void show(const char *when, const struct guest *g, const struct snapshot *s)
{
	kprintf("vmi-hv: selftest two-guests: %s: %s: %llu exits, %s, vpic bases %02x/%02x masks %02x/%02x, %llu COM1 bytes, %u shadow pages (shadow cr3 %08x), memory at machine %08x\n",
		when, g->name, (unsigned long long)s->exits,
		s->paravirtual ? "paravirtual" : "not yet paravirtual",
		s->vpic_base[0], s->vpic_base[1], s->vpic_imr[0], s->vpic_imr[1],
		(unsigned long long)s->uart_bytes, s->shadow_pages, s->shadow_cr3,
		g->mem.p2m[0] << 12);
}

static bool same(const struct snapshot *a, const struct snapshot *b)
{
	return a->exits == b->exits && a->uart_bytes == b->uart_bytes &&
	       a->paravirtual == b->paravirtual && a->shadow_pages == b->shadow_pages &&
	       a->shadow_cr3 == b->shadow_cr3 &&
	       !memcmp(a->vpic_base, b->vpic_base, 2) && !memcmp(a->vpic_imr, b->vpic_imr, 2);
}

/* Run one guest's vCPU for `exits` exits; the other must not change. */
static const char *turn(struct run *r, struct guest *run, struct guest *other,
			uint64_t exits, struct snapshot *srun, struct snapshot *sother)
{
	struct snapshot before;

	snap(other, &before);
	run_vcpu(r, run->vcpus[0], exits);
	if (!alive(run))
		return "a guest died during its turn";
	snap(run, srun);
	snap(other, sother);
	if (!same(&before, sother))
		return "the guest that did not run changed";
	return 0;
}

#define SELFTEST_EXITS 4000

void run_selftest_two_guests(struct guest *a, struct guest *b)
{
	struct guest *both[2] = { a, b };
	struct run r = { .guests = both, .n = 2, .console = a };
	struct snapshot sa, sb;
	const char *why = 0;

	start(a, false);
	start(b, false);
	for (int round = 0; round < 2 && !why; round++) {
		why = turn(&r, a, b, SELFTEST_EXITS, &sa, &sb);
		show(round ? "after its second turn" : "after its first turn", a, &sa);
		show(round ? "while the other ran again" : "while the other ran", b, &sb);
		if (!why && !round && (sb.exits || sb.uart_bytes || sb.vpic_imr[0] != 0xff ||
				       sb.vpic_base[0] != 0x08 || sb.shadow_pages))
			why = "the second guest's devices or shadows changed before it ever ran";
		if (why)
			break;
		why = turn(&r, b, a, SELFTEST_EXITS, &sb, &sa);
		show(round ? "after its second turn" : "after its first turn", b, &sb);
		show(round ? "while the other ran again" : "while the other ran", a, &sa);
	}
	if (!why && (!sa.paravirtual || !sb.paravirtual))
		why = "a guest did not activate VMI";
	if (!why && (!sa.shadow_pages || !sb.shadow_pages || sa.shadow_cr3 == sb.shadow_cr3))
		why = "the guests' shadows are not their own";
	if (!why && (!sa.uart_bytes || !sb.uart_bytes))
		why = "a guest's UART sent nothing";
	if (!why && a->mem.p2m[0] == b->mem.p2m[0])
		why = "the guests share memory";
	if (why)
		hv_panic("selftest two-guests failed: %s", why);
	kprintf("vmi-hv: selftest two-guests: passed: two guests from one bzImage, each entered twice; devices and shadows independent\n");
	hv_stop(HV_EXIT_DONE, "selftest two-guests done");
}
