/*
 * fpu.h - the guests' x87, MMX and SSE registers (hv/arch/fpu.c).
 *
 * The hypervisor never uses them itself (it is built without), so a
 * guest's registers stay in the CPU while it runs, across its exits; when
 * the CPU changes vCPU they are saved for the one leaving and restored
 * for the one coming, or one guest would compute with another's.
 */
#ifndef VMI_HV_FPU_H
#define VMI_HV_FPU_H

#include <stdint.h>

/* fxsave's 512-byte image (fnsave's 108 without FXSR). */
struct fpu_area {
	uint8_t bytes[512];
} __attribute__((aligned(16)));

/* Whether the CPU has fxsave/fxrstor, said once at boot; probe the CPU (boot CPU) and set CR0.NE on it. */
void fpu_init(void);
/* The same CR0 setting on a CPU started later (smp_boot.c). */
void fpu_cpu_init(void);
/* The registers as after reset (FNINIT, MXCSR 0x1f80). */
void fpu_area_reset(struct fpu_area *a);
/* Save the CPU's registers into to (a vCPU leaving this CPU). */
void fpu_save(struct fpu_area *to);
/* Save the CPU's registers into from (unless 0), load to's. */
void fpu_switch(struct fpu_area *from, const struct fpu_area *to);

#endif
