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
	/* Before its own GDT: how many of slots 4-9 of the GDT it was
	 * started with are loadable (lsl, which runs natively in ring 1).
	 * The boot protocol's GDT has __BOOT_CS and __BOOT_DS (slots 2, 3)
	 * only, after a reboot too (tguest=gdtreboot reports it). */
	xorl %ecx, %ecx
	movl $0x21, %edx
3:	lsl %edx, %eax
	jnz 4f
	incl %ecx
4:	addl $8, %edx
	cmpl $0x51, %edx
	jb 3b
	movl %ecx, boot_gdt_loadable
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
	.balign 4
	.globl boot_gdt_loadable
boot_gdt_loadable:
	.long 0xffffffff
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
