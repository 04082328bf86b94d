/*
 * smp_boot.c - start the application processors.
 *
 * The boot CPU copies the real-mode trampoline (arch/trampoline.S) to a
 * free page below 640 KiB and, for one CPU at a time, fills in ap_boot
 * (the page directory, that CPU's GDT and stack) and sends INIT, then
 * two startup IPIs (Intel SDM 3A, 8.4.4.1; the second is ignored by a CPU
 * that took the first).  The CPU loads its tables, its local APIC and
 * CR0, marks itself online and calls the run loop's entry.  The boot CPU
 * waits for that, up to 200 ms, before starting the next one, so ap_boot
 * is never shared.
 */
#include "smp.h"
#include "pcpu.h"
#include "lapic.h"
#include "traps.h"
#include "fpu.h"
#include "machine_mem.h"
#include "address_space.h"
#include "log.h"
#include "tsc.h"
#include "io.h"
#include "hvlib.h"
#include "segments.h"
#include "stop.h"
#include "ap_boot.h"

unsigned nr_online_cpus = 1;

/* Where a started CPU's C begins (trampoline.S calls ap_boot.entry on its
 * stack). */
__attribute__((noreturn)) static void ap_main(void)
{
	struct pcpu *c = ap_boot.cpu;

	cpu_tables_init_cpu(c, ap_boot.stack_top, ap_boot.df_stack_top);
	fpu_cpu_init();
	sysenter_msrs_clear();
	lapic_init_secondary();
	c->apic_id = lapic_id();
	__atomic_store_n(&c->online, true, __ATOMIC_RELEASE);
	ap_boot.cpu_main(c);
	hv_panic("CPU %u: its main loop returned", c->index);
}

void cpu_kick(struct pcpu *c)
{
	if (!lapic_send_fixed(c->apic_id, HV_LOCAL_IPI_VECTOR))
		log_warn("CPU %u: the local APIC did not send the IPI", c->index);
}

/* A stack of HV_STACK_SIZE aligned to its size, claimed for c. */
static uint32_t new_stack(struct pcpu *c)
{
	uint32_t pfn;

	if (!frames_alloc_contig(&machine_frames, HV_STACK_SIZE / HV_PAGE_SIZE,
				 HV_STACK_SIZE / HV_PAGE_SIZE, &pfn))
		hv_panic("out of machine memory for a CPU's stack");
	return pcpu_stack_claim(c, phys_to_virt(pfn * HV_PAGE_SIZE));
}

static bool wait_online(struct pcpu *c, uint64_t us)
{
	uint64_t end = rdtsc() + udiv64(tsc_hz() * us, 1000000);

	while (!__atomic_load_n(&c->online, __ATOMIC_ACQUIRE))
		if (rdtsc() > end)
			return false;
	return true;
}

static void delay_us(uint64_t us)
{
	uint64_t end = rdtsc() + udiv64(tsc_hz() * us, 1000000);

	while (rdtsc() < end)
		cpu_relax();
}

/* INIT, 10 ms, SIPI, 200 us, SIPI; then up to 200 ms for the CPU. */
static const char *start_one(struct pcpu *c, uint8_t apic_id, uint32_t page)
{
	if (!lapic_send_init(apic_id))
		return "the local APIC did not send INIT";
	delay_us(10000);
	for (int i = 0; i < 2 && !c->online; i++) {
		if (!lapic_send_startup(apic_id, page))
			return "the local APIC did not send the startup IPI";
		delay_us(200);
	}
	if (!wait_online(c, 200000))
		return "it did not come up within 200 ms of the startup IPIs";
	return 0;
}

void smp_start_cpus(const struct cpu_list *cpus, unsigned max_cpus,
		    void (*cpu_main)(struct pcpu *c))
{
	uint8_t self = lapic_id();
	uint32_t page = 0;
	unsigned limit = max_cpus ? max_cpus : HV_NR_PCPUS;

	pcpus[0].apic_id = self;
	pcpus[0].online = true;
	for (unsigned i = 0; i < cpus->n; i++) {
		const struct cpu_list_entry *e = &cpus->cpu[i];
		struct pcpu *c;
		const char *why;

		if (e->apic_id == self)
			continue;
		if (!e->enabled) {
			log_info("CPU with APIC ID %u not started: the firmware marks it disabled", e->apic_id);
			continue;
		}
		if (nr_online_cpus >= limit) {
			log_info("CPU with APIC ID %u not started: %s%u CPUs", e->apic_id,
				 max_cpus ? "cpus= asks for " : "vmi-hv runs on at most ", limit);
			continue;
		}
		if (!page) {
			page = machine_mem_low_page();
			if (!page) {
				log_warn("no free page below 640 KiB for the startup code: the boot CPU alone");
				return;
			}
			memcpy(phys_to_virt(page), ap_trampoline, ap_trampoline_end - ap_trampoline);
			*(uint32_t *)phys_to_virt(page + (ap_trampoline_gdtr_base - ap_trampoline)) =
				page + (uint32_t)(ap_trampoline_gdt - ap_trampoline);
		}
		c = &pcpus[nr_online_cpus];
		c->index = nr_online_cpus;
		ap_boot = (struct ap_boot){
			.cr3 = hv_cr3(), .gdt_limit = sizeof(pcpu_tables_of(c)->gdt) - 1,
			.gdt_base = (uint32_t)pcpu_tables_of(c)->gdt,
			.stack_top = new_stack(c), .df_stack_top = new_stack(c), .cpu = c,
			.cpu_main = cpu_main, .entry = ap_main,
		};
		why = start_one(c, e->apic_id, page);
		if (why) {
			/* It may still wake later, on this pcpu and ap_boot:
			 * start no other. */
			log_warn("CPU with APIC ID %u not started: %s; no further CPU is started",
				 e->apic_id, why);
			return;
		}
		log_info("CPU %u started: APIC ID %u, its own GDT, IDT, TSSes and stacks", c->index, c->apic_id);
		nr_online_cpus++;
	}
}
