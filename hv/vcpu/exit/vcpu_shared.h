/*
 * vcpu_shared.h - the VMI shared page (vcpu_shared.c) and the direct
 * system-call gate (vcpu_syscall.c).
 */
#ifndef VMI_HV_VCPU_SHARED_H
#define VMI_HV_VCPU_SHARED_H

#include <stdint.h>
#include <stdbool.h>
#include "trap_frame.h"

struct vcpu;

/* The VMI shared page (vcpu_shared.c): set up, published before each
 * entry, taken back after each exit; an exit inside the ROM's IRET
 * window finishes that IRET first (false: nothing more to handle). */
void vcpu_shared_init(struct vcpu *v, bool fastpaths);
void vcpu_share_state(struct vcpu *v);
void vcpu_take_shared_state(struct vcpu *v);
bool vcpu_finish_rom_iret(struct vcpu *v, struct trap_frame *f);

/* System calls without an exit (vcpu_syscall.c): the guest's gate read
 * again when its IDT changes, installed in the CPU's IDT before each
 * entry when it passes the checks, and the entry window after an exit. */
void vcpu_syscall_gate_refresh(struct vcpu *v);
void vcpu_syscall_gate_install(struct vcpu *v);
void vcpu_syscall_entry_window(struct vcpu *v, const struct trap_frame *f);
/* VMI UpdateKernelStack. */
void vcpu_set_kernel_stack(struct vcpu *v, uint32_t ss, uint32_t esp);

#endif
