/*
 * tguest_exits.c - tguest=exits: an exit-heavy guest for the test of
 * exits handled on two CPUs at once (tests/cases/test_hv_smp.py,
 * hv-smp-parallel-exits).
 *
 * VMI Init, then EXITS_WINDOWS windows of 200 ms (the VMI real-time
 * counter) each spent making VMI calls the hypervisor answers (CPUID: one
 * exit each, no device touched, so every exit is quiet), the count of
 * each window printed as
 *     exits: window N: calls X
 * then Shutdown.  Interrupts stay off: the only exits are its calls and
 * the hypervisor's own timer and IPIs.
 */
#include <stdint.h>
#include "tguest.h"
#include "vmi_abi.h"

#define EXITS_WINDOWS 6

static uint64_t real_cycles(void)
{
	uint32_t a = VMI_CYCLES_REAL, d = 0, c = 0, b = 0, s = 0;

	__asm__ volatile("int $0x82" : "+a"(a), "+d"(d), "+c"(c), "+b"(b), "+S"(s)
			 : "D"(VMI_CALL_GetCycleCounter) : "memory", "cc");
	return a | (uint64_t)d << 32;
}

int exits_main(const char *cmdline)
{
	uint64_t window;

	if (!has_word(cmdline, "tguest=exits"))
		return 0;
	vmi_call5(VMI_CALL_Init, 0, 0, 0, 0, 0);
	window = (uint64_t)(vmi_call5(VMI_CALL_GetCycleFrequency, 0, 0, 0, 0, 0) / 1000) * 200;
	for (unsigned w = 0; w < EXITS_WINDOWS; w++) {
		uint64_t end = real_cycles() + window;
		uint32_t calls = 0;

		/* Each turn: one CPUID call and one counter read. */
		while (real_cycles() < end) {
			vmi_call5(VMI_CALL_CPUID, 0, 0, 0, 0, 0);
			calls += 2;
		}
		puts("exits: window ");
		puthex(w);
		puts(": calls ");
		puthex(calls);
		puts("\n");
	}
	puts("exits: done\n");
	vmi_call5(VMI_CALL_Shutdown, 0, 0, 0, 0, 0);
	for (;;)
		;
}
