/*
 * switcher.S - code that must be mapped in every address space.
 *
 * Linked at HV_SWITCHER_BASE (see hv.ld.S).  For now it holds the trap
 * entry stubs: every IDT gate points at one of 256 16-byte stubs, which
 * push a uniform frame (an error code, real or 0, and the vector) and go
 * to trap_common.  Issue 6 adds the world switch here: the guest-to-host
 * path will reload the hypervisor's CR3 in trap_common before calling C.
 */
#include "segments.h"

	.section .switcher.text, "ax"
	.balign 16
	.globl trap_stubs
trap_stubs:
	.set vec, 0
	.rept 256
	.balign 16
	/* The CPU pushes an error code only for these vectors. */
	.if (vec == 8) || ((vec >= 10) && (vec <= 14)) || (vec == 17) || (vec == 21) || (vec == 29) || (vec == 30)
	.else
	pushl $0
	.endif
	pushl $vec
	jmp trap_common
	.set vec, vec + 1
	.endr

/*
 * Frame layout (low to high) = struct trap_frame in traps.h:
 * edi esi ebp esp0 ebx edx ecx eax, gs fs es ds, vector, error,
 * eip cs eflags [esp ss when coming from a lower privilege level].
 */
trap_common:
	pushl %ds
	pushl %es
	pushl %fs
	pushl %gs
	pushal
	movw $HV_DS, %ax
	movw %ax, %ds
	movw %ax, %es
	cld
	pushl %esp
	movl $trap_dispatch, %eax	/* absolute: we may be far from .text */
	call *%eax
	addl $4, %esp
	popal
	popl %gs
	popl %fs
	popl %es
	popl %ds
	addl $8, %esp			/* vector and error code */
	iret

	.text
/* The double-fault task starts here on its own TSS and stack. */
	.globl df_task_entry
df_task_entry:
	xorl %ebp, %ebp
	call double_fault_task
1:	cli
	hlt
	jmp 1b
