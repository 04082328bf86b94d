/*
 * sched.c - which vCPU has the CPU, and where each vCPU's time went; see
 * sched.h.
 *
 * Fair shares by virtual runtime, as Linux's CFS does it: a vCPU's
 * vruntime grows by the cycles it runs divided by its weight, and when a
 * slice ends the runnable vCPU with the least vruntime gets the next one.
 * Busy vCPUs so share the CPU in proportion to their weights, and one
 * spinning in user mode cannot keep it beyond its slice (the run loop
 * arms the hypervisor's timer for the slice's end).
 *
 * A vCPU that wakes from a halt is placed at most half a slice behind the
 * least vruntime of the others, so sleeping banks no credit beyond that;
 * it goes to an idle CPU if there is one, else, if that puts it behind a
 * running one, it preempts it at once.  An interactive or idle guest
 * therefore runs as soon as its interrupt arrives, and its steal stays
 * near 0 beside a busy guest.
 *
 * Several CPUs share the one queue (the run loops call in under hv_lock):
 * each picks for itself, among the runnable vCPUs no other CPU runs, so
 * weights hold across CPUs (a vCPU gets at most one CPU), and a vCPU
 * migrates whenever another CPU picks it.  With a few CPUs and at most
 * SCHED_MAX vCPUs the scans are short; per-CPU queues would need a
 * balancer to approach the same shares.
 */
#include "sched.h"

/* vruntime advances by cycles * inv_weight >> WEIGHT_SHIFT. */
#define WEIGHT_SHIFT 16

void sched_init(struct sched *s, uint64_t slice_cycles, unsigned ncpus)
{
	*s = (struct sched){ .slice = slice_cycles ? slice_cycles : 1,
			     .ncpus = ncpus < 1 ? 1 : ncpus > SCHED_MAX_CPUS ? SCHED_MAX_CPUS : ncpus };
	for (unsigned c = 0; c < SCHED_MAX_CPUS; c++)
		s->cpu[c] = (struct sched_cpu){ .current = -1, .last = -1 };
}

static uint64_t weighted(const struct sched_entity *e, uint64_t cycles)
{
	return (cycles * e->inv_weight) >> WEIGHT_SHIFT;
}

/* e's vruntime at now, counting the run in progress. */
static uint64_t vruntime(const struct sched_entity *e, uint64_t now)
{
	if (e->state == SCHED_RUNNING && now > e->since)
		return e->vruntime + weighted(e, now - e->since);
	return e->vruntime;
}

static bool allowed_on(const struct sched_entity *e, unsigned cpu)
{
	return !e->allowed || (e->allowed >> cpu & 1);
}

static void set_state(struct sched_entity *e, enum sched_state st, uint64_t now)
{
	/* A clock that seems to run backwards charges nothing, so that the
	 * sum stays exact. */
	if (now > e->since) {
		if (e->state == SCHED_RUNNING)
			e->vruntime += weighted(e, now - e->since);
		e->in[e->state] += now - e->since;
		e->since = now;
	}
	e->state = st;
}

bool sched_add(struct sched *s, struct sched_entity *e, void *owner, unsigned weight, uint64_t now)
{
	if (s->n >= SCHED_MAX)
		return false;
	if (!weight)
		weight = 1;
	*e = (struct sched_entity){ .owner = owner, .weight = weight,
				    .inv_weight = (1u << WEIGHT_SHIFT) / weight,
				    .vruntime = s->min_vruntime,
				    .state = SCHED_READY, .start = now, .since = now, .cpu = -1 };
	s->e[s->n++] = e;
	return true;
}

bool sched_rejoin(struct sched *s, struct sched_entity *e, void *owner, unsigned weight, uint64_t now)
{
	for (unsigned i = 0; i < s->n; i++) {
		if (s->e[i] != e)
			continue;
		uint32_t allowed = e->allowed;	/* its guest's CPUs stay its own */

		if (!weight)
			weight = 1;
		*e = (struct sched_entity){ .owner = owner, .weight = weight,
					    .inv_weight = (1u << WEIGHT_SHIFT) / weight,
					    .vruntime = s->min_vruntime,
					    .state = SCHED_READY, .start = now, .since = now,
					    .cpu = -1, .allowed = allowed };
		return true;
	}
	return false;
}

static void leave_cpu(struct sched *s, struct sched_entity *e, enum sched_state st, uint64_t now)
{
	if (e->state == SCHED_RUNNING && e->cpu >= 0) {
		struct sched_cpu *c = &s->cpu[e->cpu];

		if (c->current >= 0 && s->e[c->current] == e)
			c->current = -1;
	}
	set_state(e, st, now);
}

void sched_halt(struct sched *s, struct sched_entity *e, uint64_t now)
{
	if (e->state != SCHED_GONE)
		leave_cpu(s, e, SCHED_HALTED, now);
}

int sched_wake(struct sched *s, struct sched_entity *e, uint64_t now)
{
	uint64_t credit = s->slice / 2, floor, worst_vr = 0;
	int worst = -1;

	if (e->state != SCHED_HALTED)
		return -1;
	set_state(e, SCHED_READY, now);
	e->wakeups++;
	floor = s->min_vruntime > credit ? s->min_vruntime - credit : 0;
	if (e->vruntime < floor)
		e->vruntime = floor;
	/* An idle CPU it may run on takes it, the last one it ran on first. */
	if (e->cpu >= 0 && (unsigned)e->cpu < s->ncpus && s->cpu[e->cpu].current < 0 &&
	    allowed_on(e, (unsigned)e->cpu))
		return e->cpu;
	for (unsigned c = 0; c < s->ncpus; c++)
		if (s->cpu[c].current < 0 && allowed_on(e, c))
			return (int)c;
	/* Else it preempts the running vCPU furthest ahead on a CPU it may
	 * run on, if it is behind that one. */
	for (unsigned c = 0; c < s->ncpus; c++) {
		uint64_t vr;

		if (!allowed_on(e, c) || s->cpu[c].current < 0)
			continue;
		vr = vruntime(s->e[s->cpu[c].current], now);

		if (worst < 0 || vr > worst_vr) {
			worst = (int)c;
			worst_vr = vr;
		}
	}
	if (worst >= 0 && e->vruntime < worst_vr) {
		s->cpu[worst].slice_end = now;	/* its next sched_pick() hands over */
		e->preemptions++;
		return worst;
	}
	return -1;
}

void sched_gone(struct sched *s, struct sched_entity *e, uint64_t now)
{
	if (e->state != SCHED_GONE)
		leave_cpu(s, e, SCHED_GONE, now);
}

static struct sched_entity *give_cpu(struct sched *s, unsigned cpu, int i, uint64_t now)
{
	struct sched_entity *e = s->e[i];
	struct sched_cpu *c = &s->cpu[cpu];

	if (e->state != SCHED_RUNNING) {
		set_state(e, SCHED_RUNNING, now);
		e->switches_in++;
		if (e->cpu >= 0 && e->cpu != (int)cpu)
			e->migrations++;
		e->cpu = (int)cpu;
	}
	c->current = i;
	c->last = i;
	c->slice_end = now + s->slice;
	return e;
}

struct sched_entity *sched_pick(struct sched *s, unsigned cpu, uint64_t now)
{
	struct sched_cpu *c = &s->cpu[cpu];
	int cur = c->current, best = -1;
	uint64_t best_vr = 0;

	if (cur >= 0 && now < c->slice_end)
		return s->e[cur];
	/* The least vruntime among the runnable ones; on a tie the first in
	 * turn after the one that ran last here, so equals alternate. */
	for (unsigned k = 1; k <= s->n; k++) {
		int i = (int)((unsigned)(c->last + (int)k) % s->n);
		uint64_t vr;

		if (i != cur && (s->e[i]->state != SCHED_READY || !allowed_on(s->e[i], cpu)))
			continue;
		vr = vruntime(s->e[i], now);
		if (best < 0 || vr < best_vr) {
			best = i;
			best_vr = vr;
		}
	}
	if (best < 0)
		return 0;	/* nobody is runnable: the CPU may halt */
	if (best_vr > s->min_vruntime)
		s->min_vruntime = best_vr;
	if (cur >= 0 && best != cur) {
		set_state(s->e[cur], SCHED_READY, now);
		c->current = -1;
	}
	return give_cpu(s, cpu, best, now);
}

uint64_t sched_next_event(const struct sched *s, unsigned cpu)
{
	if (s->cpu[cpu].current < 0)
		return UINT64_MAX;
	for (unsigned i = 0; i < s->n; i++)
		if (s->e[i]->state == SCHED_READY)
			return s->cpu[cpu].slice_end;
	return UINT64_MAX;	/* nobody waits: no slice end to enforce */
}

int sched_idle_cpu_for_waiting(const struct sched *s, unsigned self)
{
	for (unsigned c = 0; c < s->ncpus; c++) {
		if (c == self || s->cpu[c].current >= 0)
			continue;
		for (unsigned i = 0; i < s->n; i++)
			if (s->e[i]->state == SCHED_READY && allowed_on(s->e[i], c))
				return (int)c;
	}
	return -1;
}

uint64_t sched_charge(struct sched_entity *from, struct sched_entity *to, uint64_t cycles, uint64_t now)
{
	uint64_t back;

	if (from == to || from->state != SCHED_RUNNING)
		return 0;
	set_state(from, SCHED_RUNNING, now);	/* the run so far into in[] */
	if (cycles > from->in[SCHED_RUNNING])
		cycles = from->in[SCHED_RUNNING];
	from->in[SCHED_RUNNING] -= cycles;
	from->in[SCHED_READY] += cycles;
	back = weighted(from, cycles);
	from->vruntime = from->vruntime > back ? from->vruntime - back : 0;
	to->vruntime += weighted(to, cycles);
	return cycles;
}

struct sched_times sched_times(const struct sched_entity *e, uint64_t now)
{
	uint64_t in[SCHED_STATES];

	for (int i = 0; i < SCHED_STATES; i++)
		in[i] = e->in[i];
	if (now > e->since && e->state != SCHED_GONE)
		in[e->state] += now - e->since;
	return (struct sched_times){
		.running = in[SCHED_RUNNING], .halted = in[SCHED_HALTED], .stolen = in[SCHED_READY],
		.real = in[SCHED_RUNNING] + in[SCHED_HALTED] + in[SCHED_READY],
	};
}

uint64_t sched_stolen(const struct sched_entity *e, uint64_t now)
{
	return sched_times(e, now).stolen;
}

uint64_t sched_available(const struct sched_entity *e, uint64_t now)
{
	return now - sched_stolen(e, now);
}

const char *sched_state_name(enum sched_state st)
{
	static const char *const names[SCHED_STATES] = {
		[SCHED_READY] = "runnable", [SCHED_RUNNING] = "running",
		[SCHED_HALTED] = "halted", [SCHED_GONE] = "ended",
	};

	return st < SCHED_STATES ? names[st] : "?";
}
