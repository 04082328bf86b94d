/*
 * debug_delay.h - test-only delays that widen a window the tests could
 * not hit otherwise (debug_pick_delay=, debug_halt_delay=; docs/HV.md,
 * "The hypervisor command line").  Both are 0 unless the command line
 * names them: a real run never waits here.
 */
#ifndef VMI_HV_DEBUG_DELAY_H
#define VMI_HV_DEBUG_DELAY_H

#include <stdint.h>

/* After a scheduler pick, before the guest's lock is taken to enter the
 * vCPU (run.c, run_step): the window where its guest may die. */
extern uint32_t debug_pick_delay_us;
/* In a halt's handling, under the guest's lock (vcpu_ops.c): a long exit,
 * and the window where Ctrl-] q may come while a vCPU halts. */
extern uint32_t debug_halt_delay_us;

/* Spin for us microseconds (none for 0), interrupts as they are. */
void debug_delay(uint32_t us);

#endif
