/*
 * trampoline.S - where a started CPU begins: real mode, at the page
 * smp_boot.c copied this code to (the startup IPI's vector is that
 * page's number, so CS = page << 8 and IP = 0).
 *
 * It loads a flat GDT of its own (its linear address patched in by the
 * boot CPU), switches protection on and far-jumps to ap_entry32, in the
 * hypervisor's image at its linear == physical address.  There the CPU
 * turns on paging with the hypervisor's page directory, loads its own
 * GDT and stack (ap_boot, filled in by the boot CPU for one CPU at a
 * time) and calls ap_boot.entry.
 */
#include "ap_boot.h"
#include "segments.h"
#include "x86.h"
#include "paging_on.h"

#define TRAMP_CS 0x08
#define TRAMP_DS 0x10
#define OFF(sym) ((sym) - ap_trampoline)

	.section .rodata
	.code16
	.balign 16
	.globl ap_trampoline, ap_trampoline_end, ap_trampoline_gdt, ap_trampoline_gdtr_base
ap_trampoline:
	cli
	cld
	movw %cs, %ax
	movw %ax, %ds
	lgdtl OFF(tramp_gdtr)
	movl %cr0, %eax
	orl $X86_CR0_PE, %eax
	movl %eax, %cr0
	ljmpl *OFF(tramp_far)

	.balign 8
ap_trampoline_gdt:
	.quad 0
	.quad 0x00cf9a000000ffff	/* TRAMP_CS: flat 32-bit code */
	.quad 0x00cf92000000ffff	/* TRAMP_DS: flat 32-bit data */
tramp_gdtr:
	.word 3 * 8 - 1
ap_trampoline_gdtr_base:		/* patched: page + OFF(tramp_gdt) */
	.long 0
tramp_far:
	.long ap_entry32
	.word TRAMP_CS
ap_trampoline_end:

	.text
	.code32
/* Protected mode, paging off, on the trampoline's flat segments. */
	.globl ap_entry32
ap_entry32:
	movw $TRAMP_DS, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	/* ap_boot.cr3, and ap_boot.gdt_limit/base: the CPU's own GDT */
	hv_paging_on ap_boot + AP_BOOT_CR3, ap_boot + AP_BOOT_GDTR
	movl ap_boot + AP_BOOT_STACK_TOP, %esp
	xorl %ebp, %ebp
	call *ap_boot + AP_BOOT_ENTRY
2:	cli
	hlt
	jmp 2b

	.data
	.balign 4
	.globl ap_boot
ap_boot:
	.space AP_BOOT_SIZE
