/*
 * sched.c - preemptive weighted round-robin over the vCPUs, and where
 * their time went; see sched.h.  A vCPU keeps the CPU for weight x slice
 * cycles (the run loop asks after every exit, and the hypervisor's 1 kHz
 * tick guarantees an exit), so busy vCPUs share the CPU in proportion to
 * their weights.
 */
#include "sched.h"

void sched_init(struct sched *s, uint64_t slice_cycles)
{
	*s = (struct sched){ .current = -1, .last = -1, .slice = slice_cycles ? slice_cycles : 1 };
}

static void set_state(struct sched_entity *e, enum sched_state st, uint64_t now)
{
	/* A clock that seems to run backwards charges nothing, so that the
	 * sum stays exact. */
	if (now > e->since) {
		e->in[e->state] += now - e->since;
		e->since = now;
	}
	e->state = st;
}

bool sched_add(struct sched *s, struct sched_entity *e, void *owner, unsigned weight, uint64_t now)
{
	if (s->n >= SCHED_MAX)
		return false;
	*e = (struct sched_entity){ .owner = owner, .weight = weight ? weight : 1,
				    .state = SCHED_READY, .start = now, .since = now };
	s->e[s->n++] = e;
	return true;
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
	if (e->state == SCHED_HALTED)
		set_state(e, SCHED_READY, now);
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
	s->slice_end = now + s->slice * e->weight;
	return e;
}

struct sched_entity *sched_pick(struct sched *s, uint64_t now)
{
	int cur = s->current;

	if (cur >= 0 && now < s->slice_end)
		return s->e[cur];
	/* The slice is over (or nobody runs): the next runnable one in turn
	 * after the one that ran last, so a vCPU that halts often does not
	 * hand its turn back to the first. */
	for (unsigned k = 1; k <= s->n; k++) {
		int i = (int)((unsigned)(s->last + (int)k) % s->n);

		if (i != cur && s->e[i]->state == SCHED_READY) {
			if (cur >= 0)
				set_state(s->e[cur], SCHED_READY, now);
			return give_cpu(s, i, now);
		}
	}
	if (cur >= 0)
		return give_cpu(s, cur, now);	/* nobody else wants it */
	return 0;
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
