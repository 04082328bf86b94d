/*
 * vcpu_switcher.c - the switcher as the guest sees it.
 *
 * The switcher page table (PDE 1023) is what the CPU uses to reach the
 * IDT, GDT, TSS and trap stubs when an interrupt leaves the guest.  The
 * hypervisor's own page directory points at switcher_page_table, whose
 * entries are writable (we update the GDT, TSS and IDT through them).
 * A guest's shadow page directory points instead at the CPU's
 * guest_switcher_pt (struct pcpu): the same frames, but
 *   - every page read-only, except the running vCPU's stack page
 *     (vcpu_layout.h), which the CPU must write when a trap pushes the
 *     guest's registers, and its VMI shared page, which the ROM's fast
 *     paths write.  Each vCPU has pages of its own; pcpu_enter maps the
 *     entering vCPU's at the same linear addresses;
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
#include "vcpu_state.h"
#include "guest_frames.h"
#include "vcpu_desc.h"
#include "vcpu_layout.h"
#include "address_space.h"
#include "machine_mem.h"
#include "console.h"
#include "stop.h"
#include "io.h"
#include "pcpu.h"
#include "guest_desc.h"

extern uint32_t switcher_page_table[1024];

/* CPU c's page table for the guests' view of the switcher: every page
 * of ours read-only; the vCPU pages are filled in by pcpu_enter. */
static void pcpu_switcher_init(struct pcpu *c)
{
	HV_ASSERT(read_cr0() & X86_CR0_WP);
	HV_ASSERT(!(switcher_page_table[HV_VCPU_STACK_PTE] & PTE_P));
	HV_ASSERT(!(switcher_page_table[HV_VCPU_SHARED_PTE] & PTE_P));
	c->guest_switcher_pt = alloc_zeroed_page();
	for (unsigned i = 0; i < PT_ENTRIES; i++) {
		uint32_t pte = switcher_page_table[i];

		if (pte & PTE_P)
			c->guest_switcher_pt[i] = pte & ~(PTE_W | PTE_U | PTE_G);
	}
	/* The PDE itself is writable: the PTEs decide; no PTE_U: ring 3
	 * never reaches the switcher. */
	c->guest_switcher_pde = virt_to_phys(c->guest_switcher_pt) | PTE_P | PTE_W;
}

/* The vCPU's own stack and shared pages; returns the guest view's PDE
 * (the same for every vCPU this CPU runs). */
uint32_t vcpu_switcher_init(struct vcpu *v);
uint32_t vcpu_switcher_init(struct vcpu *v)
{
	struct pcpu *c = this_pcpu();

	if (!c->guest_switcher_pt)
		pcpu_switcher_init(c);
	/* A vCPU rebuilt for its guest's reboot has its pages already. */
	if (!v->stack_page)
		v->stack_page = guest_alloc_at_load(v->guest, HV_PAGE_SIZE, "a vCPU's stack page");
	if (!v->shared_page)
		v->shared_page = guest_alloc_at_load(v->guest, HV_PAGE_SIZE, "a vCPU's shared page");
	memset(v->stack_page, 0, HV_PAGE_SIZE);
	memset(v->shared_page, 0, HV_PAGE_SIZE);
	/* The hypervisor reaches them through its 1:1 map, whichever vCPU
	 * the switcher maps at the moment. */
	v->frame = (struct trap_frame *)((uint8_t *)v->stack_page + HV_PAGE_SIZE - HV_TRAP_FRAME_SIZE);
	v->shared = v->shared_page;
	log_info("vcpu: switcher for the guest: %08x-%08x read-only, stack page %08x and VMI shared page %08x writable, CR0.WP on",
		 HV_SWITCHER_BASE, HV_SWITCHER_BASE + HV_SWITCHER_SIZE - 1,
		 HV_VCPU_STACK_PAGE, HV_VCPU_SHARED_PAGE);
	return c->guest_switcher_pde;
}

/* Map v's pages at HV_VCPU_STACK_PAGE and HV_VCPU_SHARED_PAGE, in our view
 * and in the guests'.  Called with the hypervisor's CR3 loaded; the next
 * guest CR3 load flushes the guest view's old entries (none is global). */
static void map_vcpu_pages(struct pcpu *c, struct vcpu *v)
{
	uint32_t stack = virt_to_phys(v->stack_page) | PTE_P | PTE_W;
	uint32_t shared = virt_to_phys(v->shared_page) | PTE_P | PTE_W;

	switcher_page_table[HV_VCPU_STACK_PTE] = stack;
	switcher_page_table[HV_VCPU_SHARED_PTE] = shared;
	c->guest_switcher_pt[HV_VCPU_STACK_PTE] = stack;
	c->guest_switcher_pt[HV_VCPU_SHARED_PTE] = shared;
	__asm__ volatile("invlpg (%0)" : : "r"(HV_VCPU_STACK_PAGE) : "memory");
	__asm__ volatile("invlpg (%0)" : : "r"(HV_VCPU_SHARED_PAGE) : "memory");
}

void pcpu_enter(struct pcpu *c, struct vcpu *v)
{
	bool other = c->current != v;

	if (!other && !v->gdt_changed)
		return;
	if (other) {
		map_vcpu_pages(c, v);
		fpu_switch(c->current ? &c->current->fpu : 0, &v->fpu);
	}
	for (unsigned i = 0; i < HV_GDT_ENTRIES; i++)
		if (!guest_desc_hv_slot(i))
			c->gdt[i] = v->gdt[i];
	/* After the copy: the LDT descriptor goes into the slot the copy
	 * just wrote (0 there in v->gdt), then lldt reads it. */
	vcpu_ldt_enter(c, v, other);
	v->gdt_changed = false;
	c->current = v;
}
