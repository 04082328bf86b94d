/*
 * fpu.c - save and restore the guests' FPU/SSE registers; see fpu.h.
 *
 * Eagerly, at the switch between vCPUs, not lazily with CR0.TS: switches
 * come at most once per time slice or wake-up, and a #NM trap on the
 * guest's first FPU instruction after each would cost an exit as well.
 *
 * CR0.NE is set: an unmasked x87 exception is #MF (vector 16) in the
 * guest that caused it, which the vCPU reflects to its IDT as any other
 * exception, so Linux sends its process SIGFPE.  With NE clear it would
 * be the legacy FERR# line, IRQ13 on the hypervisor's masked 8259: lost.
 * The hypervisor itself runs no waiting x87 instruction (fxsave, fxrstor,
 * fnsave, frstor, fnclex and fildl below cannot raise a pending one).
 *
 * AMD's fxsave saves the last x87 instruction and operand pointers (FIP,
 * FDP, FOP) only while an exception is pending, and fxrstor then leaves
 * the CPU's as they were: the next guest would read the previous guest's
 * addresses.  Before fxrstor of an image with no exception pending, an
 * x87 load of a known value sets them to the hypervisor's (Linux's
 * X86_BUG_FXSAVE_LEAK workaround).
 */
#include "fpu.h"
#include "io.h"
#include "log.h"
#include "hvlib.h"
#include "x86.h"

#define CPUID_EDX_FXSR (1u << 24)
#define FCW_RESET      0x037f	/* all exceptions masked, 64-bit precision */
#define MXCSR_RESET    0x1f80
#define FNSAVE_TAG_ALL_EMPTY 0xffff
#define FXSAVE_FSW     2	/* offset of the status word in fxsave's image */
#define FSW_ES         0x0080	/* an unmasked exception is pending */

static bool have_fxsr, fxsave_leaks;
static const uint32_t known_value;	/* fildl's operand: FDP points here */

/* Each CPU: x87 errors as #MF, not the legacy FERR# line. */
void fpu_cpu_init(void)
{
	write_cr0(read_cr0() | X86_CR0_NE);
}

void fpu_init(void)
{
	uint32_t a, b, c, d;

	cpuid(0, 0, &a, &b, &c, &d);
	/* "AuthenticAMD" in ebx, edx, ecx */
	fxsave_leaks = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;
	cpuid(1, 0, &a, &b, &c, &d);
	have_fxsr = d & CPUID_EDX_FXSR;
	fpu_cpu_init();
	log_info("guest FPU/SSE registers saved and restored at vCPU switches with %s; x87 errors are #MF (CR0.NE)%s",
		 have_fxsr ? "fxsave/fxrstor" : "fnsave/frstor (no FXSR)",
		 have_fxsr && fxsave_leaks ? "; x87 pointers cleared between guests (AMD fxsave)" : "");
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

void fpu_save(struct fpu_area *to)
{
	if (have_fxsr)
		__asm__ volatile("fxsave %0" : "=m"(*to));
	else
		__asm__ volatile("fnsave %0" : "=m"(*to));
}

void fpu_switch(struct fpu_area *from, const struct fpu_area *to)
{
	if (have_fxsr) {
		if (from)
			__asm__ volatile("fxsave %0" : "=m"(*from));
		if (fxsave_leaks && !(*(const uint16_t *)&to->bytes[FXSAVE_FSW] & FSW_ES))
			__asm__ volatile("fnclex\n\tffree %%st(7)\n\tfildl %0" : : "m"(known_value));
		__asm__ volatile("fxrstor %0" : : "m"(*to));
	} else {
		if (from)
			__asm__ volatile("fnsave %0" : "=m"(*from));
		__asm__ volatile("frstor %0" : : "m"(*to));
	}
}
