// SPDX-License-Identifier: GPL-2.0
/*
 * nop: the smallest static i386 program, for microbench's fork+exec.  No
 * libc: exec then costs the kernel's work (a fresh address space, one
 * ELF segment, a few pages) and not libc's start-up.
 * Built with -nostdlib -static; exits 0 at once.
 */
__attribute__((noreturn)) void _start(void)
{
	asm volatile("int $0x80" : : "a"(1 /* __NR_exit */), "b"(0));
	__builtin_unreachable();
}
