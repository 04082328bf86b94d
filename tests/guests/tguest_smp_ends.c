/*
 * tguest_smp_ends.c - guests of several vCPUs for the run loop's edges
 * (tests/cases/test_hv_windows.py, test_hv_smp_guest.py): a power-off
 * while the APs spin (tguest=smpdeath) and VMI Init made again on every
 * vCPU (tguest=smpinit).  The APs start through tguest_smp.c's
 * smp_start_ap, flat, paging off.
 */
#include <stdint.h>
#include "vmi_abi.h"
#include "tguest.h"

#define MAX_APS 8

/*
 * tguest=smpdeath (smp_vcpus=N): vCPUs 1 to N-1 count without end, never
 * exiting of their own; once every count moved, vCPU 0 powers off.  With
 * debug_pick_delay= (tests/cases/test_hv_windows.py) the other CPU is then
 * most likely between a pick and its entry.
 */
static volatile uint32_t own_counts[MAX_APS];

static void count_own(uint32_t id)
{
	for (;;)
		own_counts[id % MAX_APS]++;
}

static void smp_death(uint32_t n)
{
	for (uint32_t id = 1; id < n; id++)
		say_value("tguest: smpdeath: ", "SetInitialAPState", smp_start_ap(id, count_own, 0x11, 0));
	for (uint32_t id = 1; id < n; id++)
		while (!own_counts[id])
			__asm__ volatile("pause");
	puts("tguest: smpdeath: every AP counted; powering off\n");
	__asm__ volatile("int $0x82" : : "D"(VMI_CALL_Shutdown) : "memory");
}

/*
 * tguest=smpinit (smp_vcpus=N): vCPU 0 starts the APs first, then makes
 * VMI Init; each AP then makes its own (accepted: it was started before
 * the guest's), and every vCPU makes Init three times more, each refused
 * (VMI_ERROR_INVALID); vCPU 0 powers off.
 */
static volatile uint32_t inits_go, inits_done, inits_answered_otherwise;

static uint32_t init_call(void)
{
	uint32_t r;

	__asm__ volatile("int $0x82" : "=a"(r) : "D"(VMI_CALL_Init) : "memory");
	return r;
}

static void init_thrice(void)
{
	for (unsigned i = 0; i < 3; i++)
		if (init_call() != 0xffffffeau)
			__atomic_fetch_add(&inits_answered_otherwise, 1, __ATOMIC_SEQ_CST);
}

static void ap_init_thrice(uint32_t id)
{
	(void)id;
	while (!inits_go)
		__asm__ volatile("pause");
	if (init_call())
		__atomic_fetch_add(&inits_answered_otherwise, 1, __ATOMIC_SEQ_CST);
	init_thrice();
	__atomic_fetch_add(&inits_done, 1, __ATOMIC_SEQ_CST);
	for (;;)
		vmi_call5(VMI_CALL_Halt, 0, 0, 0, 0, 0);
}

static void smp_init(uint32_t n)
{
	for (uint32_t id = 1; id < n; id++)
		say_value("tguest: smpinit: ", "SetInitialAPState", smp_start_ap(id, ap_init_thrice, 0x11, 0));
	say_value("tguest: smpinit: ", "Init", init_call());
	inits_go = 1;
	init_thrice();
	while (inits_done < n - 1)
		__asm__ volatile("pause");
	say_value("tguest: smpinit: ", "Inits answered otherwise", inits_answered_otherwise);
	__asm__ volatile("int $0x82" : : "D"(VMI_CALL_Shutdown) : "memory");
}

int smp_ends_main(const char *cmdline)
{
	uint32_t n = cmdline_number(cmdline, "smp_vcpus=", 2);

	if (n > MAX_APS)
		n = MAX_APS;
	if (has_word(cmdline, "tguest=smpdeath")) {
		smp_death(n);
		return 1;
	}
	if (has_word(cmdline, "tguest=smpinit")) {
		smp_init(n);
		return 1;
	}
	return 0;
}
