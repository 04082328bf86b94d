/*
 * ap_boot.h - what the boot CPU hands a CPU it starts: the block
 * trampoline.S reads at fixed offsets (it owns the storage, so that the
 * trampoline refers to nothing above it) and smp_boot.c fills in, for one
 * CPU at a time.
 */
#ifndef VMI_HV_AP_BOOT_H
#define VMI_HV_AP_BOOT_H

#define AP_BOOT_CR3        0	/* the hypervisor's page directory */
#define AP_BOOT_GDTR       6	/* the CPU's own GDT: limit, then base */
#define AP_BOOT_STACK_TOP 12
#define AP_BOOT_ENTRY     28	/* where its C begins, on that stack */
#define AP_BOOT_SIZE      32

#ifndef __ASSEMBLER__
#include <stdint.h>

struct pcpu;

struct ap_boot {
	uint32_t cr3;
	uint16_t pad;
	uint16_t gdt_limit;
	uint32_t gdt_base;
	uint32_t stack_top;
	struct pcpu *cpu;
	uint32_t df_stack_top;
	void (*cpu_main)(struct pcpu *c);
	void (*entry)(void);
} __attribute__((packed));
_Static_assert(__builtin_offsetof(struct ap_boot, cr3) == AP_BOOT_CR3, "trampoline.S");
_Static_assert(__builtin_offsetof(struct ap_boot, gdt_limit) == AP_BOOT_GDTR, "trampoline.S");
_Static_assert(__builtin_offsetof(struct ap_boot, stack_top) == AP_BOOT_STACK_TOP, "trampoline.S");
_Static_assert(__builtin_offsetof(struct ap_boot, entry) == AP_BOOT_ENTRY, "trampoline.S");
_Static_assert(sizeof(struct ap_boot) == AP_BOOT_SIZE, "trampoline.S");

/* The block, in trampoline.S's data. */
extern struct ap_boot ap_boot;
/* The trampoline, copied to a page below 1 MiB; the linear address of
 * its GDT patched in at ap_trampoline_gdtr_base. */
extern const char ap_trampoline[], ap_trampoline_end[], ap_trampoline_gdt[],
	ap_trampoline_gdtr_base[];
#endif

#endif
