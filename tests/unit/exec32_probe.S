/*
 * exec32_probe.S -- the smallest i386 Linux program: print one line, exit 0.
 *
 * The test runner (tests/lib/exec32.py) runs it once to find out whether this
 * host's kernel executes i386 ELF binaries at all.  Many hardened or container
 * hosts have IA32 emulation off at run time ("Exec format error"); there the
 * 32-bit host helpers (romexec32) run under qemu-i386 instead.  No libc, no
 * dynamic loader: only the kernel's i386 execve and int $0x80 are tested.
 */
	.text
	.globl _start
_start:
	movl	$4, %eax		/* write(1, msg, len) */
	movl	$1, %ebx
	movl	$msg, %ecx
	movl	$len, %edx
	int	$0x80
	movl	$1, %eax		/* exit(0) */
	xorl	%ebx, %ebx
	int	$0x80

	.section .rodata
msg:	.ascii	"exec32-probe: i386 ok\n"
	.set	len, . - msg
	.section .note.GNU-stack, "", @progbits
