/*
 * entry.S - the test guest's 32-bit entry, as the boot protocol enters a
 * bzImage's protected-mode code at 1 MiB: flat __BOOT_CS/__BOOT_DS, paging
 * and interrupts off, %esi = boot_params.  Under vmi-hv this already runs
 * in ring 1, so every privileged instruction here is emulated: cli, lgdt,
 * the far jump (native: a DPL-1 code segment), the segment loads (mov ss
 * with RPL 0 is emulated).
 */
	.section .text.entry, "ax"
	.globl _start
_start:
	cli
	lgdt gdt_desc
	ljmp $0x10, $1f
1:	movl $0x18, %eax
	movl %eax, %ds
	movl %eax, %es
	movl %eax, %fs
	movl %eax, %gs
	movl %eax, %ss
	movl $stack_top, %esp
	pushl %esi
	call tguest_main
2:	hlt
	jmp 2b

	.data
	.balign 8
	.globl gdt, gdt_end		/* tguest_smp.c starts its APs on it */
gdt:
	.quad 0
	.quad 0
	.quad 0x00cf9a000000ffff	/* 0x10: flat code, DPL 0 */
	.quad 0x00cf92000000ffff	/* 0x18: flat data, DPL 0 */
gdt_end:
gdt_desc:
	.word gdt_end - gdt - 1
	.long gdt

	.bss
	.balign 16
	.skip 8192
stack_top:
