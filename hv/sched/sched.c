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
 * if that puts it behind the one running, it preempts it at once.  An
 * interactive or idle guest therefore runs as soon as its interrupt
 * arrives, and its steal stays near 0 beside a busy guest.
 */
#include "sched.h"

/* vruntime advances by cycles * inv_weight >> WEIGHT_SHIFT. */
#define WEIGHT_SHIFT 16

void sched_init(struct sched *s, uint64_t slice_cycles)
{
	*s = (struct sched){ .current = -1, .last = -1, .slice = slice_cycles ? slice_cycles : 1 };
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
				    .state = SCHED_READY, .start = now, .since = now };
	s->e[s->n++] = e;
	return true;
}

bool sched_rejoin(struct sched *s, struct sched_entity *e, void *owner, unsigned weight, uint64_t now)
{
	for (unsigned i = 0; i < s->n; i++) {
		if (s->e[i] != e)
			continue;
		if (!weight)
			weight = 1;
		*e = (struct sched_entity){ .owner = owner, .weight = weight,
					    .inv_weight = (1u << WEIGHT_SHIFT) / weight,
					    .vruntime = s->min_vruntime,
					    .state = SCHED_READY, .start = now, .since = now };
		return true;
	}
	return false;
}

static void leave_cpu(struct sched *s, struct sched_entity *e, enum sched_state st, uint64_t now)
{
	if (s->current >= 0 && s->e[s->current] == e)
		s->current = -1;
	set_state(e, st, now);
}

void sched_halt(struct sched *s, struct sched_entity *e, uint64_t now)
{
	if (e->state != SCHED_GONE)
		leave_cpu(s, e, SCHED_HALTED, now);
}

void sched_wake(struct sched *s, struct sched_entity *e, uint64_t now)
{
	uint64_t credit = s->slice / 2, floor;

	if (e->state != SCHED_HALTED)
		return;
	set_state(e, SCHED_READY, now);
	e->wakeups++;
	floor = s->min_vruntime > credit ? s->min_vruntime - credit : 0;
	if (e->vruntime < floor)
		e->vruntime = floor;
	if (s->current >= 0 && e->vruntime < vruntime(s->e[s->current], now)) {
		s->slice_end = now;	/* the next sched_pick() hands over */
		e->preemptions++;
	}
}

void sched_gone(struct sched *s, struct sched_entity *e, uint64_t now)
{
	if (e->state != SCHED_GONE)
		leave_cpu(s, e, SCHED_GONE, now);
}

static struct sched_entity *give_cpu(struct sched *s, int i, uint64_t now)
{
	struct sched_entity *e = s->e[i];

	if (e->state != SCHED_RUNNING) {
		set_state(e, SCHED_RUNNING, now);
		e->switches_in++;
	}
	s->current = i;
	s->last = i;
	s->slice_end = now + s->slice;
	return e;
}

struct sched_entity *sched_pick(struct sched *s, uint64_t now)
{
	int cur = s->current, best = -1;
	uint64_t best_vr = 0;

	if (cur >= 0 && now < s->slice_end)
		return s->e[cur];
	/* The least vruntime among the runnable ones; on a tie the first in
	 * turn after the one that ran last, so equals alternate. */
	for (unsigned k = 1; k <= s->n; k++) {
		int i = (int)((unsigned)(s->last + (int)k) % s->n);
		uint64_t vr;

		if (i != cur && s->e[i]->state != SCHED_READY)
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
	if (cur >= 0 && best != cur)
		set_state(s->e[cur], SCHED_READY, now);
	return give_cpu(s, best, now);
}

uint64_t sched_next_event(const struct sched *s)
{
	if (s->current < 0)
		return UINT64_MAX;
	for (unsigned i = 0; i < s->n; i++)
		if (s->e[i]->state == SCHED_READY)
			return s->slice_end;
	return UINT64_MAX;	/* alone: no slice end to enforce */
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
