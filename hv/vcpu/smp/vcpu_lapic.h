/*
 * vcpu_lapic.h - APICRead and APICWrite on a vCPU's virtual local APIC
 * (vcpu_lapic.c; the registers: dev/vlapic.c).
 */
#ifndef VMI_HV_VCPU_LAPIC_H
#define VMI_HV_VCPU_LAPIC_H

#include "vcpu_state.h"

/* The register's value, or VMI_ERROR_INVALID for one it does not have. */
uint32_t vcpu_apic_read(struct vcpu *v, uint32_t reg);
/* 0, or VMI_ERROR_INVALID (nothing changed, nothing sent). */
uint32_t vcpu_apic_write(struct vcpu *v, uint32_t reg, uint32_t val);

#endif
