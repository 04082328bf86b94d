/*
 * smp.h - the machine's other CPUs (hv/drivers/smp_boot.c): started with
 * INIT-SIPI-SIPI through a real-mode trampoline, each with its own GDT,
 * IDT, TSSes, stacks and local APIC (docs/SMP.md, "More than one CPU").
 */
#ifndef VMI_HV_SMP_H
#define VMI_HV_SMP_H

#include <stdbool.h>
#include "cpu_list.h"

struct pcpu;

/* Start the CPUs of the list but the boot CPU, at most max_cpus in all
 * (0: no limit); the boot log says which were started and why any was
 * not.  Each started CPU sets itself up and calls cpu_main(itself) with
 * interrupts off; it never returns. */
void smp_start_cpus(const struct cpu_list *cpus, unsigned max_cpus,
		    void (*cpu_main)(struct pcpu *c));

/* An IPI to c (HV_LOCAL_IPI_VECTOR): leave the guest or the halt and
 * look at the run queue. */
void cpu_kick(struct pcpu *c);

#endif
