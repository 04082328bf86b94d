/*
 * vcpu_shootdown.h - the other CPUs running vCPUs of a guest, made to
 * leave it (vcpu_shootdown.c; docs/SMP.md, "Concurrent vCPUs").
 */
#ifndef VMI_HV_VCPU_SHOOTDOWN_H
#define VMI_HV_VCPU_SHOOTDOWN_H

#include "vcpu_state.h"

/* With g's lock held: every other CPU in guest mode in a vCPU of g is
 * sent an IPI, and this CPU waits until each has left guest mode (its
 * TLB went with its CR3).  The shadows' env.remote_flush. */
void guest_shootdown(struct guest *g);
/* The same IPIs, without waiting (g has died: they come back to the loop
 * at their exit). */
void guest_kick_running(struct guest *g);
/* v is in guest mode on another CPU: that CPU is sent an IPI, so that v
 * takes an interrupt now at its exit and re-entry.  Not waited for. */
void vcpu_kick_running(struct vcpu *v);
/* With v's guest's lock held: if v is in guest mode on another CPU, that
 * CPU is sent an IPI and this CPU waits until v has left guest mode; v
 * then cannot enter again (nor touch its shared page) until the lock
 * goes.  True if it had to be made to leave. */
bool vcpu_make_leave(struct vcpu *v);
/* The CPU v is in guest mode on (pcpu.in_guest), or -1. */
int vcpu_guest_mode_cpu(const struct vcpu *v);

#endif
