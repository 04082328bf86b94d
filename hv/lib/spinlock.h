/*
 * spinlock.h - the hypervisor's locks (hv/lib/spinlock.c).
 *
 * Taken with interrupts off (the hypervisor runs with them off but for
 * its idle halt), never held across a guest entry.  Each lock has a rank:
 * a CPU takes locks in increasing rank only, which rules out deadlock.
 * The ranks and what each lock protects are in docs/ARCHITECTURE.md,
 * "Who owns what on several CPUs".  With locks=check every take checks
 * the order and every guest entry checks that the CPU holds nothing; a
 * violation is a hypervisor bug and panics, naming both locks.
 */
#ifndef VMI_HV_SPINLOCK_H
#define VMI_HV_SPINLOCK_H

#include <stdint.h>
#include <stdbool.h>
#include "lock_types.h"


void spin_lock(struct spinlock *l);
/* l if it is free now, without waiting: false (not taken) if another CPU
 * holds it.  The same order checks as spin_lock. */
bool spin_trylock(struct spinlock *l);
void spin_unlock(struct spinlock *l);
/* For code that may run with interrupts on (boot, the console): l taken
 * with them off; the returned EFLAGS restores them at the release. */
uint32_t spin_lock_irqsave(struct spinlock *l);
void spin_unlock_irqrestore(struct spinlock *l, uint32_t eflags);
/* Does this CPU hold l? */
bool spin_held(const struct spinlock *l);
/* locks=check: order and guest-entry assertions on (boot, before the
 * other CPUs start). */
void locks_check_enable(void);
bool locks_checking(void);
/* Before a guest entry: with locks=check, panics if a lock is held. */
void locks_assert_none_held(void);

#endif
