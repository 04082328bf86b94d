/*
 * run.h - the run loop (run.c): it owns what happens between guest
 * entries.  It enters a runnable vCPU, idles the CPU while every vCPU is
 * halted, reports a guest that stopped or ended, and ends the hypervisor
 * when no guest is left.
 */
#ifndef VMI_HV_RUN_H
#define VMI_HV_RUN_H

#include <stdint.h>
#include "guest.h"
#include "pcpu.h"

__attribute__((returns_twice)) int hv_setjmp(struct hv_jmp *j);
__attribute__((noreturn)) void hv_longjmp(struct hv_jmp *j, int val);

/* Run the guests, each with its vCPUs built (vcpu_init), until none is
 * left, sharing the CPU in slices of slice_us times each guest's weight;
 * never returns. */
__attribute__((noreturn)) void run_guests(struct guest **guests, unsigned n, uint32_t slice_us);
/* A CPU other than the boot CPU (smp_boot.c starts it here): it waits
 * for run_guests to start, then runs the same loop; never returns. */
__attribute__((noreturn)) void run_cpu(struct pcpu *c);

/* selftest=two-guests: enter two guests loaded from the same bzImage in
 * turn, a few thousand exits each, and check that their devices and
 * shadows stay apart; never returns. */
__attribute__((noreturn)) void run_selftest_two_guests(struct guest *a, struct guest *b);

#endif
