/* address_space.h - the hypervisor's page directory and the switcher. */
#ifndef VMI_HV_ADDRESS_SPACE_H
#define VMI_HV_ADDRESS_SPACE_H

#include <stdint.h>
#include "pte.h"

/* Build the hypervisor's own page directory and switch to it. */
void address_space_init(void);
uint32_t hv_cr3(void);
/* The PDE every address space (hypervisor or guest) puts in slot
 * HV_SWITCHER_PDE_INDEX: the one shared switcher page table. */
uint32_t switcher_pde(void);
/* Linear -> physical in the hypervisor's address space; ~0u if unmapped. */
uint32_t hv_translate(uint32_t linear);
/* Map the device page at machine address phys (inside the reserved top,
 * which no guest sees) at the same linear address, uncached; returns it. */
void *address_space_map_mmio(uint32_t phys);
/* Copy len bytes at machine address offset of page 0 (the BIOS data
 * area: the EBDA's segment at 0x40E), which stays unmapped so that NULL
 * dereferences fault: it is mapped for the copy only.  Boot CPU, at
 * start-up. */
void page_zero_read(uint32_t offset, void *buf, uint32_t len);

#endif
