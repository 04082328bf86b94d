/*
 * vcpu_apstart.h - SetInitialAPState (vcpu_apstart.c).
 */
#ifndef VMI_HV_VCPU_APSTART_H
#define VMI_HV_VCPU_APSTART_H

#include "vcpu_state.h"

/* vCPU v starts its guest's vCPU apic_id at the APState at linear lin:
 * 0, or VMI_ERROR_INVALID with nothing changed.  With its guest's lock. */
uint32_t vcpu_set_initial_ap_state(struct vcpu *v, uint32_t lin, uint32_t apic_id);
/* vCPU v (not 0) halted with interrupts off: it waits for its start
 * again.  With its guest's lock, in its own exit. */
void vcpu_ap_park(struct vcpu *v);

#endif
