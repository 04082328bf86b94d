/*
 * sysenter.c - no way into ring 0 through sysenter (docs/HV.md, "What the guest can reach").
 *
 * sysenter loads CS from IA32_SYSENTER_CS with CPL 0, from any ring,
 * without looking at the IDT or the GDT's DPLs.  The hypervisor never
 * uses it, but a boot loader (or the firmware, or an OS that ran before
 * a warm reboot) may have left it set: then a guest's user program
 * executing sysenter would run at CPL 0, at SYSENTER_EIP, on the guest's
 * page tables.  With SYSENTER_CS = 0 the CPU raises #GP(0) instead, which
 * reaches the guest's kernel as any other user fault (vcpu.c), as on a
 * PC whose kernel did not enable sysenter.  The guest never sees these
 * MSRs: its own rdmsr/wrmsr are virtual (vcpu_ops.c).
 *
 * Only where the CPU has them (CPUID.1:EDX.SEP): without SEP, sysenter is
 * #UD and writing the MSRs would be #GP here.
 */
#include "traps.h"
#include "io.h"
#include "x86.h"
#include "log.h"

void sysenter_msrs_clear(void)
{
	uint32_t a, b, c, d;
	uint64_t cs;

	cpuid(1, 0, &a, &b, &c, &d);
	if (!(d & X86_CPUID1_EDX_MSR) || !(d & X86_CPUID1_EDX_SEP))
		return;
	cs = rdmsr(X86_MSR_IA32_SYSENTER_CS);
	if (cs)
		log_warn("IA32_SYSENTER_CS was 0x%llx (left by the boot loader): zeroed, "
			 "so that sysenter from a guest is #GP", (unsigned long long)cs);
	wrmsr(X86_MSR_IA32_SYSENTER_CS, 0);
	wrmsr(X86_MSR_IA32_SYSENTER_ESP, 0);
	wrmsr(X86_MSR_IA32_SYSENTER_EIP, 0);
}
