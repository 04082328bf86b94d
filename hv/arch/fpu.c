/*
 * fpu.c - save and restore the guests' FPU/SSE registers; see fpu.h.
 *
 * Eagerly, at the switch between vCPUs, not lazily with CR0.TS: switches
 * come at most once per time slice or wake-up, and a #NM trap on the
 * guest's first FPU instruction after each would cost an exit as well.
 */
#include "fpu.h"
#include "io.h"
#include "console.h"
#include "hvlib.h"

#define CPUID_EDX_FXSR (1u << 24)
#define FCW_RESET      0x037f	/* all exceptions masked, 64-bit precision */
#define MXCSR_RESET    0x1f80
#define FNSAVE_TAG_ALL_EMPTY 0xffff

static bool have_fxsr;

void fpu_init(void)
{
	uint32_t a, b, c, d;

	cpuid(1, 0, &a, &b, &c, &d);
	have_fxsr = d & CPUID_EDX_FXSR;
	log_info("guest FPU/SSE registers saved and restored at vCPU switches with %s",
		 have_fxsr ? "fxsave/fxrstor" : "fnsave/frstor (no FXSR)");
}

void fpu_area_reset(struct fpu_area *a)
{
	memset(a, 0, sizeof(*a));
	if (have_fxsr) {
		/* fxsave layout: FCW at 0, abridged tag 0 (all empty) at 4,
		 * MXCSR at 24. */
		*(uint16_t *)&a->bytes[0] = FCW_RESET;
		*(uint32_t *)&a->bytes[24] = MXCSR_RESET;
	} else {
		/* fnsave layout (32-bit protected mode): FCW at 0, tags at 8. */
		*(uint32_t *)&a->bytes[0] = FCW_RESET;
		*(uint32_t *)&a->bytes[8] = FNSAVE_TAG_ALL_EMPTY;
	}
}

void fpu_switch(struct fpu_area *from, const struct fpu_area *to)
{
	if (have_fxsr) {
		if (from)
			__asm__ volatile("fxsave %0" : "=m"(*from));
		__asm__ volatile("fxrstor %0" : : "m"(*to));
	} else {
		if (from)
			__asm__ volatile("fnsave %0" : "=m"(*from));
		__asm__ volatile("frstor %0" : : "m"(*to));
	}
}
