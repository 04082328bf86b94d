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
 * it goes to an idle CPU if there is one, else, if that puts it more than
 * a quarter slice (the wake-up granularity) behind a running one, it
 * preempts it at once.  An interactive or idle guest therefore runs as
 * soon as its interrupt arrives, and its steal stays near 0 beside a busy
 * guest.  But a vCPU woken while a vCPU of its own guest runs takes that
 * one's CPU, not another guest's, and one guest's wake-ups take other
 * guests' CPUs at most SCHED_WAKE_BURST times a slice (a later one
 * waits for the next slice-long window): each costs the vCPU it preempts a world
 * switch and an IPI, which a guest waking its own vCPUs without pause
 * (IPI ping-pong, alarms) would otherwise make its neighbours pay
 * thousands of times a second.
 *
 * Each CPU has its own run queue: every vCPU belongs to exactly one (its
 * rq), and a CPU picks from its own, so a vCPU stays on the CPU whose
 * caches hold it while the load is even.  Weights hold across CPUs
 * because vruntime is one virtual clock for every queue and a CPU
 * balances as it picks: a runnable vCPU waiting in another CPU's queue
 * (that CPU is busy) moves into this CPU's queue and runs here when it is
 * more than a slice behind the best of this queue, or when this queue has
 * nobody runnable.  A vCPU's lag behind its fair share is so bounded by
 * about a slice whatever the queues hold, and balanced queues (four equal
 * vCPUs on two CPUs) do not migrate at all.  With a few CPUs and at most
 * SCHED_MAX vCPUs, the queues are the entities' rq fields, scanned.
 *
 * The run loops call in under the scheduler's lock (docs/ARCHITECTURE.md,
 * "Who owns what on several CPUs").
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

/* The weight queued on cpu, halted vCPUs included (they come back). */
static unsigned queue_load(const struct sched *s, unsigned cpu)
{
	unsigned load = 0;

	for (unsigned i = 0; i < s->n; i++)
		if (s->e[i]->rq == (int)cpu && s->e[i]->state != SCHED_GONE)
			load += s->e[i]->weight;
	return load;
}

/* Where a new vCPU queues: the CPU with the least weight queued that it
 * may run on (the lowest on a tie). */
static int lightest_cpu(const struct sched *s, const struct sched_entity *e)
{
	int best = -1;
	unsigned best_load = 0;

	for (unsigned c = 0; c < s->ncpus; c++) {
		unsigned load;

		if (!allowed_on(e, c))
			continue;
		load = queue_load(s, c);
		if (best < 0 || load < best_load) {
			best = (int)c;
			best_load = load;
		}
	}
	return best < 0 ? 0 : best;
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
				    .state = SCHED_READY, .start = now, .since = now, .cpu = -1, .rq = -1 };
	e->rq = lightest_cpu(s, e);
	s->e[s->n++] = e;
	return true;
}

bool sched_rejoin(struct sched *s, struct sched_entity *e, void *owner, unsigned weight, uint64_t now)
{
	for (unsigned i = 0; i < s->n; i++) {
		if (s->e[i] != e)
			continue;
		/* Its guest's CPUs, group and guest, as the caller set them. */
		uint32_t allowed = e->allowed;
		const void *group = e->group, *guest = e->guest;

		if (!weight)
			weight = 1;
		*e = (struct sched_entity){ .owner = owner, .weight = weight,
					    .inv_weight = (1u << WEIGHT_SHIFT) / weight,
					    .vruntime = s->min_vruntime,
					    .state = SCHED_READY, .start = now, .since = now,
					    .cpu = -1, .rq = -1, .allowed = allowed, .group = group,
					    .guest = guest };
		e->rq = lightest_cpu(s, e);
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

/* When e's guest last took another guest's CPU by a wake-up (*at); false
 * if it never did.  An entity without a guest is a guest of its own. */
/* How many times e's guest (e alone, if it has none) took another
 * guest's CPU by a wake-up in wake-up window w. */
static uint32_t guest_preemptions_in(const struct sched *s, const struct sched_entity *e, uint64_t w)
{
	uint32_t n = 0;

	for (unsigned i = 0; i < s->n; i++) {
		const struct sched_entity *o = s->e[i];

		if ((o == e || (e->guest && o->guest == e->guest)) && o->wake_window == w)
			n += o->wake_count;
	}
	return n;
}

/* Make cpu look at its queue once in its current slice, so that it arms
 * its timer for the slice's end: the CPU to tell, or -1 (told already). */
static int tell(struct sched *s, int cpu)
{
	if (cpu < 0 || (unsigned)cpu >= s->ncpus || s->cpu[cpu].told)
		return -1;
	s->cpu[cpu].told = true;
	return cpu;
}

/* The CPU e may run on whose running vCPU is furthest ahead (*vr its
 * vruntime), among those running a vCPU of e's guest if own; or -1. */
static int furthest_ahead(const struct sched *s, const struct sched_entity *e, uint64_t now, bool own,
			  uint64_t *vr)
{
	int worst = -1;

	*vr = 0;
	for (unsigned c = 0; c < s->ncpus; c++) {
		const struct sched_entity *r;
		uint64_t v;

		if (!allowed_on(e, c) || s->cpu[c].current < 0)
			continue;
		r = s->e[s->cpu[c].current];
		if (own && (!e->guest || r->guest != e->guest))
			continue;
		v = vruntime(r, now);
		if (worst < 0 || v > *vr) {
			worst = (int)c;
			*vr = v;
		}
	}
	return worst;
}

/*
 * Woken e takes cpu from its running vCPU and joins cpu's queue.  At once,
 * unless that vCPU is another guest's and e's guest took CPUs by
 * wake-ups SCHED_WAKE_BURST times in this wake-up window already: then at
 * the next window's start (or at the slice's end, if sooner).  A guest
 * whose vCPUs wake each other without pause (IPI ping-pong) so costs
 * another guest's vCPU a world switch and an IPI at most
 * SCHED_WAKE_BURST times a slice.
 */
static int preempt(struct sched *s, struct sched_entity *e, int cpu, uint64_t now)
{
	struct sched_cpu *c = &s->cpu[cpu];
	const struct sched_entity *cur = s->e[c->current];
	uint64_t at = now, w = now / s->slice;
	bool other = !e->guest || cur->guest != e->guest;

	e->rq = cpu;
	if (other && guest_preemptions_in(s, e, w) >= SCHED_WAKE_BURST)
		at = ++w * s->slice;
	if (at > now && at >= c->slice_end)
		return tell(s, cpu);	/* handed over at the slice's end anyway */
	c->slice_end = at;		/* its sched_pick() then hands over */
	if (other) {
		if (e->wake_window != w)
			e->wake_count = 0;
		e->wake_window = w;
		e->wake_count++;
	}
	if (at == now)
		e->preemptions++;
	else
		e->wakes_held++;
	c->told = true;
	return cpu;
}

/*
 * min_vruntime up to the least vruntime of the runnable vCPUs but skip,
 * runs in progress counted.  sched_pick() moves it only when it picks: a
 * vCPU running alone without an exit leaves it behind by all that run,
 * and a vCPU woken then would be placed behind by as much (its sleep
 * banked as credit: it would then hold the CPU as long as it slept).
 */
static void follow_min_vruntime(struct sched *s, const struct sched_entity *skip, uint64_t now)
{
	uint64_t least = 0;
	bool any = false;

	for (unsigned i = 0; i < s->n; i++) {
		const struct sched_entity *x = s->e[i];
		uint64_t v;

		if (x == skip || (x->state != SCHED_RUNNING && x->state != SCHED_READY))
			continue;
		v = vruntime(x, now);
		if (!any || v < least)
			least = v;
		any = true;
	}
	if (any && least > s->min_vruntime)
		s->min_vruntime = least;
}

int sched_wake(struct sched *s, struct sched_entity *e, uint64_t now)
{
	uint64_t credit = s->slice / 2, floor, worst_vr;
	int worst;

	if (e->state != SCHED_HALTED)
		return -1;
	set_state(e, SCHED_READY, now);
	e->wakeups++;
	follow_min_vruntime(s, e, now);
	floor = s->min_vruntime > credit ? s->min_vruntime - credit : 0;
	if (e->vruntime < floor)
		e->vruntime = floor;
	/* An idle CPU it may run on takes it into its queue, its own
	 * queue's CPU first. */
	if (e->rq >= 0 && (unsigned)e->rq < s->ncpus && s->cpu[e->rq].current < 0 &&
	    allowed_on(e, (unsigned)e->rq))
		return e->rq;
	for (unsigned c = 0; c < s->ncpus; c++)
		if (s->cpu[c].current < 0 && allowed_on(e, c)) {
			e->rq = (int)c;
			return (int)c;
		}
	/* Else, if a vCPU of its own guest runs, it joins that CPU's queue:
	 * what it costs is its guest's own (an IPI to a halted sibling while
	 * the sender runs: the sender usually halts next). */
	worst = furthest_ahead(s, e, now, true, &worst_vr);
	if (worst < 0)
		worst = furthest_ahead(s, e, now, false, &worst_vr);
	/* It preempts the running vCPU furthest ahead on a CPU it may run
	 * on if it is behind that one by more than the wake-up granularity
	 * (so two vCPUs near each other do not take turns at every wake-up);
	 * otherwise it waits in that queue (its own guest's) or its own (or
	 * is pulled), whose CPU arms its timer for its slice's end. */
	if (worst >= 0 && e->vruntime + s->slice / SCHED_WAKE_GRAN_DIV < worst_vr)
		return preempt(s, e, worst, now);
	if (worst >= 0 && e->guest && s->e[s->cpu[worst].current]->guest == e->guest)
		e->rq = worst;
	return tell(s, e->rq);
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
	c->told = false;
	return e;
}

/* Another entity of e's group runs on a CPU other than cpu: e must wait
 * (one running vCPU per guest until remote TLB and shadow invalidation
 * exist: docs/ARCHITECTURE.md, "Who owns what on several CPUs"). */
static bool sibling_runs_elsewhere(const struct sched *s, const struct sched_entity *e, unsigned cpu)
{
	if (!e->group)
		return false;
	for (unsigned c = 0; c < s->ncpus; c++) {
		int i = s->cpu[c].current;

		if (c != cpu && i >= 0 && s->e[i] != e && s->e[i]->group == e->group)
			return true;
	}
	return false;
}

/* e, runnable, is in cpu's queue and may run there now. */
static bool ready_in_queue(const struct sched *s, const struct sched_entity *e, unsigned cpu)
{
	return e->rq == (int)cpu && e->state == SCHED_READY && allowed_on(e, cpu) &&
	       !sibling_runs_elsewhere(s, e, cpu);
}

/* A runnable e queued on another CPU waits there for nothing another CPU
 * could fix: that CPU is busy, or e may not run on it (pinned after it
 * was queued, or a vCPU of its guest runs on another CPU than that one).
 * A CPU that is idle with e queued has been told to run it. */
static bool waits_elsewhere(const struct sched *s, const struct sched_entity *e, unsigned cpu)
{
	unsigned q = (unsigned)e->rq;

	if (e->state != SCHED_READY || e->rq == (int)cpu || !allowed_on(e, cpu) ||
	    sibling_runs_elsewhere(s, e, cpu))
		return false;
	return q >= s->ncpus || !allowed_on(e, q) || s->cpu[q].current >= 0 ||
	       sibling_runs_elsewhere(s, e, q);	/* its queue's CPU may not take it */
}

/* Whether cpu could run e now: runnable, queued here or waiting elsewhere. */
static bool could_run(const struct sched *s, const struct sched_entity *e, unsigned cpu)
{
	return ready_in_queue(s, e, cpu) || waits_elsewhere(s, e, cpu);
}

struct sched_entity *sched_pick(struct sched *s, unsigned cpu, uint64_t now)
{
	struct sched_cpu *c = &s->cpu[cpu];
	int cur = c->current, best = -1, far = -1;
	uint64_t best_vr = 0, far_vr = 0;

	if (cur >= 0 && now < c->slice_end)
		return s->e[cur];
	/* The least vruntime in this CPU's queue, the running one included;
	 * on a tie the first in turn after the one that ran last here, so
	 * equals alternate.  And the least among those waiting elsewhere. */
	for (unsigned k = 1; k <= s->n; k++) {
		int i = (int)((unsigned)(c->last + (int)k) % s->n);
		uint64_t vr = vruntime(s->e[i], now);

		if (i == cur || ready_in_queue(s, s->e[i], cpu)) {
			if (best < 0 || vr < best_vr) {
				best = i;
				best_vr = vr;
			}
		} else if (waits_elsewhere(s, s->e[i], cpu) && (far < 0 || vr < far_vr)) {
			far = i;
			far_vr = vr;
		}
	}
	/* Pull: one waiting elsewhere runs here if this queue has nobody, or
	 * if it is more than a slice behind this queue's best. */
	if (far >= 0 && (best < 0 || far_vr + s->slice < best_vr)) {
		s->e[far]->rq = (int)cpu;
		s->e[far]->pulls++;
		best = far;
		best_vr = far_vr;
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
		if (could_run(s, s->e[i], cpu))
			return s->cpu[cpu].slice_end;
	return UINT64_MAX;	/* nobody waits: no slice end to enforce */
}

int sched_idle_cpu_for_waiting(const struct sched *s, unsigned self)
{
	for (unsigned c = 0; c < s->ncpus; c++) {
		if (c == self || s->cpu[c].current >= 0)
			continue;
		for (unsigned i = 0; i < s->n; i++)
			if (s->e[i]->state == SCHED_READY && allowed_on(s->e[i], c) &&
			    !sibling_runs_elsewhere(s, s->e[i], c))
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
	/* sched_times' stolen alone, without a copy of every state's sum:
	 * asked before every entry (vcpu_shared.c, publish_time). */
	uint64_t stolen = e->in[SCHED_READY];

	if (e->state == SCHED_READY && now > e->since)
		stolen += now - e->since;
	return stolen;
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
