/*
 * switcher.S - code that must be mapped in every address space.
 *
 * Linked at HV_SWITCHER_BASE (see hv.ld.S).  For now it holds the trap
 * entry stubs: every IDT gate points at one of 256 16-byte stubs, which
 * push a uniform frame (an error code, real or 0, and the vector) and go
 * to trap_common.  It also holds the world switch: switch_to_guest (into
 * a guest) and trap_common's from_guest path (back out), which must run
 * on either CR3.  Everything here is mapped read-only in a guest's view
 * (vcpu_switcher.c); only the vCPU's stack page is writable.
 */
#include "segments.h"
#include "vcpu_layout.h"
#include "pcpu.h"

/* Leave through the frame at esp (struct trap_frame): its registers,
 * its segments, then iret past the vector and error code. */
.macro iret_from_frame
	popal
	popl %gs
	popl %fs
	popl %es
	popl %ds
	addl $8, %esp			/* vector and error code */
	iret
.endm

/* reg = this CPU's struct pcpu_tables (pcpu.h): the page its GDT is in,
 * from GDTR (sgdt, 6 bytes, onto the stack).  GDTR is the one pointer to
 * it that holds on either CR3: a guest's view maps this CPU's page at the
 * same linear address as the hypervisor's does, and no other CPU's. */
.macro this_cpu_tables reg
	subl $8, %esp
	sgdt (%esp)
	movl 2(%esp), \reg
	addl $8, %esp
	andl $~(HV_PAGE_SIZE - 1), \reg
.endm

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
 *
 * Two ways in:
 *  - from the hypervisor itself (CS RPL 0): call trap_dispatch on this
 *    stack and iret, as before.  We make sure the hypervisor's CR3 is
 *    loaded first: the only ring-0 code that runs on a guest's CR3 is the
 *    tail of switch_to_guest below, and a fault there must be reported,
 *    not turned into a triple fault by C code that the guest's address
 *    space does not map.
 *  - from a guest (CS RPL 1 or 3): the CPU switched to TSS.esp0, the top
 *    of the vCPU's stack page, so the frame now sits at HV_VCPU_FRAME.
 *    Load the hypervisor's CR3, go back to the stack switch_to_guest
 *    left, and return from it: C finds the guest's registers in the frame.
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
	movw %ax, %fs
	movw %ax, %gs
	cld
	testl $3, HV_TRAP_FRAME_CS(%esp)
	jnz from_guest
	this_cpu_tables %eax
	movl PCPU_HV_CR3(%eax), %eax
	testl %eax, %eax
	jz 1f
	movl %cr3, %ebx
	cmpl %eax, %ebx
	je 1f
	movl %eax, %cr3
1:	pushl %esp
	movl $trap_dispatch, %eax	/* absolute: we may be far from .text */
	call *%eax
	addl $4, %esp
	iret_from_frame

/* Still on the guest's CR3, on the vCPU's stack page: this CPU's tables
 * page is mapped (read-only) in the vCPU's view, so read both words
 * before leaving it. */
from_guest:
	this_cpu_tables %ecx
	movl PCPU_HV_CR3(%ecx), %eax
	movl PCPU_HOST_ESP(%ecx), %ebx
	movl %eax, %cr3
	movl %ebx, %esp
	popl %edi
	popl %esi
	popl %ebx
	popl %ebp
	ret

/*
 * void switch_to_guest(uint32_t shadow_cr3, struct pcpu_tables *t): run
 * the guest (on the CPU whose tables t are) from the
 * registers in the frame at HV_VCPU_FRAME (vcpu.c filled and checked it)
 * until the next trap or interrupt, then return.  Interrupts must be off
 * on entry; the guest's real EFLAGS.IF is 1 (the frame says so), so the
 * first interrupt brings us back through from_guest.
 */
	.globl switch_to_guest
switch_to_guest:
	cli
	movl 4(%esp), %eax
	movl 8(%esp), %ecx
	pushl %ebp
	pushl %ebx
	pushl %esi
	pushl %edi
	movl %esp, PCPU_HOST_ESP(%ecx)
	movl $HV_VCPU_FRAME, %esp
	movl %eax, %cr3
	iret_from_frame

	.text
/* The double-fault task starts here on its own TSS and stack. */
	.globl df_task_entry
df_task_entry:
	xorl %ebp, %ebp
	call double_fault_task
1:	cli
	hlt
	jmp 1b
