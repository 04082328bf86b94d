/* traps.h - the CPU's tables and the interrupt plumbing (hv/arch/). */
#ifndef VMI_HV_TRAPS_H
#define VMI_HV_TRAPS_H

#include <stdint.h>
#include <stdbool.h>
#include "trap_frame.h"

typedef void (*irq_handler_fn)(void);

void cpu_tables_init(void);
struct pcpu;
/* CPU c's tables, loaded on c (the boot CPU's by cpu_tables_init, the
 * others' by smp_boot.c): stacks of HV_STACK_SIZE, claimed for c. */
void cpu_tables_init_cpu(struct pcpu *c, uint32_t stack_top, uint32_t df_stack_top);
/* hv/arch/sysenter.c: IA32_SYSENTER_CS/ESP/EIP to 0 (docs/HV.md, "What the guest can reach"). */
void sysenter_msrs_clear(void);
void cpu_tables_set_cr3(uint32_t cr3);	/* for the double-fault task and trap_common */
void cpu_tables_set_ring0_stack(uint32_t esp0);	/* TSS.esp0 */
/* Vector n as a DPL 3 trap gate to sel:offset (a checked ring-1 code
 * segment) with TSS ss1:esp1 for the stack switch; or back to ours. */
void cpu_tables_set_direct_gate(unsigned n, uint16_t sel, uint32_t offset, uint32_t ss1, uint32_t esp1);
void cpu_tables_clear_direct_gate(unsigned n);
void cpu_tables_install_hypercall_gate(unsigned vector);
/* A hardware interrupt: from the PIC (vector HV_IRQ_BASE..+15) or the
 * local APIC (a vector given a handler): run its driver, EOI.  false
 * when vector is neither (an exception or a software interrupt). */
bool interrupt_dispatch(unsigned vector);
/* The handler of a local APIC vector; it sends its own EOI (the
 * spurious vector takes none). */
void local_vector_set_handler(unsigned vector, irq_handler_fn fn);
/* Interrupts taken on IRQ line irq (0-15) since boot. */
unsigned long long irq_count(unsigned irq);
/* Print the registers of a frame (guest or hypervisor) with esp/ss given. */
void trap_dump_registers(const struct trap_frame *f, uint32_t esp, uint32_t ss);
extern const char *const exception_names[32];
void irq_set_handler(unsigned irq, irq_handler_fn fn);
/* The controller of IRQs 0-15 (the 8259s: drivers/pic.c), registered by
 * main.c: traps.c asks it whether an IRQ is spurious, masks one nobody
 * handles and acknowledges each; it knows no driver itself. */
struct irq_controller {
	bool (*is_spurious)(unsigned irq);
	void (*mask)(unsigned irq);
	void (*eoi)(unsigned irq);
};
void irq_set_controller(const struct irq_controller *c);
void trap_dispatch(struct trap_frame *f);
uint32_t trap_stub_address(unsigned vector);

#endif
