/*
 * tguest_smp.c - tguest=smp: a guest of several vCPUs (vcpus=N, N given
 * again as smp_vcpus=N on the guest's command line).  vCPU 0 starts each
 * other vCPU with SetInitialAPState at ap_entry, flat ring-1 segments of
 * entry.S's GDT, a stack of its own and its APIC ID in eax; each prints
 * that ID, adds one to a shared counter and halts for good.  vCPU 0
 * waits for the counter, then tries the garbage the hypervisor must
 * refuse without harm (docs/HV.md, "A guest of several vCPUs"), prints
 * each answer, and powers off.
 */
#include <stdint.h>
#include "vmi_abi.h"
#include "tguest.h"

#define MAX_APS 8
#define AP_STACK 1024

extern char gdt[], gdt_end[];		/* entry.S: 0x10 flat code, 0x18 flat data */

static volatile uint32_t started;
static uint8_t ap_stacks[MAX_APS][AP_STACK] __attribute__((aligned(16)));

/* Each AP begins here, its APIC ID in eax (the APState's). */
void ap_main(uint32_t id)
{
	say_value("tguest: smp: ", "AP up, APIC ID", id);
	__atomic_fetch_add(&started, 1, __ATOMIC_SEQ_CST);
	for (;;)
		__asm__ volatile("cli; hlt");	/* stops this vCPU, not the guest */
}

__asm__(".text\n"
	"ap_entry:\n\t"
	"pushl %eax\n\t"
	"call ap_main\n"
	"1:\tjmp 1b\n");
extern char ap_entry[];

static APState flat_state(uint32_t id)
{
	APState s = { 0 };

	s.cr0 = 0x11;			/* PE, ET: paging off, as the boot CPU's */
	s.eip = (uint32_t)ap_entry;
	s.eflags = 0x2;
	s.eax = id;
	s.esp = (uint32_t)ap_stacks[id % MAX_APS] + AP_STACK;
	s.cs = 0x11;
	s.ss = s.ds = s.es = 0x19;
	s.gdtr_base = (uint32_t)gdt;
	s.gdtr_limit = (uint16_t)(gdt_end - gdt - 1);
	return s;
}

static uint32_t start_ap(const APState *s, uint32_t id)
{
	return vmi_call5(VMI_CALL_SetInitialAPState, (uint32_t)s, id, 0, 0, 0);
}

/* One garbage call, its answer on the console for the test to read. */
static void garbage(const char *what, uint32_t lin, uint32_t id)
{
	say_value("tguest: smp: garbage ", what, vmi_call5(VMI_CALL_SetInitialAPState, lin, id, 0, 0, 0));
}

int smp_main(const char *cmdline)
{
	uint32_t n, spins = 0;
	APState s;

	if (!has_word(cmdline, "tguest=smp"))
		return 0;
	n = cmdline_number(cmdline, "smp_vcpus=", 2);
	if (n > MAX_APS)
		n = MAX_APS;
	/* The last AP waits through the garbage, then starts as the others. */
	uint32_t last = n - 1;

	s = flat_state(1);
	garbage("bad pointer", 0xfffff000u, last);
	garbage("APIC ID out of range", (uint32_t)&s, 99);
	s = flat_state(last);
	s.cs = 0x10;
	garbage("ring-0 CS", (uint32_t)&s, last);
	s = flat_state(last);
	s.gdtr_base = 0xfff00000u;
	garbage("bad GDT base", (uint32_t)&s, last);
	s = flat_state(last);
	s.eflags = 0x20002;
	garbage("VM flag", (uint32_t)&s, last);
	for (uint32_t id = 1; id < n; id++) {
		s = flat_state(id);
		say_value("tguest: smp: ", "SetInitialAPState", start_ap(&s, id));
	}
	while (started < n - 1 && ++spins < 2000000000u)
		__asm__ volatile("pause");
	say_value("tguest: smp: ", "APs started", started);
	s = flat_state(1);
	garbage("start twice", (uint32_t)&s, 1);
	say_value("tguest: smp: ", "survived, APs", started);
	__asm__ volatile("int $0x82" : : "D"(VMI_CALL_Shutdown) : "memory");
	return 1;
}
