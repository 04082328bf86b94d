/*
 * boot.S - multiboot entry.
 *
 * GRUB and QEMU enter here in 32-bit protected mode, paging off, with
 * flat segments of their own, EAX = multiboot magic, EBX = multiboot
 * information.  We zero .bss, switch on paging with a boot page directory
 * (identity map of machine memory with 4 MiB pages, plus the switcher at
 * the top), load our GDT (which lives in the switcher), and call C.
 * Nothing here can fault: there is no IDT yet, and a fault would reset
 * the machine silently, so this file stays tiny.
 */
#include "layout.h"
#include "segments.h"
#include "x86.h"
#include "pte.h"
#include "paging_on.h"

#define MB_MAGIC	0x1BADB002
#define MB_FLAGS	0x00000003	/* page-aligned modules, memory map */


	.section .multiboot, "a"
	.balign 4
	.long MB_MAGIC
	.long MB_FLAGS
	.long -(MB_MAGIC + MB_FLAGS)

	.text
	.globl _start
_start:
	cli
	cld
	movl %eax, %esi			/* multiboot magic */
	movl %ebx, %ebp			/* multiboot info (physical) */

	/* Zero .bss: the loaders do, but we do not rely on it. */
	movl $__bss_start, %edi
	movl $__bss_end, %ecx
	subl %edi, %ecx
	shrl $2, %ecx
	xorl %eax, %eax
	rep stosl

	/* Identity-map [0, HV_DIRECT_MAP_END) with 4 MiB pages. */
	movl $boot_page_dir, %edi
	xorl %ecx, %ecx
1:	movl %ecx, %eax
	shll $PDE_SHIFT, %eax
	orl $(PTE_P | PTE_W | PTE_PS), %eax
	movl %eax, (%edi, %ecx, 4)
	incl %ecx
	cmpl $(HV_DIRECT_MAP_END >> PDE_SHIFT), %ecx
	jb 1b

	/* The switcher: PDE 1023 -> switcher_page_table -> the frames where
	 * the loader put the .switcher section. */
	movl $switcher_page_table, %eax
	orl $(PTE_P | PTE_W), %eax
	movl %eax, (HV_SWITCHER_PDE_INDEX * 4)(%edi)
	movl $switcher_page_table, %edi
	movl $__switcher_load, %eax
	orl $(PTE_P | PTE_W), %eax
	movl $__switcher_pages, %ecx
2:	movl %eax, (%edi)
	addl $4, %edi
	addl $HV_PAGE_SIZE, %eax
	loop 2b

	hv_paging_on $boot_page_dir, hv_gdt_desc
	movl $boot_stack_top, %esp
	movl $pcpus, boot_stack		/* this_pcpu(): the boot CPU is pcpus[0] */
	pushl %ebp			/* hv_main(magic, info) */
	pushl %esi
	xorl %ebp, %ebp			/* ends the frame chain for backtraces */
	call hv_main
	call hv_main_returned		/* hv_main never returns; if it does, say so */
5:	cli
	hlt
	jmp 5b

	.bss
	.balign 4096
	.globl boot_page_dir, switcher_page_table
boot_page_dir:
	.skip 4096
switcher_page_table:
	.skip 4096
	/* HV_STACK_SIZE each, aligned to it (pcpu.h's this_pcpu()). */
	.balign HV_STACK_SIZE
	.globl boot_stack, boot_stack_top, boot_df_stack
boot_stack:
	.skip HV_STACK_SIZE
boot_stack_top:
boot_df_stack:
	.skip HV_STACK_SIZE
