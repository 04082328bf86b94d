/*
 * vcpu.h - a vCPU's life (vcpu.c): built for a loaded guest, then entered
 * once per exit by the run loop.  What a vCPU is: vcpu_state.h.
 */
#ifndef VMI_HV_VCPU_H
#define VMI_HV_VCPU_H

#include "vcpu_state.h"
#include "pcpu.h"

/* A new vCPU of a loaded guest (vcpu_init on memory of its own). */
struct vcpu *vcpu_create(struct guest *g);
/* Build the vCPU for a loaded guest: switcher pages, shadow paging in
 * "physical mode", the 32-bit boot-protocol entry state. */
void vcpu_init(struct vcpu *v, struct guest *g);
/* Its guest rebooted: built again as vcpu_init does, on its own frames. */
void vcpu_restart(struct vcpu *v);
/* One entry into the guest and the handling of the exit that ends it
 * (the run loop calls it with interrupts off, devices polled, and the
 * guest's lock held: released inside the guest, taken again at the exit). */
void vcpu_run_once(struct vcpu *v);
/* This CPU leaves exit handling (at a guest entry, before a halt). */
void vcpu_exit_handling_end(struct pcpu *c);

#endif
