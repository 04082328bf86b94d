/*
 * lock_types.h - what a lock is and the ranks locks are taken in; the
 * functions that take them are lib/spinlock.h's.  Vocabulary: struct pcpu
 * holds the locks its CPU holds.
 */
#ifndef VMI_HV_LOCK_TYPES_H
#define VMI_HV_LOCK_TYPES_H

#include <stdint.h>

struct spinlock {
	volatile uint32_t locked;
	int owner;		/* the holding CPU's index, -1 when free */
	unsigned rank;		/* taken in increasing rank only */
	const char *name;
};

/* The ranks, lowest (outermost) first. */
enum lock_rank {
	LOCK_RANK_SCHED = 10,		/* sched_lock: the scheduler queue, struct run */
	LOCK_RANK_GUEST = 20,		/* a guest's lock: its vCPU's exits, its devices; one at a time */
	LOCK_RANK_FRAMES = 30,		/* frames_lock: the machine frame allocator */
	LOCK_RANK_CONSOLE = 40,		/* console_lock: one output line at a time */
};

#define SPINLOCK_INIT(n, r) { .locked = 0, .owner = -1, .rank = (r), .name = (n) }

#define LOCKS_HELD_MAX 8

/* Per CPU (struct pcpu): the locks it holds, in the order taken. */
struct lock_stack {
	unsigned n;
	const struct spinlock *held[LOCKS_HELD_MAX];
	uint64_t checked;	/* takes checked on this CPU (locks=check) */
};

#endif
