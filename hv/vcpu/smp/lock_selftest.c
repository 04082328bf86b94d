/*
 * lock_selftest.c - lock_selftest=invert|invert-ap|entry-ap: a lock rule
 * broken on purpose.  With locks=check the hypervisor stops with the
 * rule's panic; without it the break goes unnoticed and says so, which
 * is how a test tells the checker from its absence.  The -ap kinds run on
 * CPU 1 when it joins the run loop, to show the per-CPU checks work on
 * an AP too (its own held-lock stack), not only on the boot CPU.
 */
#include "lock_selftest.h"
#include "console.h"
#include "run_internal.h"
#include "spinlock.h"

static enum lock_selftest armed;

/* A lock of its own for entry-ap: taking it breaks no order. */
static struct spinlock selftest_lock = SPINLOCK_INIT("lock_selftest_lock", LOCK_RANK_GUEST);

/* sched_lock (rank 10) taken inside console_lock (rank 40). */
static void invert(void)
{
	struct console_hold hold;

	log_info("lock_selftest: taking sched_lock while holding console_lock, against the lock order, on CPU %u",
		 this_pcpu()->index);
	hold = console_enter();	/* interrupts off inside, as for any print */
	spin_lock(&sched_lock);
	spin_unlock(&sched_lock);
	console_leave(hold);
	log_info("lock_selftest: the inversion went unnoticed (locks=check is off)");
}

/* A lock still held where a guest entry checks that none is. */
static void held_at_entry(void)
{
	log_info("lock_selftest: holding a lock into a guest entry on CPU %u", this_pcpu()->index);
	spin_lock(&selftest_lock);
	locks_assert_none_held();
	spin_unlock(&selftest_lock);
	log_info("lock_selftest: the lock held into an entry went unnoticed (locks=check is off)");
}

void lock_selftest_arm(enum lock_selftest kind)
{
	armed = kind;
	if (kind == LOCK_SELFTEST_INVERT)
		invert();
}

void lock_selftest_ap(struct pcpu *c)
{
	if (c->index != 1)
		return;
	if (armed == LOCK_SELFTEST_INVERT_AP)
		invert();
	else if (armed == LOCK_SELFTEST_ENTRY_AP)
		held_at_entry();
}
