/*
 * ap_start.h - SetInitialAPState (ap_start.c).
 */
#ifndef VMI_HV_AP_START_H
#define VMI_HV_AP_START_H

#include "vcpu_state.h"

/* vCPU v starts its guest's vCPU apic_id at the APState at linear lin:
 * 0, or VMI_ERROR_INVALID with nothing changed.  With its guest's lock. */
uint32_t vcpu_set_initial_ap_state(struct vcpu *v, uint32_t lin, uint32_t apic_id);

#endif
