/*
 * vcpu_ops.h - the emulator's callbacks and the CPU state they share with the
 * VMI calls (vcpu_ops.c): control and debug registers, CPUID, MSRs, the
 * virtual IF, halting.
 */
#ifndef VMI_HV_VCPU_OPS_H
#define VMI_HV_VCPU_OPS_H

#include <stdint.h>
#include <stdbool.h>
#include "emulate.h"

struct vcpu;

/* The emulator's callbacks (vcpu_ops.c), and the operations they share
 * with the VMI calls: one policy whichever way the guest asks. */
void vcpu_emul_ops(struct vcpu *v, struct emul_ops *ops);
uint32_t vcpu_read_cr(struct vcpu *v, int n);
/* What mov to CRn refuses of val (EMUL_UNSUPPORTED, out->brk.why), without
 * writing anything: EMUL_OK if vcpu_write_cr would take it. */
enum emul_result vcpu_check_cr(int n, uint32_t val, struct emul_outcome *out);
enum emul_result vcpu_write_cr(struct vcpu *v, int n, uint32_t val, struct emul_outcome *out);
void vcpu_cpuid(struct vcpu *v, uint32_t leaf, uint32_t subleaf, uint32_t r[4]);
/* false: no such MSR for the guest (rdmsr reads 0). */
bool vcpu_rdmsr(struct vcpu *v, uint32_t msr, uint64_t *val);
bool vcpu_wrmsr(struct vcpu *v, uint32_t msr, uint64_t val);
void vcpu_write_dr(struct vcpu *v, uint32_t n, uint32_t val);
uint32_t vcpu_read_dr(struct vcpu *v, uint32_t n);
/* hlt with the given virtual IF (vcpu_ops.c): the vCPU is halted until
 * an interrupt can be delivered (the run loop waits); with IF clear the
 * guest is stopped. */
void vcpu_halt(struct vcpu *v);
/* VMI Halt: the virtual IF set and the vCPU halted in one step. */
void vcpu_halt_call(struct vcpu *v);

#endif
