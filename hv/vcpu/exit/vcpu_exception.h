/*
 * vcpu_exception.h - exceptions and interrupts delivered through the
 * guest's IDT, and its IRET (vcpu_exception.c).
 */
#ifndef VMI_HV_VCPU_EXCEPTION_H
#define VMI_HV_VCPU_EXCEPTION_H

#include <stdint.h>
#include <stdbool.h>
#include "emulate.h"
#include "trap_frame.h"

struct vcpu;

/* Exception delivery through the guest's IDT (vcpu_exception.c).
 * soft_len: instruction length for a software interrupt (int n), else 0. */
void vcpu_deliver(struct vcpu *v, unsigned vector, bool has_error, uint32_t error, unsigned soft_len);
/* VMI IRET from the frame on the guest's stack: EMUL_OK also when the
 * frame faulted and the fault was delivered to the guest; otherwise
 * refused (out->brk.why), f unchanged. */
enum emul_result vcpu_iret(struct vcpu *v, struct trap_frame *f, struct emul_outcome *out);
/* The iret itself; EMUL_FAULT: the exception the CPU's iret raises. */
enum emul_result vcpu_iret_frame(struct vcpu *v, struct trap_frame *f, uint32_t esp,
				 struct emul_outcome *out);
/* Report a faulting IRET (docs/VROM.md, "A faulting IRET"): the frame at
 * frame_esp, the fault at eip (the IRET slot), with the virtual IF the
 * caller had. */
void vcpu_iret_fault(struct vcpu *v, struct trap_frame *f, uint32_t frame_esp, uint32_t eip,
		     const struct emul_outcome *out);

#endif
