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
 * There is no scheduler: the loop runs the first live guest until it
 * dies.  selftest=two-guests alternates two guests by exit counts to
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

struct run {
	struct guest **guests;
	unsigned n;
	/* The guest the console belongs to: its UART gets what is typed,
	 * and Ctrl-] s/r/q act on it. */
	struct guest *console;
	bool escaped;		/* Ctrl-] seen, the command comes next */
	struct guest *last_ended;
};

static bool alive(const struct guest *g)
{
	return g->state == GUEST_RUNNING;
}

/*
 * The hypervisor's console while guests run (what arrives on COM1 and
 * what is typed on the keyboard, console_getc): the escape character
 * Ctrl-] (0x1d) followed by
 *     s  print the statistics, the guest keeps running;
 *     r  restart the peaks (shadow pages) at the current figures, so that
 *        the next 's' shows the peak of what ran in between;
 *     q  stop the guest (the loop then reports it).
 * Everything else goes to the console guest's virtual UART (an escape
 * followed by another escape sends one Ctrl-] to the guest).
 */
#define CONSOLE_ESCAPE 0x1d

static void console_commands(struct run *r)
{
	struct guest *g = r->console;
	struct vcpu *v;
	int c;

	if (!g || !alive(g))
		return;
	v = g->vcpus[0];
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
			kprintf("vmi-hv: statistics (guest running, hypervisor tick %llu):\n",
				(unsigned long long)hv_ticks());
			vcpu_print_counters(v);
		} else if (c == 'r') {
			vcpu_mmu_reset_peaks(v);
		} else if (c == 'q') {
			vcpu_stop(v, "stopped from the console (Ctrl-] q)");
		}
	}
}

/* With interrupts off: expired alarms into their vPICs, console input. */
static void poll_devices(struct run *r)
{
	for (unsigned i = 0; i < r->n; i++)
		if (alive(r->guests[i]))
			valarm_poll(&r->guests[i]->valarm);
	console_commands(r);
}

static void start(struct guest *g)
{
	guest_devices_reset(g);
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
		guest_report_end(g);
		r->last_ended = g;
	}
	if (r->console && !alive(r->console)) {
		r->console = 0;
		for (unsigned i = 0; i < r->n && !r->console; i++)
			if (alive(r->guests[i]))
				r->console = r->guests[i];
	}
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
		poll_devices(r);
		if (!alive(v->guest))
			break;
		if (v->halted) {
			if (vpic_pending(&v->guest->vpic)) {
				v->halted = false;
				continue;
			}
			/* sti takes effect after hlt has begun: no wake-up is
			 * lost between the poll and the halt. */
			__asm__ volatile("sti; hlt; cli" ::: "memory");
			continue;
		}
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

void run_guests(struct guest **guests, unsigned n)
{
	struct run r = { .guests = guests, .n = n, .console = n ? guests[0] : 0 };

	for (unsigned i = 0; i < n; i++)
		start(guests[i]);
	for (;;) {
		struct vcpu *v = 0;

		for (unsigned i = 0; i < n && !v; i++)
			if (alive(guests[i]))
				v = guests[i]->vcpus[0];
		if (!v)
			no_guest_left(&r);
		run_vcpu(&r, v, UINT64_MAX);
	}
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

	start(a);
	start(b);
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
