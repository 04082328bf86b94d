/* Unit tests for the vCPU scheduler and its time accounting
 * (hv/sched/sched.c): turns among equals, weights as shares, halts and
 * wake-ups (a woken vCPU preempts a busy one, but sleeping banks no
 * credit), ended vCPUs, when the scheduler needs the CPU back.
 *
 * The accounting is checked against a ledger of the test's own, not
 * against sums of the scheduler's counters (sched_times() adds up real
 * from the parts, so running + halted + stolen == real cannot fail): the
 * test keeps its own clock and, for each vCPU, what the scheduler told
 * it (who sched_pick() gave the CPU) and what it did itself (halts,
 * wake-ups, ends), and charges each stretch of time to the state the
 * vCPU was in.  The scheduler's running, halted and stolen must equal
 * the ledger's at every check. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "sched.h"

#define SLICE 1000u

static struct sched s;
static struct sched_entity e[3];
static int owners[3];

/* The test's ledger: per vCPU the state it is in by what the scheduler
 * said and the test did, and the time charged to each state. */
enum { L_RUNNING, L_WAITING, L_HALTED, L_ENDED };
static struct {
	int state;
	uint64_t running, waiting, halted;
} book[3];
static uint64_t book_now;

static void advance(uint64_t now)
{
	assert_true(now >= book_now);	/* the test's own clock never runs back */
	for (unsigned i = 0; i < s.n; i++) {
		uint64_t d = now - book_now;

		switch (book[i].state) {
		case L_RUNNING: book[i].running += d; break;
		case L_WAITING: book[i].waiting += d; break;
		case L_HALTED:  book[i].halted += d; break;
		}
	}
	book_now = now;
}

static void add(unsigned n, const unsigned *weights)
{
	sched_init(&s, SLICE, 1);
	book_now = 0;
	for (unsigned i = 0; i < n; i++) {
		assert_true(sched_add(&s, &e[i], &owners[i], weights ? weights[i] : 1, 0));
		book[i].state = L_WAITING;	/* added runnable, at 0 */
		book[i].running = book[i].waiting = book[i].halted = 0;
	}
}

/* sched_pick(), and into the ledger: the one picked runs, one that ran
 * and is still runnable waits. */
static struct sched_entity *pick(uint64_t now)
{
	struct sched_entity *p;

	advance(now);
	p = sched_pick(&s, 0, now);
	for (unsigned i = 0; i < s.n; i++) {
		if (p == &e[i])
			book[i].state = L_RUNNING;
		else if (book[i].state == L_RUNNING)
			book[i].state = L_WAITING;
	}
	if (!p)
		for (unsigned i = 0; i < s.n; i++)
			assert_true(book[i].state != L_WAITING);	/* 0 only when nobody can run */
	return p;
}

static void halt(unsigned i, uint64_t now)
{
	advance(now);
	sched_halt(&s, &e[i], now);
	if (book[i].state != L_ENDED)
		book[i].state = L_HALTED;
}

static void wake(unsigned i, uint64_t now)
{
	advance(now);
	sched_wake(&s, &e[i], now);
	if (book[i].state == L_HALTED)
		book[i].state = L_WAITING;
}

static void end(unsigned i, uint64_t now)
{
	advance(now);
	sched_gone(&s, &e[i], now);
	book[i].state = L_ENDED;
}

/* The scheduler's accounting at now equals the ledger's; STOLEN is the
 * waiting, AVAILABLE the rest of the time since it was added. */
static void exact(uint64_t now)
{
	advance(now);
	for (unsigned i = 0; i < s.n; i++) {
		struct sched_times t = sched_times(&e[i], now);
		uint64_t lived = book[i].running + book[i].waiting + book[i].halted;

		assert_int_equal(t.running, book[i].running);
		assert_int_equal(t.halted, book[i].halted);
		assert_int_equal(t.stolen, book[i].waiting);
		assert_int_equal(t.real, lived);
		if (book[i].state != L_ENDED)
			assert_int_equal(lived, now);	/* added at 0 */
		assert_int_equal(sched_stolen(&e[i], now), book[i].waiting);
		assert_int_equal(sched_available(&e[i], now), now - book[i].waiting);
	}
}

static void round_robin_turns(void **state)
{
	add(3, 0);
	assert_ptr_equal(pick(0), &e[0]);
	assert_ptr_equal(pick(SLICE - 1), &e[0]);	/* still its slice */
	assert_ptr_equal(pick(SLICE), &e[1]);
	assert_ptr_equal(pick(2 * SLICE), &e[2]);
	assert_ptr_equal(pick(3 * SLICE), &e[0]);
	assert_ptr_equal(e[0].owner, &owners[0]);
	exact(3 * SLICE + 5);
	/* Each waited two slices of the three. */
	assert_int_equal(sched_stolen(&e[1], 3 * SLICE), 2 * SLICE);
}

static void weights_are_shares(void **state)
{
	const unsigned w[2] = { 1, 3 };
	uint64_t now = 0;

	add(2, w);
	for (int i = 0; i < 400; i++, now += SLICE / 4)
		pick(now);
	exact(now);
	/* 3 to 1, to within a slice. */
	struct sched_times a = sched_times(&e[0], now), b = sched_times(&e[1], now);
	assert_true(b.running > 2 * a.running);
	assert_true(b.running < 4 * a.running + 4 * SLICE);
}

/* Both busy at weights 2:1 for 300 slices: shares 2:1 to within a slice
 * or two, whatever the order of the picks. */
static void weights_two_to_one(void **state)
{
	const unsigned w[2] = { 2, 1 };
	uint64_t now = 0;

	add(2, w);
	for (int i = 0; i < 3000; i++, now += SLICE / 10)
		pick(now);
	exact(now);
	struct sched_times a = sched_times(&e[0], now), b = sched_times(&e[1], now);
	int64_t off = (int64_t)a.running - 2 * (int64_t)b.running;
	assert_true(off <= 2 * (int64_t)SLICE && off >= -2 * (int64_t)SLICE);
}

/* e[1] sleeps most of the time and wakes briefly while e[0] spins: each
 * wake-up takes the CPU at the next pick, so e[1] waits (has stolen
 * time) for nothing, and e[0] still gets nearly all the time. */
static void waking_preempts(void **state)
{
	uint64_t now = 0;

	add(2, 0);
	assert_ptr_equal(pick(now), &e[0]);
	assert_ptr_equal(pick(++now), &e[0]);
	/* e[1] starts halted: it was added runnable, so give it one turn. */
	for (; pick(now) != &e[1]; now += SLICE / 10)
		;
	halt(1, now);
	for (int i = 0; i < 50; i++) {
		now += 3 * SLICE + SLICE / 3;	/* mid-slice of e[0] */
		assert_ptr_equal(pick(now), &e[0]);
		wake(1, now);
		assert_ptr_equal(pick(now), &e[1]);
		halt(1, now + 7);
		assert_ptr_equal(pick(now + 7), &e[0]);
		now += 7;
	}
	exact(now);
	assert_int_equal(e[1].preemptions, 50);
	uint64_t stolen_before = sched_stolen(&e[1], now);
	wake(1, now + 1);
	pick(now + 1);
	assert_int_equal(sched_stolen(&e[1], now + 1), stolen_before);
}

/* e[1] halted for 100 slices while e[0] ran; then both are busy.  The
 * sleeper may run first, but it cannot claim the 100 slices: e[0] gets
 * about half of what follows. */
static void sleeping_banks_no_credit(void **state)
{
	uint64_t now = 0, ran0;

	add(2, 0);
	pick(now);
	now += SLICE;
	assert_ptr_equal(pick(now), &e[1]);
	halt(1, now);
	for (int i = 0; i < 1000; i++, now += SLICE / 10)
		assert_ptr_equal(pick(now), &e[0]);
	wake(1, now);
	ran0 = sched_times(&e[0], now).running;
	for (int i = 0; i < 200; i++, now += SLICE / 10)
		pick(now);
	/* 20 slices: e[0] at least 9 of them. */
	assert_true(sched_times(&e[0], now).running - ran0 >= 9 * SLICE);
	exact(now);
}

/* The run loop arms its timer for sched_next_event(): the slice's end
 * only while another vCPU waits. */
static void next_event_only_when_contended(void **state)
{
	add(2, 0);
	assert_int_equal(sched_next_event(&s, 0), UINT64_MAX);	/* nobody runs */
	pick(0);
	assert_int_equal(sched_next_event(&s, 0), SLICE);		/* e[1] waits */
	halt(1, 10);				/* never ran: fine */
	assert_true(sched_next_event(&s, 0) == UINT64_MAX);	/* alone */
	wake(1, 20);
	assert_true(sched_next_event(&s, 0) <= SLICE);
}

static void halted_is_not_runnable(void **state)
{
	add(2, 0);
	assert_ptr_equal(pick(0), &e[0]);
	halt(0, 100);
	assert_ptr_equal(pick(100), &e[1]);
	halt(1, 200);
	assert_null(pick(300));		/* the CPU may sleep */
	exact(400);
	wake(0, 500);
	assert_ptr_equal(pick(500), &e[0]);
	/* e[0]: ran 100, halted 400; never waited. */
	struct sched_times t = sched_times(&e[0], 500);
	assert_int_equal(t.running, 100);
	assert_int_equal(t.halted, 400);
	assert_int_equal(t.stolen, 0);
	/* e[1] waited 100 before its first turn. */
	assert_int_equal(sched_stolen(&e[1], 500), 100);
	exact(600);
}

static void alone_keeps_the_cpu(void **state)
{
	add(2, 0);
	pick(0);
	end(1, 10);
	end(1, 20);			/* twice is harmless */
	for (uint64_t now = 20; now < 10 * SLICE; now += SLICE)
		assert_ptr_equal(pick(now), &e[0]);
	assert_int_equal(sched_stolen(&e[0], 10 * SLICE), 0);
	assert_int_equal(sched_times(&e[1], 10 * SLICE).real, 10);	/* its clock stopped */
	exact(10 * SLICE);
}

/* e[0] runs; 300 of its cycles were e[1]'s alarm work (e[1] halted):
 * they are stolen from e[0], e[1]'s virtual runtime grows by them, and
 * the sums stay exact.  Never more than e[0] ran; never to itself. */
/* sched_charge(), and into the ledger: what `from` ran that was moved
 * becomes its waiting. */
static uint64_t charge(unsigned from, unsigned to, uint64_t cycles, uint64_t now)
{
	uint64_t moved;

	advance(now);
	moved = sched_charge(&e[from], &e[to], cycles, now);
	book[from].running -= moved;
	book[from].waiting += moved;
	return moved;
}

static void alarm_work_charged_to_its_owner(void **state)
{
	uint64_t vr1;
	struct sched_times t;

	add(2, 0);
	assert_ptr_equal(pick(0), &e[0]);
	halt(1, 0);
	vr1 = e[1].vruntime;
	assert_int_equal(charge(0, 1, 300, 800), 300);
	exact(800);
	t = sched_times(&e[0], 1000);
	assert_int_equal(t.running, 700);
	assert_int_equal(t.stolen, 300);
	assert_int_equal(e[1].vruntime - vr1, 300);
	assert_int_equal(e[0].vruntime, 500);
	assert_int_equal(charge(0, 1, 5000, 1000), 700);	/* what it ran */
	assert_int_equal(charge(0, 0, 10, 1000), 0);
	assert_int_equal(charge(1, 0, 10, 1000), 0);	/* not running */
	exact(1200);
}

/* A guest that rebooted: its entity, gone, comes back in the same slot,
 * runnable, with its times from the rejoin on; the scheduler stays full
 * at SCHED_MAX however often guests reboot. */
static void rejoin_after_reboot(void **state)
{
	struct sched_entity stranger;
	struct sched_times t;

	add(2, 0);
	assert_ptr_equal(sched_pick(&s, 0, 0), &e[0]);
	sched_gone(&s, &e[0], 400);
	assert_ptr_equal(sched_pick(&s, 0, 400), &e[1]);
	for (unsigned i = 0; i < 3 * SCHED_MAX; i++)
		assert_true(sched_rejoin(&s, &e[0], &owners[0], 2, 1000 + i));
	assert_int_equal(s.n, 2);
	assert_int_equal(e[0].state, SCHED_READY);
	assert_int_equal(e[0].weight, 2);
	t = sched_times(&e[0], 2000);
	assert_int_equal(t.real, 2000 - (1000 + 3 * SCHED_MAX - 1));
	assert_int_equal(t.stolen, t.real);	/* runnable while e[1] runs */
	assert_false(sched_rejoin(&s, &stranger, 0, 1, 2000));
	assert_ptr_equal(sched_pick(&s, 0, 2000 + SLICE), &e[0]);	/* e[1]'s slice is over */
}

static void full(void **state)
{
	struct sched_entity extra[SCHED_MAX + 1];

	sched_init(&s, SLICE, 1);
	for (unsigned i = 0; i < SCHED_MAX; i++)
		assert_true(sched_add(&s, &extra[i], 0, 1, 0));
	assert_false(sched_add(&s, &extra[SCHED_MAX], 0, 1, 0));
}

/* Several CPUs, each with its queue: ncpus CPUs, n busy vCPUs of the
 * given weights, each CPU asking sched_pick() at its own slice ends
 * (staggered, as real CPUs are); the running cycles each vCPU got. */
static struct sched_entity me[8];

static void simulate(unsigned ncpus, unsigned n, const unsigned *weights, uint64_t until,
		     uint64_t *ran)
{
	struct sched_entity *on[SCHED_MAX_CPUS] = { 0 };
	uint64_t next[SCHED_MAX_CPUS];

	sched_init(&s, SLICE, ncpus);
	for (unsigned i = 0; i < n; i++)
		assert_true(sched_add(&s, &me[i], &owners[0], weights[i], 0));
	for (unsigned c = 0; c < ncpus; c++)
		next[c] = c * SLICE / ncpus;
	for (;;) {
		unsigned c = 0;

		for (unsigned k = 1; k < ncpus; k++)
			if (next[k] < next[c])
				c = k;
		if (next[c] >= until)
			break;
		on[c] = sched_pick(&s, c, next[c]);
		assert_non_null(on[c]);
		for (unsigned k = 0; k < ncpus; k++)	/* never one vCPU on two CPUs */
			if (k != c)
				assert_true(on[k] != on[c] || on[k]->cpu == (int)k);
		assert_int_equal(on[c]->cpu, c);
		for (unsigned i = 0; i < n; i++) {	/* each in one CPU's queue */
			assert_true(me[i].rq >= 0 && me[i].rq < (int)ncpus);
			if (me[i].state == SCHED_RUNNING)
				assert_int_equal(me[i].rq, me[i].cpu);
		}
		next[c] = s.cpu[c].slice_end;
	}
	for (unsigned i = 0; i < n; i++)
		ran[i] = sched_times(&me[i], until).running;
}

/* Two busy vCPUs on two CPUs: each has a CPU all the time, no steal. */
static void two_cpus_two_busy(void **state)
{
	const unsigned w[2] = { 1, 1 };
	uint64_t ran[2];

	simulate(2, 2, w, 1000 * SLICE, ran);
	for (unsigned i = 0; i < 2; i++) {
		assert_true(ran[i] >= 1000 * SLICE - SLICE);
		assert_true(sched_stolen(&me[i], 1000 * SLICE) <= SLICE);
	}
}

/* Four busy vCPUs, weights 2:1:1:1, on two CPUs: 40/20/20/20 of the two
 * CPUs (the weight-2 one gets 0.8 of a CPU), within 2 points; each
 * migrates between the CPUs. */
static void two_cpus_weights_hold(void **state)
{
	const unsigned w[4] = { 2, 1, 1, 1 };
	const uint64_t until = 10000 * SLICE;
	uint64_t ran[4], total = 2 * until;

	simulate(2, 4, w, until, ran);
	for (unsigned i = 0; i < 4; i++) {
		uint64_t want = i == 0 ? 40 : 20, got = ran[i] * 100 / total;

		print_message("vCPU %u (weight %u): %llu%% of two CPUs, %llu migrations\n", i, w[i],
			      (unsigned long long)got, (unsigned long long)me[i].migrations);
		assert_true(got + 2 >= want && got <= want + 2);
		assert_true(me[i].migrations > 0);
	}
}

/* Four equal busy vCPUs on two CPUs: two in each CPU's queue, each gets
 * half a CPU, and none moves. */
static void balanced_queues_stay_put(void **state)
{
	const unsigned w[4] = { 1, 1, 1, 1 };
	const uint64_t until = 10000 * SLICE;
	uint64_t ran[4], moved = 0;

	simulate(2, 4, w, until, ran);
	for (unsigned i = 0; i < 4; i++) {
		uint64_t got = ran[i] * 100 / (2 * until);

		assert_true(got + 2 >= 25 && got <= 25 + 2);
		moved += me[i].migrations;
	}
	print_message("four equal vCPUs on two CPUs: %llu migrations in 10000 slices\n",
		      (unsigned long long)moved);
	assert_true(moved <= 4);
}

/* Three busy vCPUs on two CPUs: the queues cannot balance (two and one),
 * so the balancer pulls the one that falls more than a slice behind:
 * each gets two thirds of a CPU, within 2 points, and a vCPU moves at
 * most once in three slices of its CPU (one queue for all CPUs moved
 * one at every pick). */
static void uneven_queues_share_fairly(void **state)
{
	const unsigned w[3] = { 1, 1, 1 };
	const uint64_t until = 10000 * SLICE;
	uint64_t ran[3], moved = 0;

	simulate(2, 3, w, until, ran);
	for (unsigned i = 0; i < 3; i++) {
		uint64_t got = ran[i] * 100 / (2 * until);

		print_message("vCPU %u: %llu%% of two CPUs, %llu migrations, pulled %llu times\n", i,
			      (unsigned long long)got, (unsigned long long)me[i].migrations,
			      (unsigned long long)me[i].pulls);
		assert_true(got + 2 >= 33 && got <= 33 + 2);
		moved += me[i].migrations;
	}
	assert_true(moved <= 2 * 10000 / 3);
}

/* More CPUs than two: the weights hold and every CPU is used.  Five busy
 * vCPUs, weights 2:1:1:1:1, on three CPUs (the weight-2 one gets a third
 * of the three CPUs, the others a sixth each), and seven equal ones on
 * four CPUs (four sevenths of a CPU each): each within 2 points, no CPU
 * ever idle while a vCPU waits (the shares add up to the whole). */
static void more_cpus(unsigned ncpus, unsigned n, const unsigned *w, const uint64_t *want_percent)
{
	const uint64_t until = 10000 * SLICE;
	uint64_t ran[8], total = ncpus * until, all = 0;

	simulate(ncpus, n, w, until, ran);
	for (unsigned i = 0; i < n; i++) {
		uint64_t got = ran[i] * 100 / total;

		print_message("%u CPUs: vCPU %u (weight %u): %llu%% of the CPUs, %llu migrations\n", ncpus, i, w[i],
			      (unsigned long long)got, (unsigned long long)me[i].migrations);
		assert_true(got + 2 >= want_percent[i] && got <= want_percent[i] + 2);
		all += ran[i];
	}
	assert_true(all * 100 >= total * 99);
}

static void three_cpus_weights_hold(void **state)
{
	const unsigned w[5] = { 2, 1, 1, 1, 1 };
	const uint64_t want[5] = { 33, 16, 16, 16, 16 };

	more_cpus(3, 5, w, want);
}

static void four_cpus_seven_vcpus(void **state)
{
	const unsigned w[7] = { 1, 1, 1, 1, 1, 1, 1 };
	const uint64_t want[7] = { 14, 14, 14, 14, 14, 14, 14 };

	more_cpus(4, 7, w, want);
}

/* A vCPU that wakes goes to the idle CPU, not onto the busy one. */
static void wake_goes_to_the_idle_cpu(void **state)
{
	sched_init(&s, SLICE, 2);
	assert_true(sched_add(&s, &me[0], &owners[0], 1, 0));
	assert_true(sched_add(&s, &me[1], &owners[1], 1, 0));
	assert_ptr_equal(sched_pick(&s, 0, 0), &me[0]);
	assert_ptr_equal(sched_pick(&s, 1, 0), &me[1]);
	sched_halt(&s, &me[1], 10);
	assert_null(sched_pick(&s, 1, 10));		/* CPU 1 idles */
	assert_int_equal(sched_idle_cpu_for_waiting(&s, 0), -1);	/* nobody waits */
	assert_int_equal(sched_wake(&s, &me[1], 20), 1);	/* CPU 1 is told */
	assert_int_equal(sched_idle_cpu_for_waiting(&s, 0), 1);
	assert_ptr_equal(sched_pick(&s, 1, 21), &me[1]);
	assert_ptr_equal(sched_pick(&s, 0, 21), &me[0]);	/* CPU 0 kept its own */
	assert_int_equal(sched_stolen(&me[1], 21), 1);	/* woken at 20, ran at 21 */
}

/* guestN.cpus=: a vCPU allowed on CPU 1 alone never runs on CPU 0,
 * even with CPU 0 idle; two pinned to CPU 0 share it while CPU 1 takes
 * the free one; a wake-up goes to a CPU it may run on. */
static void pinned_vcpus(void **state)
{
	sched_init(&s, SLICE, 2);
	for (unsigned i = 0; i < 4; i++)
		assert_true(sched_add(&s, &me[i], &owners[0], 1, 0));
	me[0].allowed = me[1].allowed = 0x1;	/* CPU 0 only */
	me[2].allowed = 0x2;			/* CPU 1 only */
	me[3].allowed = 0;			/* anywhere */
	for (uint64_t now = 0; now < 400 * SLICE; now += SLICE) {
		struct sched_entity *a = sched_pick(&s, 0, now), *b = sched_pick(&s, 1, now);

		assert_true(a == &me[0] || a == &me[1] || a == &me[3]);
		assert_true(b == &me[2] || b == &me[3]);
		assert_true(a != b);
	}
	assert_true(sched_times(&me[2], 400 * SLICE).running > 100 * SLICE);
	sched_init(&s, SLICE, 2);
	assert_true(sched_add(&s, &me[0], &owners[0], 1, 0));
	me[0].allowed = 0x2;
	assert_null(sched_pick(&s, 0, 0));		/* not for CPU 0 */
	assert_int_equal(sched_idle_cpu_for_waiting(&s, 0), 1);
	assert_ptr_equal(sched_pick(&s, 1, 0), &me[0]);
	sched_halt(&s, &me[0], 5);
	assert_null(sched_pick(&s, 1, 5));
	assert_int_equal(sched_wake(&s, &me[0], 6), 1);
}

/* One running vCPU per guest (docs/ARCHITECTURE.md, "Who owns what on
 * several CPUs"): two vCPUs of one group never run at the same moment,
 * even with a CPU idle; a vCPU of another group takes that CPU; when the
 * running sibling halts, the other runs. */
static void one_running_vcpu_per_group(void **state)
{
	static int guest_a, guest_b;

	sched_init(&s, SLICE, 2);
	for (unsigned i = 0; i < 3; i++)
		assert_true(sched_add(&s, &me[i], &owners[0], 1, 0));
	me[0].group = me[1].group = &guest_a;
	me[2].group = &guest_b;
	for (uint64_t now = 0; now < 200 * SLICE; now += SLICE) {
		struct sched_entity *a = sched_pick(&s, 0, now), *b = sched_pick(&s, 1, now);
		bool a0 = a == &me[0] || a == &me[1], b0 = b == &me[0] || b == &me[1];

		assert_false(a0 && b0);
		assert_true(a && b);	/* guest B keeps the other CPU busy */
	}
	sched_init(&s, SLICE, 2);
	assert_true(sched_add(&s, &me[0], &owners[0], 1, 0));
	assert_true(sched_add(&s, &me[1], &owners[1], 1, 0));
	me[0].group = me[1].group = &guest_a;
	assert_ptr_equal(sched_pick(&s, 0, 0), &me[0]);
	assert_null(sched_pick(&s, 1, 0));		/* its sibling runs on CPU 0 */
	assert_int_equal(sched_idle_cpu_for_waiting(&s, 0), -1);	/* nobody CPU 1 could run */
	sched_halt(&s, &me[0], 10);
	assert_ptr_equal(sched_pick(&s, 1, 10), &me[1]);
	/* A sibling woken while the other runs, with a CPU idle: that CPU
	 * may not take it, so the running one's CPU must, in its turn. */
	sched_init(&s, SLICE, 2);
	assert_true(sched_add(&s, &me[0], &owners[0], 1, 0));
	assert_true(sched_add(&s, &me[1], &owners[1], 1, 0));
	me[0].group = me[1].group = &guest_a;
	sched_halt(&s, &me[1], 0);
	assert_ptr_equal(sched_pick(&s, 0, 0), &me[0]);
	sched_wake(&s, &me[1], 5);
	assert_null(sched_pick(&s, 1, 5));
	assert_true(sched_next_event(&s, 0) != UINT64_MAX);	/* CPU 0's slice ends for it */
	{
		uint64_t now = 5;
		struct sched_entity *got = 0;

		while (now < 10 * SLICE && (got = sched_pick(&s, 0, now)) == &me[0])
			now += SLICE / 4;
		assert_ptr_equal(got, &me[1]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_robin_turns),
		cmocka_unit_test(weights_are_shares),
		cmocka_unit_test(weights_two_to_one),
		cmocka_unit_test(waking_preempts),
		cmocka_unit_test(sleeping_banks_no_credit),
		cmocka_unit_test(next_event_only_when_contended),
		cmocka_unit_test(halted_is_not_runnable),
		cmocka_unit_test(alone_keeps_the_cpu),
		cmocka_unit_test(alarm_work_charged_to_its_owner),
		cmocka_unit_test(rejoin_after_reboot),
		cmocka_unit_test(full),
		cmocka_unit_test(two_cpus_two_busy),
		cmocka_unit_test(two_cpus_weights_hold),
		cmocka_unit_test(balanced_queues_stay_put),
		cmocka_unit_test(uneven_queues_share_fairly),
		cmocka_unit_test(three_cpus_weights_hold),
		cmocka_unit_test(four_cpus_seven_vcpus),
		cmocka_unit_test(wake_goes_to_the_idle_cpu),
		cmocka_unit_test(pinned_vcpus),
		cmocka_unit_test(one_running_vcpu_per_group),
	};
	return cmocka_run_group_tests(tests, 0, 0);
}
