/* Unit tests for wake-up preemption in the vCPU scheduler
 * (hv/sched/sched.c, sched_wake): a woken vCPU preempts a running one
 * only if it is behind it by more than the wake-up granularity, and one
 * guest's wake-ups preempt another guest's vCPUs at most
 * SCHED_WAKE_BURST times a wake-up window (a slice); a wake-up held back
 * runs at the next window, and another guest's wake-up is not held back
 * by it; a vCPU
 * woken while a vCPU of its guest runs queues on that one's CPU.
 *
 * The simulations are the hostile guest of docs/HV.md ("IPIs"): its
 * vCPUs wake each other without pause (IPI ping-pong), each running a
 * few cycles and halting, beside a busy victim.  Without the bound every
 * wake-up took the victim's CPU. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <cmocka.h>
#include "sched.h"

#define SLICE 1000u
#define GRAN (SLICE / SCHED_WAKE_GRAN_DIV)
/* The average spacing the burst bound allows: BURST per slice. */
#define EVERY (SLICE / SCHED_WAKE_BURST)
#define BURST SCHED_WAKE_BURST

static struct sched s;
static struct sched_entity e[4];
static int guest_a, guest_v, guest_b;

/* e[0] (guest V) runs on CPU 0; e[1] (guest A) halted; e[2] (guest B)
 * halted; all added at 0. */
static void setup(unsigned ncpus)
{
	sched_init(&s, SLICE, ncpus);
	for (unsigned i = 0; i < 4; i++)
		assert_true(sched_add(&s, &e[i], 0, 1, 0));
	e[0].guest = &guest_v;
	e[1].guest = e[3].guest = &guest_a;
	e[2].guest = &guest_b;
	sched_halt(&s, &e[1], 0);
	sched_halt(&s, &e[2], 0);
	sched_halt(&s, &e[3], 0);
	assert_ptr_equal(sched_pick(&s, 0, 0), &e[0]);
}

/* A wake-up within the granularity of the running vCPU waits its turn;
 * one further behind preempts at once. */
static void wake_granularity(void **state)
{
	setup(1);
	/* e[0] ran GRAN / 2 cycles, e[1] none: e[1] is behind, not by enough. */
	sched_wake(&s, &e[1], GRAN / 2);
	assert_ptr_equal(sched_pick(&s, 0, GRAN / 2), &e[0]);
	assert_int_equal(e[1].preemptions, 0);
	/* e[1] runs at e[0]'s slice end, and halts. */
	assert_ptr_equal(sched_pick(&s, 0, SLICE), &e[1]);
	sched_halt(&s, &e[1], SLICE + 10);
	assert_ptr_equal(sched_pick(&s, 0, SLICE + 10), &e[0]);
	/* Well behind now (e[0] ran on): it preempts. */
	sched_wake(&s, &e[1], 3 * SLICE);
	assert_ptr_equal(sched_pick(&s, 0, 3 * SLICE), &e[1]);
	assert_int_equal(e[1].preemptions, 1);
}

/* e[0] runs alone for 100 slices without a pick (no exit, nobody
 * waiting: no slice end); e[1] then wakes and spins.  It is placed half a
 * slice behind e[0]'s vruntime as it is then, not behind the one e[0]
 * had at its last pick: it cannot claim the 100 slices it slept, and
 * e[0] gets about half of what follows. */
static void a_long_run_without_picks_banks_nothing(void **state)
{
	uint64_t now = 100 * SLICE, ran0;

	setup(1);
	sched_wake(&s, &e[1], now);
	ran0 = sched_times(&e[0], now).running;
	for (int i = 0; i < 200; i++, now += SLICE / 10)
		sched_pick(&s, 0, now);
	/* 20 slices: e[0] at least 9 of them. */
	assert_true(sched_times(&e[0], now).running - ran0 >= 9 * SLICE);
}

/*
 * One CPU: the busy victim e[0] and e[1], woken every `period` cycles from
 * 3 slices on (e[0] then well ahead), runs `run` cycles each time and
 * halts.  The CPU asks sched_pick() at every
 * wake-up, slice end and halt, as the run loop does.  Returns how often
 * the victim lost the CPU; *waited the longest e[1] waited for it.
 */
static uint64_t ping_pong(uint64_t period, uint64_t run, uint64_t until, uint64_t *waited)
{
	struct sched_entity *on = &e[0];
	uint64_t now = 0, next_wake = 3 * SLICE, lost = 0, woken = 0;

	*waited = 0;
	while (now < until) {
		if (on == &e[1]) {
			now += run;
			sched_halt(&s, &e[1], now);
			on = sched_pick(&s, 0, now);
			assert_ptr_equal(on, &e[0]);
			continue;
		}
		now = next_wake < s.cpu[0].slice_end ? next_wake : s.cpu[0].slice_end;
		if (now == next_wake) {
			next_wake += period;
			if (e[1].state == SCHED_HALTED) {
				sched_wake(&s, &e[1], now);
				woken = now;
			}
		}
		on = sched_pick(&s, 0, now);
		assert_non_null(on);
		if (on == &e[1]) {
			lost++;
			if (now - woken > *waited)
				*waited = now - woken;
		}
	}
	return lost;
}

/* The ping-pong of a halting guest beside a busy one: the victim loses
 * its CPU at most BURST times a slice, and a wake-up held back waits at
 * most a slice. */
static void wakeups_preempt_once_per_interval(void **state)
{
	const uint64_t until = 200 * SLICE;
	uint64_t waited, lost;

	setup(1);
	lost = ping_pong(EVERY / 25, 2, until, &waited);
	print_message("wake-ups every %u cycles: the victim lost its CPU %llu times in %llu cycles, "
		      "the longest wait %llu\n", EVERY / 25, (unsigned long long)lost,
		      (unsigned long long)until, (unsigned long long)waited);
	assert_true(lost <= until / EVERY + BURST);
	assert_true(lost >= until / EVERY / 2);		/* it still runs, in its turn */
	assert_true(waited <= SLICE);
	assert_true(sched_times(&e[0], until).running >= until - lost * 2 - 2 * SLICE);
}

/* Another guest's wake-up is not held back by the first guest's bound:
 * after e[1] (guest A) preempted BURST times in this window, e[2] (guest
 * B) preempts at once; a further wake-up of guest A (e[3], its other
 * vCPU) waits for the next window, and a wake-up there preempts again. */
static void the_bound_is_per_guest(void **state)
{
	uint64_t t = 3 * SLICE;

	setup(1);
	for (unsigned k = 0; k < BURST; k++, t += 10) {
		sched_wake(&s, &e[1], t);
		assert_ptr_equal(sched_pick(&s, 0, t), &e[1]);
		sched_halt(&s, &e[1], t + 5);
		assert_ptr_equal(sched_pick(&s, 0, t + 5), &e[0]);
	}
	sched_wake(&s, &e[2], t);
	assert_ptr_equal(sched_pick(&s, 0, t), &e[2]);		/* guest B: at once */
	sched_halt(&s, &e[2], t + 5);
	assert_ptr_equal(sched_pick(&s, 0, t + 5), &e[0]);
	sched_wake(&s, &e[3], t + 10);
	assert_ptr_equal(sched_pick(&s, 0, t + 10), &e[0]);		/* guest A again: held back */
	assert_int_equal(s.cpu[0].slice_end, 4 * SLICE);
	assert_ptr_equal(sched_pick(&s, 0, 4 * SLICE), &e[3]);	/* then it runs */
	assert_int_equal(e[3].preemptions, 0);
}

/* Two CPUs: the victim e[0] on CPU 0, the attacker's e[1] on CPU 1; e[1]
 * wakes e[3] (its own guest's) and halts: e[3] queues on CPU 1, not onto
 * the victim's CPU, and runs there. */
static void wake_joins_its_own_guest(void **state)
{
	uint64_t end0;

	setup(2);
	sched_wake(&s, &e[1], 3 * SLICE);
	assert_ptr_equal(sched_pick(&s, 1, 3 * SLICE), &e[1]);
	end0 = s.cpu[0].slice_end;
	assert_true(sched_wake(&s, &e[3], 3 * SLICE + 5) != 0);	/* the victim's CPU is not told */
	assert_int_equal(s.cpu[0].slice_end, end0);
	assert_int_equal(e[3].rq, 1);
	sched_halt(&s, &e[1], 3 * SLICE + 6);
	assert_ptr_equal(sched_pick(&s, 1, 3 * SLICE + 6), &e[3]);
	assert_ptr_equal(sched_pick(&s, 0, 3 * SLICE + 6), &e[0]);
	assert_int_equal(e[0].switches_in, 1);
}

/*
 * Two CPUs: the victim e[0] busy; the attacker's vCPUs e[1] and e[3]
 * (one guest, running at once: no group) play ping-pong: each, once it
 * runs, runs `run` cycles, wakes the other (an IPI, while it still runs:
 * no CPU is idle then) and halts.  Each CPU looks at its queue when told
 * (sched_wake's answer), when its running vCPU halts or its slice ends,
 * and while idle.  Each time the victim's CPU is told costs the victim
 * an exit (the IPI that makes its CPU look), each time it loses the CPU
 * a world switch: both at most once per interval; and the attacker still
 * plays at the pace of the CPU it is left.
 */
static void two_cpus_ping_pong(void **state)
{
	const uint64_t until = 100 * SLICE, run = 3;
	struct sched_entity *on[2] = { 0, 0 };
	uint64_t act[2] = { 0, 0 }, rounds = 0, kicks = 0;
	bool told[2] = { false, false };

	setup(2);
	on[0] = &e[0];
	sched_wake(&s, &e[1], 0);
	for (uint64_t now = 0; now < until; now++) {
		for (int c = 0; c < 2; c++) {
			struct sched_entity *was = on[c];
			bool look = told[c] || !on[c] || now >= s.cpu[c].slice_end;

			if (on[c] && on[c] != &e[0] && now == act[c]) {
				int k = sched_wake(&s, on[c] == &e[1] ? &e[3] : &e[1], now);

				if (k >= 0)
					told[k] = true;
				kicks += k >= 0 && k != c && on[k] == &e[0];
				sched_halt(&s, on[c], now);
				rounds++;
				look = true;
			}
			if (!look)
				continue;
			told[c] = false;
			on[c] = sched_pick(&s, (unsigned)c, now);
			if (on[c] && on[c] != &e[0] && on[c] != was)
				act[c] = now + run;
		}
	}
	print_message("two CPUs, ping-pong beside a busy victim: %llu rounds, the victim's CPU told %llu times, "
		      "lost %llu times in %llu cycles\n", (unsigned long long)rounds, (unsigned long long)kicks,
		      (unsigned long long)(e[0].switches_in - 1), (unsigned long long)until);
	assert_true(e[0].switches_in - 1 <= until / EVERY + BURST + 1);
	assert_true(kicks <= until / EVERY + BURST + 1);
	assert_true(rounds >= until / (run + 2) / 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(wake_granularity),
		cmocka_unit_test(a_long_run_without_picks_banks_nothing),
		cmocka_unit_test(wakeups_preempt_once_per_interval),
		cmocka_unit_test(the_bound_is_per_guest),
		cmocka_unit_test(wake_joins_its_own_guest),
		cmocka_unit_test(two_cpus_ping_pong),
	};
	return cmocka_run_group_tests(tests, 0, 0);
}
