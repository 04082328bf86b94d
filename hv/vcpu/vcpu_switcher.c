/*
 * vcpu_switcher.c - the switcher as the guest sees it.
 *
 * The switcher page table (PDE 1023) is what the CPU uses to reach the
 * IDT, GDT, TSS and trap stubs when an interrupt leaves the guest.  The
 * hypervisor's own page directory points at switcher_page_table, whose
 * entries are writable (we update the GDT, TSS and IDT through them).
 * A guest's shadow page directory points instead at guest_switcher_pt
 * here: the same frames, but
 *   - every page read-only, except the vCPU's stack page (vcpu_layout.h),
 *     which the CPU must write when a trap pushes the guest's registers,
 *     and the VMI shared page, which the ROM's fast paths write;
 *   - supervisor-only (no PTE_U), so ring 3 cannot even read it.
 * The guest kernel runs in ring 1, which paging treats as supervisor: the
 * read-only bit binds it only because CR0.WP is set (boot.S sets it and
 * vcpu_switcher_init checks it).  Nothing else of the hypervisor is mapped
 * in a guest address space: the shadow page tables (hv/mm/vtlb.c) map
 * only frames of the guest's own memory below HV_TOP_RESERVED_BASE.
 *
 * Consequences that the rest of the code honours: the CPU must never need
 * to write a switcher page other than the stack while the guest's CR3 is
 * loaded, so hypervisor and guest descriptors in the GDT carry the accessed
 * bit already (cpu_tables.c, vcpu_desc.c), and the TSS busy bit is set once
 * by ltr in our own address space.
 */
#include "vcpu.h"
#include "vcpu_layout.h"
#include "address_space.h"
#include "machine_mem.h"
#include "console.h"
#include "stop.h"
#include "io.h"

extern uint32_t switcher_page_table[PT_ENTRIES];

static uint32_t *guest_switcher_pt;

/* Map the vCPU's stack page in both views; returns the guest view's PDE. */
uint32_t vcpu_switcher_init(void);
uint32_t vcpu_switcher_init(void)
{
	void *stack = alloc_zeroed_page(), *shared = alloc_zeroed_page();

	HV_ASSERT(read_cr0() & X86_CR0_WP);
	HV_ASSERT(!(switcher_page_table[HV_VCPU_STACK_PTE] & PTE_P));
	HV_ASSERT(!(switcher_page_table[HV_VCPU_SHARED_PTE] & PTE_P));
	switcher_page_table[HV_VCPU_STACK_PTE] = virt_to_phys(stack) | PTE_P | PTE_W;
	switcher_page_table[HV_VCPU_SHARED_PTE] = virt_to_phys(shared) | PTE_P | PTE_W;
	__asm__ volatile("invlpg (%0)" : : "r"(HV_VCPU_STACK_PAGE) : "memory");
	__asm__ volatile("invlpg (%0)" : : "r"(HV_VCPU_SHARED_PAGE) : "memory");

	guest_switcher_pt = alloc_zeroed_page();
	for (unsigned i = 0; i < PT_ENTRIES; i++) {
		uint32_t pte = switcher_page_table[i];

		if (!(pte & PTE_P))
			continue;
		pte &= ~(PTE_W | PTE_U | PTE_G);
		if (i == HV_VCPU_STACK_PTE || i == HV_VCPU_SHARED_PTE)
			pte |= PTE_W;
		guest_switcher_pt[i] = pte;
	}
	log_info("vcpu: switcher for the guest: %08x-%08x read-only, stack page %08x and VMI shared page %08x writable, CR0.WP on",
		 HV_SWITCHER_BASE, HV_SWITCHER_BASE + HV_SWITCHER_SIZE - 1,
		 HV_VCPU_STACK_PAGE, HV_VCPU_SHARED_PAGE);
	/* The PDE itself is writable: the PTEs decide; no PTE_U: ring 3
	 * never reaches the switcher. */
	return virt_to_phys(guest_switcher_pt) | PTE_P | PTE_W;
}
