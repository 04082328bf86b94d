/*
 * jump.S - hv_setjmp/hv_longjmp: how a guest stop deep inside exit
 * handling gets back to the run loop (run.c), which owns what happens
 * between guest entries.  Only the callee-saved registers, the stack
 * pointer and the return address are kept, as the i386 ABI requires.
 */
	.text
	.globl hv_setjmp
hv_setjmp:
	movl 4(%esp), %eax
	movl %ebx, 0(%eax)
	movl %esi, 4(%eax)
	movl %edi, 8(%eax)
	movl %ebp, 12(%eax)
	leal 4(%esp), %ecx		/* the stack after our return */
	movl %ecx, 16(%eax)
	movl (%esp), %ecx		/* our return address */
	movl %ecx, 20(%eax)
	xorl %eax, %eax
	ret

	.globl hv_longjmp
hv_longjmp:
	movl 4(%esp), %edx
	movl 8(%esp), %eax
	movl 0(%edx), %ebx
	movl 4(%edx), %esi
	movl 8(%edx), %edi
	movl 12(%edx), %ebp
	movl 16(%edx), %esp
	jmp *20(%edx)
