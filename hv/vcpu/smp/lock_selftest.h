/*
 * lock_selftest.h - lock rules broken on purpose (lock_selftest=), so that
 * a test sees locks=check catch each, on the boot CPU and on an AP.
 */
#ifndef VMIHV_LOCK_SELFTEST_H
#define VMIHV_LOCK_SELFTEST_H

#include "cmdline.h"
#include "pcpu.h"

/* At boot: invert runs at once on CPU 0; the -ap kinds wait for CPU 1. */
void lock_selftest_arm(enum lock_selftest kind);
/* CPU c joins the run loop: CPU 1 breaks the rule it was armed with. */
void lock_selftest_ap(struct pcpu *c);

#endif
