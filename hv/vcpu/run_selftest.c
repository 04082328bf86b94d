/*
 * run_selftest.c - selftest=two-guests: two guests loaded from the same
 * bzImage, each entered in turn for a few thousand exits through the run
 * loop's step(), to show that their devices and shadows are their own.
 */
#include "run.h"
#include "run_internal.h"
#include "io.h"
#include "vcpu_state.h"
#include "vcpu_mmu.h"
#include "console.h"
#include "stop.h"
#include "hvlib.h"
#include "exit_codes.h"
#include "guest_restart.h"

#define SELFTEST_EXITS 4000
#define SELFTEST_SLICE_US 10000

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

/*
 * Run one guest for `exits` more exits, through the run loop's own step()
 * with that guest alone in the run; the other must not change.
 */
static const char *turn(struct guest *run, struct guest *other, uint64_t exits,
			struct snapshot *srun, struct snapshot *sother)
{
	struct vcpu *v = run->vcpus[0];
	const uint64_t until = v->stats.exits + exits;
	struct run r;
	struct snapshot before;

	snap(other, &before);
	run_init(&r, &run, 1, SELFTEST_SLICE_US);
	r.ncpus = r.sched.ncpus = 1;	/* the boot CPU alone steps this run */
	while (guest_alive(run) && v->stats.exits < until)
		run_step(&r);
	if (!guest_alive(run))
		return "a guest died during its turn";
	snap(run, srun);
	snap(other, sother);
	if (!same(&before, sother))
		return "the guest that did not run changed";
	return 0;
}

void run_selftest_two_guests(struct guest *a, struct guest *b)
{
	struct snapshot sa, sb;
	const char *why = 0;

	irq_disable();
	spin_lock(&sched_lock);	/* as run_guests: run_step is called with it */
	guest_start(a, false);
	guest_start(b, false);
	for (int round = 0; round < 2 && !why; round++) {
		why = turn(a, b, SELFTEST_EXITS, &sa, &sb);
		show(round ? "after its second turn" : "after its first turn", a, &sa);
		show(round ? "while the other ran again" : "while the other ran", b, &sb);
		if (!why && !round && (sb.exits || sb.uart_bytes || sb.vpic_imr[0] != 0xff ||
				       sb.vpic_base[0] != 0x08 || sb.shadow_pages))
			why = "the second guest's devices or shadows changed before it ever ran";
		if (why)
			break;
		why = turn(b, a, SELFTEST_EXITS, &sb, &sa);
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
