/*
 * spinlock.c - test-and-set locks with a rank each (spinlock.h).
 *
 * The owner is recorded always (a panic report names the CPU holding a
 * lock, and console_lock lets its holder's nested output through); the
 * per-CPU stack of held locks is kept and checked only with
 * locks=check, so the plain path is one xchg and two stores.
 */
#include "spinlock.h"
#include "pcpu.h"
#include "stop.h"
#include "io.h"
#include "x86.h"

static bool checking;

void locks_check_enable(void)
{
	checking = true;
}

bool locks_checking(void)
{
	return checking;
}

static void check_take(struct spinlock *l, struct lock_stack *s)
{
	const struct spinlock *top = s->n ? s->held[s->n - 1] : 0;

	if (read_eflags() & X86_EFLAGS_IF)
		hv_panic("locks=check: %s taken with interrupts on", l->name);
	if (top && top->rank >= l->rank)
		hv_panic("locks=check: lock order inversion: %s (rank %u) taken while holding %s (rank %u) on CPU %u",
			 l->name, l->rank, top->name, top->rank, this_pcpu()->index);
	if (s->n == LOCKS_HELD_MAX)
		hv_panic("locks=check: more than %u locks held", LOCKS_HELD_MAX);
}

void spin_lock(struct spinlock *l)
{
	struct pcpu *c = this_pcpu();

	if (checking) {
		if (l->owner == (int)c->index)
			hv_panic("locks=check: %s taken again by CPU %u, which holds it", l->name, c->index);
		check_take(l, &c->locks);
		c->locks.checked++;
	}
	while (__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE))
		while (l->locked)
			cpu_relax();
	l->owner = (int)c->index;
	if (checking)
		c->locks.held[c->locks.n++] = l;
}

bool spin_trylock(struct spinlock *l)
{
	struct pcpu *c = this_pcpu();

	if (checking) {
		if (l->owner == (int)c->index)
			hv_panic("locks=check: %s taken again by CPU %u, which holds it", l->name, c->index);
		check_take(l, &c->locks);
	}
	/* A look first: a busy lock's line is not written. */
	if (l->locked || __atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE))
		return false;
	l->owner = (int)c->index;
	if (checking)
		c->locks.held[c->locks.n++] = l;
	return true;
}

void spin_unlock(struct spinlock *l)
{
	struct pcpu *c = this_pcpu();

	if (checking) {
		if (l->owner != (int)c->index)
			hv_panic("locks=check: %s released by CPU %u, which does not hold it",
				 l->name, c->index);
		for (unsigned i = 0; i < c->locks.n; i++)
			if (c->locks.held[i] == l) {
				c->locks.held[i] = c->locks.held[--c->locks.n];
				break;
			}
	}
	l->owner = -1;
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
}

uint32_t spin_lock_irqsave(struct spinlock *l)
{
	uint32_t eflags = read_eflags();

	irq_disable();
	spin_lock(l);
	return eflags;
}

void spin_unlock_irqrestore(struct spinlock *l, uint32_t eflags)
{
	spin_unlock(l);
	if (eflags & X86_EFLAGS_IF)
		irq_enable();
}

bool spin_held(const struct spinlock *l)
{
	return l->locked && l->owner == (int)this_pcpu()->index;
}

void locks_assert_none_held(void)
{
	struct pcpu *c = this_pcpu();

	if (checking && c->locks.n)
		hv_panic("locks=check: %s held across a guest entry on CPU %u",
			 c->locks.held[c->locks.n - 1]->name, c->index);
}
