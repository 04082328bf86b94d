/*
 * guest_report.h - what the hypervisor says about a guest (guest_report.c):
 * its counters, the report of its end, the console after the last stop.
 */
#ifndef VMI_HV_GUEST_REPORT_H
#define VMI_HV_GUEST_REPORT_H

#include <stdint.h>

struct vcpu;
struct guest;
struct shadow_audit;

/* The counters of v (Ctrl-] s, and every end report), with audit's line
 * if not null.  The audit walks every shadow page, so it is run before
 * console_lock is taken (vcpu_report_audit), never inside the report. */
void vcpu_print_counters(const struct vcpu *v, const struct shadow_audit *audit);
/* The full shadow audit of v's guest into *a, or null when its shadows
 * do not serve (the vTLB does). */
const struct shadow_audit *vcpu_report_audit(const struct vcpu *v, struct shadow_audit *a);
/* The run loop's report of a guest that died (guest_report.c): the stop
 * diagnostic, or the end statistics. */
void guest_report_end(struct guest *g);
/* No guest is left running, and some were stopped: the console answers
 * 's' (their statistics) and 'q' (exit) for ever (guest_report.c). */
__attribute__((noreturn)) void guests_after_stop(struct guest **guests, unsigned n);


#endif
