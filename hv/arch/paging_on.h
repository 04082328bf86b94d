/*
 * paging_on.h - the last steps into the hypervisor's own world, shared by
 * the boot CPU (boot.S) and every started CPU (trampoline.S): paging on
 * with the page directory `cr3` (4 MiB pages allowed, CR0.WP so that ring
 * 1 honours read-only pages), the GDT `gdtr`, and the hypervisor's code
 * and data segments loaded.  An assembler macro; clobbers %eax.
 */
#ifndef VMI_HV_PAGING_ON_H
#define VMI_HV_PAGING_ON_H

#include "segments.h"
#include "x86.h"

.macro hv_paging_on cr3, gdtr
	movl \cr3, %eax
	movl %eax, %cr3
	movl %cr4, %eax
	orl $X86_CR4_PSE, %eax
	movl %eax, %cr4
	movl %cr0, %eax
	orl $(X86_CR0_PG | X86_CR0_WP), %eax
	movl %eax, %cr0
	lgdt \gdtr
	ljmp $HV_CS, $.Lhv_segments\@
.Lhv_segments\@:
	movw $HV_DS, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %fs
	movw %ax, %gs
	movw %ax, %ss
.endm

#endif
