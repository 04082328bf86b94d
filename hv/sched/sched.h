/*
 * sched.h - the vCPU scheduler (sched.c, pure, tests/unit/test_sched.c and
 * test_sched_wake.c):
 * preemptive and weighted-fair (by virtual runtime, with wake-up
 * preemption) over the physical CPUs, a run queue per CPU with a balancer
 * that pulls a vCPU to a CPU where it would run sooner, and each vCPU's
 * time split into running, halted and stolen (runnable but not running on
 * any CPU).
 *
 * Times are TSC cycles passed in by the caller (`now`), so the logic runs
 * on the host too.  For each vCPU, since it was added:
 *     running + halted + stolen == now - start        exactly,
 * because every state change adds the cycles since the last change to the
 * state being left, and a query adds the cycles since then to the current
 * one.  AVAILABLE (VMI) is running + halted.
 */
#ifndef VMI_HV_SCHED_H
#define VMI_HV_SCHED_H

#include <stdint.h>
#include <stdbool.h>
#include "layout.h"

/* SCHED_RUNNING is 0: a vCPU outside any scheduler (before the run loop
 * adds it) counts all its time as its own. */
enum sched_state {
	SCHED_RUNNING,		/* has the CPU */
	SCHED_READY,		/* runnable, waiting for the CPU: stolen time */
	SCHED_HALTED,		/* waits for an interrupt: not runnable */
	SCHED_GONE,		/* its guest ended; the clock stops */
	SCHED_STATES
};

/* One vCPU as the scheduler sees it (inside struct vcpu). */
struct sched_entity {
	void *owner;			/* the vCPU */
	unsigned weight;		/* its share of a busy CPU is proportional */
	uint32_t inv_weight;		/* 2^16 / weight */
	enum sched_state state;
	uint64_t start, since;		/* when added; the last state change */
	uint64_t in[SCHED_STATES];	/* cycles spent in each state until since */
	uint64_t vruntime;		/* running cycles / weight, until since */
	uint64_t switches_in;		/* times it was given the CPU */
	uint64_t wakeups, preemptions;	/* woken from a halt; and took the CPU at once */
	int cpu;			/* the CPU it runs on (RUNNING), else the last one, -1 none */
	int rq;				/* the CPU whose run queue holds it (sched.c) */
	uint32_t allowed;		/* the CPUs it may run on (bit c: CPU c); 0: any */
	/* Its guest: two entities of one group never run at the same
	 * moment (docs/ARCHITECTURE.md, "Who owns what on several CPUs");
	 * 0: no group. */
	const void *group;
	/* Its guest, whatever its group: one guest's wake-ups preempt other
	 * guests' vCPUs at most once per wake-up interval (sched.c,
	 * sched_wake); 0: the entity alone. */
	const void *guest;
	uint64_t wake_window;		/* the wake-up window of its last preemption of another guest */
	uint32_t wake_count;		/* ... and how many it made in that window */
	uint64_t wakes_held;		/* wake-ups whose preemption waited for the interval */
	uint64_t migrations;		/* times it ran on another CPU than the last */
	uint64_t pulls;			/* times a balancing CPU took it into its queue */
};

/* A woken vCPU preempts a running one only if it is more than slice /
 * SCHED_WAKE_GRAN_DIV behind it (the wake-up granularity); and one
 * guest's wake-ups take another guest's CPU at most SCHED_WAKE_BURST
 * times in a wake-up window (a slice, aligned on multiples of it), a
 * later one at the next window's start (docs/TIME.md, "Rates a guest
 * controls").  A burst, not an even interval: an idle guest's wake-ups
 * come in clusters (a tick, then the work it woke), and each waiting for
 * an interval cost it a fifth of them. */
#define SCHED_WAKE_GRAN_DIV 4
#define SCHED_WAKE_BURST 4

#define SCHED_MAX 16
#define SCHED_MAX_CPUS HV_MAX_CPUS

/* One physical CPU as the scheduler sees it.  Its run queue is the set
 * of entities whose rq is this CPU. */
struct sched_cpu {
	int current;			/* index into e[] of the RUNNING one, or -1 */
	int last;			/* index of the one that ran last */
	uint64_t slice_end;		/* when the current one's slice ends */
	/* Told (sched_wake's answer) since the current one got its slice:
	 * it has looked again and armed its timer for slice_end. */
	bool told;
};

struct sched {
	struct sched_entity *e[SCHED_MAX];
	unsigned n;
	unsigned ncpus;
	struct sched_cpu cpu[SCHED_MAX_CPUS];
	uint64_t slice;			/* slice in cycles */
	uint64_t min_vruntime;		/* grows with the least runnable vruntime */
};

/* The split of a vCPU's time at now (now >= its last change). */
struct sched_times {
	uint64_t real, running, halted, stolen;
};

void sched_init(struct sched *s, uint64_t slice_cycles, unsigned ncpus);
/* Add a runnable vCPU (weight >= 1); false when SCHED_MAX are there. */
bool sched_add(struct sched *s, struct sched_entity *e, void *owner, unsigned weight, uint64_t now);
/* An entity that was gone (its guest rebooted) is runnable again, in the
 * same slot, its times counted afresh from now as sched_add's are, its
 * allowed CPUs and group as the caller set them in e; false if e is not
 * one of s's. */
bool sched_rejoin(struct sched *s, struct sched_entity *e, void *owner, unsigned weight, uint64_t now);
/* The running vCPU halted (hlt, VMI Halt): not runnable until woken. */
void sched_halt(struct sched *s, struct sched_entity *e, uint64_t now);
/* A halted vCPU has an interrupt to take: runnable again.  Returns the
 * CPU that should pick it up now (-1: none need be told): an idle one,
 * or the one whose vCPU it preempts (see sched.c); the caller sends that
 * CPU an IPI unless it is the caller. */
int sched_wake(struct sched *s, struct sched_entity *e, uint64_t now);
/* Its guest ended: never runnable again (repeating is harmless). */
void sched_gone(struct sched *s, struct sched_entity *e, uint64_t now);
/* Who runs on cpu now: its current vCPU until its slice ends (or a woken
 * vCPU preempts it), then the runnable one not running elsewhere with the
 * least virtual runtime (equals in turn); 0 when none is runnable (the
 * CPU may halt). */
struct sched_entity *sched_pick(struct sched *s, unsigned cpu, uint64_t now);
/* When the scheduler next needs cpu back from its running vCPU: its
 * slice end if another one is waiting, else UINT64_MAX. */
uint64_t sched_next_event(const struct sched *s, unsigned cpu);
/* An idle CPU (nothing running) other than `self` while a runnable vCPU
 * waits for one; -1 if none: the caller sends it an IPI. */
int sched_idle_cpu_for_waiting(const struct sched *s, unsigned self);

/* cycles of the running vCPU `from`'s time (up to now) were spent on work
 * that belongs to `to` (another guest's alarm): they count as stolen from
 * `from` instead of running, and as run time in `to`'s virtual runtime,
 * so that fair shares charge the owner.  Returns the cycles moved (at
 * most what `from` has run). */
uint64_t sched_charge(struct sched_entity *from, struct sched_entity *to, uint64_t cycles, uint64_t now);

struct sched_times sched_times(const struct sched_entity *e, uint64_t now);
/* The VMI counters at now: STOLEN, and AVAILABLE = REAL - STOLEN with
 * REAL the TSC itself (so AVAILABLE + STOLEN == REAL exactly). */
uint64_t sched_stolen(const struct sched_entity *e, uint64_t now);
uint64_t sched_available(const struct sched_entity *e, uint64_t now);

const char *sched_state_name(enum sched_state st);

#endif
