/*
 * guest_stop.h - a guest's end (guest_stop.c): stopped for a rule break,
 * rebooted or powered off.  A leaf: it marks the guest dead and goes back
 * to the run loop, which reports it (guest_report.h).
 */
#ifndef VMI_HV_GUEST_STOP_H
#define VMI_HV_GUEST_STOP_H

#include <stdint.h>

struct vcpu;

/* Stop the guest (guest_stop.c): mark it dead with the reason and go
 * back to the run loop, which prints "vmi-hv: guest stopped: <reason>",
 * the registers and the counters. */
__attribute__((noreturn, format(printf, 2, 3)))
void vcpu_stop(struct vcpu *v, const char *fmt, ...);
__attribute__((noreturn, format(printf, 4, 5)))
void vcpu_stop_insn(struct vcpu *v, const uint8_t *bytes, unsigned len, const char *fmt, ...);
/* Stop it for the break already noted in v->brk (a memory callback's,
 * with the instruction when the caller added it). */
__attribute__((noreturn)) void vcpu_stop_noted(struct vcpu *v);
/* The guest rebooted or powered off: it ends, back to the run loop,
 * which prints the statistics (guest_stop.c). */
__attribute__((noreturn)) void vcpu_guest_reboot(struct vcpu *v, const char *why);
__attribute__((noreturn)) void vcpu_guest_shutdown(struct vcpu *v, const char *why);
/* v's guest died on another CPU (vcpus_at_once): back to the run loop,
 * which reaps it once no CPU is inside it. */
__attribute__((noreturn)) void vcpu_leave_dead_guest(struct vcpu *v);

#endif
