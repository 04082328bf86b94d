/*
 * hv.ld.S - linker script (run through cpp so it shares layout.h).
 *
 * The image is loaded at 1 MiB and runs there, identity-mapped.  The
 * .switcher output section is the exception: it is *stored* right after
 * the rest of the image but *linked* at HV_SWITCHER_BASE, where boot.S
 * maps it before anything in it is used.
 */
#include "layout.h"

OUTPUT_FORMAT("elf32-i386")
OUTPUT_ARCH(i386)
ENTRY(_start)

SECTIONS
{
	. = HV_LOAD_PHYS;
	__image_start = .;
	.text : {
		KEEP(*(.multiboot))	/* must sit in the first 8 KiB */
		*(.text .text.*)
	}
	.rodata : { *(.rodata .rodata.*) }
	.data : { *(.data .data.*) }
	.bss : {
		__bss_start = .;
		*(.bss .bss.* COMMON)
		. = ALIGN(4096);
		__bss_end = .;
	}
	__switcher_load = ALIGN(4096);
	.switcher HV_SWITCHER_BASE : AT(__switcher_load) {
		__switcher_start = .;
		KEEP(*(.switcher.text))
		. = ALIGN(4096);
		/* Below: what every guest's view maps (read-only); above:
		 * each CPU's tables page, mapped only in the view of the vCPU
		 * running on that CPU (vcpu_switcher.c). */
		__switcher_shared_end = .;
		KEEP(*(.switcher.data))
		. = ALIGN(4096);
		__switcher_end = .;
	}
	__switcher_pages = SIZEOF(.switcher) >> 12;
	__image_end = __switcher_load + SIZEOF(.switcher);
	/DISCARD/ : { *(.note*) *(.comment) *(.eh_frame) }
}
ASSERT(SIZEOF(.switcher) <= HV_SWITCHER_IMAGE_MAX, "switcher image too big")
ASSERT(__switcher_end - __switcher_shared_end == HV_MAX_CPUS * HV_PAGE_SIZE,
       ".switcher.data holds the CPUs' tables pages and nothing else")
