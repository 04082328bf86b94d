/*
 * guest_report.h - what the hypervisor says about a guest (guest_report.c):
 * its counters, the report of its end, the console after the last stop.
 */
#ifndef VMI_HV_GUEST_REPORT_H
#define VMI_HV_GUEST_REPORT_H

#include <stdint.h>

struct vcpu;
struct guest;

/* The counters of v (Ctrl-] s, and every end report). */
void vcpu_print_counters(const struct vcpu *v);
/* The run loop's report of a guest that died (guest_report.c): the stop
 * diagnostic, or the end statistics. */
void guest_report_end(struct guest *g);
/* No guest is left running, and some were stopped: the console answers
 * 's' (their statistics) and 'q' (exit) for ever (guest_report.c). */
__attribute__((noreturn)) void guests_after_stop(struct guest **guests, unsigned n);


#endif
