/*
 * ap_start_state.h - the checks of SetInitialAPState's APState that need no
 * vCPU (ap_start_state.c, pure, tests/unit/test_ap_start_state.c).  What needs the
 * guest's memory (the GDT and IDT bases, the selectors' descriptors, EIP
 * inside CS) is checked where a mov to CR, lgdt, lidt, a segment load and
 * an IRET frame are (ap_start.c, vcpu_desc.c, vcpu_ops.c).
 */
#ifndef VMI_HV_AP_START_STATE_H
#define VMI_HV_AP_START_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include "vmi_abi.h"

/* The guest kernel's ring (docs/HV.md, "vCPU and world switch"). */
#define AP_STATE_RING 1

/* true if s may start a vCPU as far as its own fields tell; else false
 * with the reason in why. */
bool ap_start_state_check(const APState *s, char *why, size_t whylen);

#endif
