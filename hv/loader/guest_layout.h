/*
 * guest_layout.h - where everything goes in guest-physical memory, the
 * guest's e820 map, and the boot_params "zero page".  Pure logic (no
 * memory is touched but the buffers passed in), unit-tested in
 * tests/unit/test_e820.c and tests/unit/test_guest_layout.c.
 */
#ifndef VMI_HV_GUEST_LAYOUT_H
#define VMI_HV_GUEST_LAYOUT_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include "bzimage.h"

#define E820_RAM        1
#define E820_RESERVED   2

struct e820_entry {
	uint64_t addr, size;
	uint32_t type;
};

#define GUEST_E820_MAX 8

/* The guest's e820 map for mem bytes of RAM:
 *   [0, 0xA0000)             RAM
 *   [0xA0000, 0xC0000)       reserved: legacy VGA window
 *   [0xC0000, 0x100000)      reserved: option ROMs (the VMI ROM at
 *                            0xC0000) and the BIOS area
 *   [0x100000, mem)          RAM
 * Returns the number of entries (0 if mem is below 1 MiB or max < 4). */
unsigned e820_build(uint64_t mem, struct e820_entry *out, unsigned max);
const char *e820_type_name(uint32_t type);

struct guest_plan {
	uint64_t mem;
	uint32_t kernel_gpa, kernel_size;
	uint64_t kernel_end;		/* footprint incl. decompression */
	uint32_t initrd_gpa, initrd_size;
	uint32_t cmdline_gpa, cmdline_len;
	uint32_t boot_params_gpa;
	uint32_t entry;			/* 32-bit entry point (EIP) */
	struct e820_entry e820[GUEST_E820_MAX];
	unsigned e820_count;
};

/* Decide the guest-physical placement, checking that it all fits.  On
 * failure return false with a one-line reason in why. */
bool guest_plan_build(const struct bzimage_info *bi, uint64_t mem,
		      uint32_t initrd_size, size_t cmdline_len,
		      struct guest_plan *plan, char *why, size_t whylen);

/* Fill a BP_SIZE-byte boot_params from the image's setup header and the
 * plan, as boot.rst asks of a 32-bit boot loader. */
void boot_params_fill(uint8_t *bp, const uint8_t *image,
		      const struct bzimage_info *bi, const struct guest_plan *plan);

#endif
