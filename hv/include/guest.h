/*
 * guest.h - a guest as the loader leaves it: memory filled, boot state
 * decided.  vcpu_init() starts a vCPU from `boot`.
 */
#ifndef VMI_HV_GUEST_H
#define VMI_HV_GUEST_H

#include <stdint.h>
#include <stdbool.h>
#include "guest_mem.h"
#include "guest_layout.h"
#include "cmdline.h"
#include "multiboot.h"

/* The state the 32-bit boot protocol promises the kernel at its entry:
 * flat 4 GiB CS (__BOOT_CS 0x10) and DS/ES/SS (__BOOT_DS 0x18), paging
 * and interrupts off, ESI = boot_params, EBP = EDI = EBX = 0. */
struct guest_boot_state {
	uint32_t eip;
	uint32_t esi;
};

struct guest {
	struct guest_mem mem;
	struct guest_plan plan;
	struct guest_boot_state boot;
	bool has_vrom;
	bool fastpaths;		/* enable the shared page's ROM fast paths */
	char kernel_version[64];
};

/* Load the guest from the multiboot modules, or stop with a
 * "vmi-hv: error:" line explaining what is wrong with the input. */
void guest_load(const struct multiboot_info *mbi, const struct hv_options *opt,
		struct guest *g);

#endif
