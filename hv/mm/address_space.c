/*
 * address_space.c - the hypervisor's own address space.
 *
 * boot.S ran us on a throwaway page directory.  Here we build the real
 * one from allocated frames:
 *   - [0, 4 MiB) through a page table, with page 0 not present so that a
 *     NULL dereference faults instead of reading the real-mode IVT;
 *   - [4 MiB, HV_DIRECT_MAP_END) identity-mapped with 4 MiB pages;
 *   - [HV_TOP_RESERVED_BASE, HV_SWITCHER_BASE) empty but for device pages
 *     mapped at their machine address (the local APIC), uncached;
 *   - PDE HV_SWITCHER_PDE_INDEX: the switcher page table (boot.S filled it;
 *     it is the same table guest address spaces will plug in).
 */
#include "address_space.h"
#include "machine_mem.h"
#include "layout.h"
#include "log.h"
#include "stop.h"
#include "io.h"

extern uint32_t switcher_page_table[PT_ENTRIES];
extern char __switcher_start[], __switcher_end[], __switcher_load[];

static uint32_t *hv_page_dir;
static uint32_t *low_pt;	/* PDE 0's table: page 0 left out */

uint32_t hv_cr3(void)
{
	return virt_to_phys(hv_page_dir);
}

uint32_t switcher_pde(void)
{
	return virt_to_phys(switcher_page_table) | PTE_P | PTE_W;
}

uint32_t hv_translate(uint32_t linear)
{
	uint32_t pde = hv_page_dir[pde_index(linear)], *pt, pte;

	if (!(pde & PTE_P))
		return ~0u;
	if (pde & PTE_PS)
		return (pde & PDE_LARGE_FRAME_MASK) | (linear & LARGE_PAGE_OFFSET_MASK);
	pt = phys_to_virt(pte_addr(pde));
	pte = pt[pte_index(linear)];
	if (!(pte & PTE_P))
		return ~0u;
	return pte_addr(pte) | page_offset(linear);
}

void address_space_init(void)
{
	uint32_t switcher_bytes = (uint32_t)(__switcher_end - __switcher_start);

	hv_page_dir = alloc_zeroed_page();
	low_pt = alloc_zeroed_page();
	for (uint32_t i = 1; i < PT_ENTRIES; i++)
		low_pt[i] = make_pte(i, PTE_P | PTE_W);
	hv_page_dir[0] = virt_to_phys(low_pt) | PTE_P | PTE_W;
	for (uint32_t i = 1; i < pde_index(HV_DIRECT_MAP_END); i++)
		hv_page_dir[i] = pde_base(i) | PTE_P | PTE_W | PTE_PS;
	hv_page_dir[HV_SWITCHER_PDE_INDEX] = switcher_pde();

	write_cr3(hv_cr3());

	/* Check the result rather than trust it. */
	HV_ASSERT(hv_translate(0) == ~0u);
	HV_ASSERT(hv_translate(0x1000) == 0x1000);
	HV_ASSERT(hv_translate(HV_DIRECT_MAP_END - 4) == HV_DIRECT_MAP_END - 4);
	HV_ASSERT(hv_translate(HV_TOP_RESERVED_BASE) == ~0u);
	HV_ASSERT(hv_translate(HV_SWITCHER_BASE) == (uint32_t)__switcher_load);

	log_info("hypervisor address space: cr3 %08x; identity map 00001000-%08x; "
		 "switcher %08x-%08x (%u KiB used) at machine %08x; "
		 "guests get linear 00000000-%08x",
		 hv_cr3(), HV_DIRECT_MAP_END - 1, HV_SWITCHER_BASE,
		 HV_SWITCHER_BASE + HV_SWITCHER_SIZE - 1, switcher_bytes / 1024,
		 (uint32_t)__switcher_load, HV_TOP_RESERVED_BASE - 1);
}

void *address_space_map_mmio(uint32_t phys)
{
	uint32_t linear = phys & ~(uint32_t)PAGE_OFFSET_MASK, *pt;
	uint32_t *pde = &hv_page_dir[pde_index(linear)];

	HV_ASSERT(linear >= HV_TOP_RESERVED_BASE && linear < HV_SWITCHER_BASE);
	if (!(*pde & PTE_P))
		*pde = virt_to_phys(alloc_zeroed_page()) | PTE_P | PTE_W;
	pt = phys_to_virt(pte_addr(*pde));
	pt[pte_index(linear)] = linear | PTE_P | PTE_W | PTE_PCD | PTE_PWT;
	__asm__ volatile("invlpg (%0)" :: "r"(linear) : "memory");
	return (void *)linear;
}

void page_zero_read(uint32_t offset, void *buf, uint32_t len)
{
	HV_ASSERT(offset < HV_PAGE_SIZE && len <= HV_PAGE_SIZE - offset);
	low_pt[0] = make_pte(0, PTE_P);
	__asm__ volatile("invlpg (%0)" :: "r"(0) : "memory");
	for (uint32_t i = 0; i < len; i++)	/* volatile: address 0 is not NULL here */
		((uint8_t *)buf)[i] = ((const volatile uint8_t *)(uintptr_t)offset)[i];
	low_pt[0] = 0;
	__asm__ volatile("invlpg (%0)" :: "r"(0) : "memory");
}
