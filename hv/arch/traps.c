/*
 * traps.c - what happens on an exception or interrupt in the hypervisor.
 *
 * Interrupts go to their drivers.  An exception in the hypervisor is a
 * bug: we print everything we know (registers, control registers, the
 * faulting address, a frame-pointer backtrace) and stop cleanly with
 * HV_EXIT_CPU_EXCEPTION.  A double fault arrives on its own task (see
 * cpu_tables.c) and stops with HV_EXIT_DOUBLE_FAULT.
 */
#include "traps.h"
#include "log.h"
#include "stop.h"
#include "io.h"
#include "segments.h"
#include "layout.h"
#include "pcpu.h"

static irq_handler_fn irq_handlers[16];
/* Local APIC vectors: HV_LOCAL_TIMER_VECTOR and the spurious one. */
static irq_handler_fn local_timer_handler, local_spurious_handler, local_ipi_handler;
static unsigned long long irq_counts[16];
/* The legacy interrupt controller (main.c registers the 8259's). */
static const struct irq_controller *controller;

void irq_set_controller(const struct irq_controller *c)
{
	controller = c;
}

const char *const exception_names[32] = {
	"#DE divide error", "#DB debug", "NMI", "#BP breakpoint",
	"#OF overflow", "#BR bound range", "#UD invalid opcode",
	"#NM device not available", "#DF double fault",
	"coprocessor segment overrun", "#TS invalid TSS",
	"#NP segment not present", "#SS stack fault",
	"#GP general protection", "#PF page fault", "reserved 15",
	"#MF x87 error", "#AC alignment check", "#MC machine check",
	"#XM SIMD error", "#VE virtualization", "#CP control protection",
};

void irq_set_handler(unsigned irq, irq_handler_fn fn)
{
	HV_ASSERT(irq < 16);
	irq_handlers[irq] = fn;
}

static void backtrace(uint32_t ebp)
{
	kprintf("  backtrace:");
	/* Follow saved frame pointers while they point into mapped RAM; the
	 * chain ends at the zero boot.S puts in ebp. */
	for (int depth = 0; depth < 12; depth++) {
		uint32_t *frame = (uint32_t *)ebp;

		if (ebp < HV_PAGE_SIZE || ebp >= HV_DIRECT_MAP_END || (ebp & 3))
			break;
		kprintf(" %08x", frame[1]);
		ebp = frame[0];
	}
	kprintf("\n");
}

void trap_dump_registers(const struct trap_frame *f, uint32_t esp, uint32_t ss)
{
	kprintf("  eax=%08x ebx=%08x ecx=%08x edx=%08x\n",
		f->eax, f->ebx, f->ecx, f->edx);
	kprintf("  esi=%08x edi=%08x ebp=%08x esp=%08x\n",
		f->esi, f->edi, f->ebp, esp);
	kprintf("  eip=%08x eflags=%08x cs=%04x ss=%04x ds=%04x es=%04x fs=%04x gs=%04x\n",
		f->eip, f->eflags, f->cs & 0xffff, ss & 0xffff, f->ds & 0xffff,
		f->es & 0xffff, f->fs & 0xffff, f->gs & 0xffff);
	kprintf("  cr0=%08x cr2=%08x cr3=%08x cr4=%08x\n",
		read_cr0(), read_cr2(), read_cr3(), read_cr4());
}

static void page_fault_reason(uint32_t err)
{
	kprintf("  page fault: %s, %s, %s mode%s\n",
		err & 1 ? "protection violation" : "page not present",
		err & 2 ? "write" : "read",
		err & 4 ? "user" : "supervisor",
		err & 16 ? ", instruction fetch" : "");
}

__attribute__((noreturn))
static void exception(struct trap_frame *f)
{
	const char *name = exception_names[f->vector];
	uint32_t esp, ss;

	/* Same-privilege traps push no esp/ss: the stack continued right
	 * above eflags. */
	if ((f->cs & 3) == 0) {
		esp = (uint32_t)&f->esp;
		__asm__ volatile("mov %%ss, %0" : "=r"(ss));
	} else {
		esp = f->esp;
		ss = f->ss;
	}
	kprintf("\nvmi-hv: CPU exception %u (%s) in the hypervisor, error code 0x%x\n",
		f->vector, name ? name : "reserved", f->error);
	if (f->vector == 14) {
		kprintf("vmi-hv: faulting address 0x%08x, at eip 0x%08x\n",
			read_cr2(), f->eip);
		page_fault_reason(f->error);
	} else {
		kprintf("vmi-hv: faulting instruction at eip 0x%08x\n", f->eip);
	}
	trap_dump_registers(f, esp, ss);
	backtrace(f->ebp);
	hv_stop(HV_EXIT_CPU_EXCEPTION, "CPU exception %u in the hypervisor",
		f->vector);
}

unsigned long long irq_count(unsigned irq)
{
	return irq < 16 ? irq_counts[irq] : 0;
}

void local_vector_set_handler(unsigned vector, irq_handler_fn fn)
{
	if (vector == HV_LOCAL_TIMER_VECTOR)
		local_timer_handler = fn;
	else if (vector == HV_LOCAL_SPURIOUS_VECTOR)
		local_spurious_handler = fn;
	else if (vector == HV_LOCAL_IPI_VECTOR)
		local_ipi_handler = fn;
	else
		hv_panic("no local APIC vector %u", vector);
}

static void irq_dispatch(unsigned vector)
{
	unsigned irq = vector - HV_IRQ_BASE;

	if (!controller || controller->is_spurious(irq))
		return;
	irq_counts[irq]++;
	if (irq_handlers[irq])
		irq_handlers[irq]();
	else {
		/* Nobody owns it: mask it rather than take it forever. */
		log_warn("unexpected IRQ %u; masking it", irq);
		controller->mask(irq);
	}
	controller->eoi(irq);
}

bool interrupt_dispatch(unsigned vector)
{
	if (vector >= HV_IRQ_BASE && vector < HV_IRQ_BASE + 16) {
		irq_dispatch(vector);
		return true;
	}
	if (vector == HV_LOCAL_TIMER_VECTOR && local_timer_handler) {
		local_timer_handler();
		return true;
	}
	if (vector == HV_LOCAL_SPURIOUS_VECTOR && local_spurious_handler) {
		local_spurious_handler();
		return true;
	}
	if (vector == HV_LOCAL_IPI_VECTOR && local_ipi_handler) {
		local_ipi_handler();
		return true;
	}
	return false;
}

void trap_dispatch(struct trap_frame *f)
{
	if (f->vector < 32)
		exception(f);
	if (interrupt_dispatch(f->vector))
		return;
	hv_panic("unexpected interrupt vector %u at eip 0x%08x", f->vector,
		 f->eip);
}

/*
 * The double-fault task.  The task switch saved the state of the code
 * that faulted into the main TSS; print it from there.
 */
__attribute__((noreturn)) void double_fault_task(void)
{
	const struct tss *t = &pcpu_tables_of(this_pcpu())->tss;

	kprintf("\nvmi-hv: CPU exception 8 (#DF double fault) in the hypervisor\n");
	kprintf("vmi-hv: faulting instruction at eip 0x%08x, stack at esp 0x%08x (cr2 0x%08x)\n",
		t->eip, t->esp, read_cr2());
	kprintf("  eax=%08x ebx=%08x ecx=%08x edx=%08x\n",
		t->eax, t->ebx, t->ecx, t->edx);
	kprintf("  esi=%08x edi=%08x ebp=%08x esp=%08x\n",
		t->esi, t->edi, t->ebp, t->esp);
	kprintf("  eip=%08x eflags=%08x cs=%04x ss=%04x ds=%04x es=%04x\n",
		t->eip, t->eflags, t->cs, t->ss, t->ds, t->es);
	kprintf("  cr0=%08x cr2=%08x cr3=%08x cr4=%08x\n",
		read_cr0(), read_cr2(), read_cr3(), read_cr4());
	hv_stop(HV_EXIT_DOUBLE_FAULT, "double fault in the hypervisor");
}

__attribute__((noreturn)) void hv_main_returned(void)
{
	hv_panic("hv_main returned");
}
