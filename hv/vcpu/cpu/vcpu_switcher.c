/*
 * vcpu_switcher.c - the switcher as the guest sees it.
 *
 * The switcher page table (PDE 1023) is what the CPU uses to reach the
 * IDT, GDT, TSS and trap stubs when an interrupt leaves the guest.  The
 * hypervisor's own page directory points at switcher_page_table, which
 * maps the whole switcher image writable (we update the GDT, TSS and IDT
 * through it).  A guest's shadow page directory points instead at its
 * vCPU's own switcher_pt (struct vcpu), which maps only
 *   - the switcher's code, shared by all ([__switcher_start,
 *     __switcher_shared_end): trap stubs, trap_common, switch_to_guest),
 *     read-only;
 *   - the tables page (struct pcpu_tables: GDT, IDT, TSSes, the trap
 *     path's saved stack and CR3) of the CPU the vCPU runs on, read-only,
 *     at the same linear address as in the hypervisor's view (GDTR, IDTR
 *     and TR hold linear addresses).  pcpu_enter maps the entering CPU's
 *     and unmaps the last one's: no other CPU's tables, which hold other
 *     guests' descriptors and kernel stacks, are ever readable;
 *   - the vCPU's own pages (vcpu_layout.h): its stack page, writable (the
 *     CPU pushes the guest's registers there on a trap), its VMI shared
 *     page, writable (the ROM's fast paths), its LDT pages, read-only;
 * all supervisor-only (no PTE_U), so ring 3 cannot even read them.
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
#include "vcpu_switcher.h"
#include "guest_desc.h"
#include "traps.h"
#include "fpu.h"
#include "vmi_abi.h"

extern uint32_t switcher_page_table[1024];
extern char __switcher_start[], __switcher_shared_end[];

static unsigned switcher_pte(const void *p)
{
	return ((uint32_t)p - HV_SWITCHER_BASE) >> HV_PAGE_SHIFT;
}

/* v's view of the switcher: the shared code read-only, its own stack and
 * shared pages writable, no CPU's tables yet (pcpu_enter); returns the
 * PDE its address spaces use. */
uint32_t vcpu_switcher_init(struct vcpu *v);
uint32_t vcpu_switcher_init(struct vcpu *v)
{
	HV_ASSERT(read_cr0() & X86_CR0_WP);
	HV_ASSERT(!(switcher_page_table[HV_VCPU_STACK_PTE] & PTE_P));
	HV_ASSERT(!(switcher_page_table[HV_VCPU_SHARED_PTE] & PTE_P));
	HV_ASSERT((char *)pcpu_tables >= __switcher_shared_end);
	/* A vCPU rebuilt for its guest's reboot has its pages already. */
	if (!v->stack_page)
		v->stack_page = guest_alloc_at_load(v->guest, HV_PAGE_SIZE, "a vCPU's stack page");
	if (!v->shared_page)
		v->shared_page = guest_alloc_at_load(v->guest, HV_PAGE_SIZE, "a vCPU's shared page");
	if (!v->switcher_pt)
		v->switcher_pt = guest_alloc_at_load(v->guest, HV_PAGE_SIZE, "a vCPU's switcher page table");
	memset(v->stack_page, 0, HV_PAGE_SIZE);
	memset(v->shared_page, 0, HV_PAGE_SIZE);
	memset(v->switcher_pt, 0, HV_PAGE_SIZE);
	for (unsigned i = switcher_pte(__switcher_start); i < switcher_pte(__switcher_shared_end); i++)
		v->switcher_pt[i] = switcher_page_table[i] & ~(PTE_W | PTE_U | PTE_G);
	v->switcher_cpu = 0;
	v->switcher_pt[HV_VCPU_STACK_PTE] = virt_to_phys(v->stack_page) | PTE_P | PTE_W;
	v->switcher_pt[HV_VCPU_SHARED_PTE] = virt_to_phys(v->shared_page) | PTE_P | PTE_W;
	/* The hypervisor reaches them through its 1:1 map. */
	v->frame = (struct trap_frame *)((uint8_t *)v->stack_page + HV_PAGE_SIZE - HV_TRAP_FRAME_SIZE);
	v->shared = v->shared_page;
	log_info("vcpu: switcher for the guest: code %08x-%08x and its CPU's tables read-only, stack page %08x and VMI shared page %08x writable, CR0.WP on",
		 (uint32_t)__switcher_start, (uint32_t)__switcher_shared_end - 1,
		 HV_VCPU_STACK_PAGE, HV_VCPU_SHARED_PAGE);
	/* The PDE itself is writable: the PTEs decide; no PTE_U: ring 3
	 * never reaches the switcher. */
	return virt_to_phys(v->switcher_pt) | PTE_P | PTE_W;
}

/* The first time c enters a guest: its ring-0 stack for traps from the
 * guest is the vCPU stack page's top, and the VMI call gate is open. */
static void pcpu_ready_for_guests(struct pcpu *c)
{
	pcpu_tables_of(c)->tss.esp0 = HV_VCPU_STACK_TOP;
	cpu_tables_install_hypercall_gate(VMI_HYPERCALL_VECTOR);
	c->ready_for_guests = true;
}

/* The real CR4's OSFXSR/OSXMMEXCPT stay on once a guest asked for them
 * (vcpu_ops.c's mov to cr4 sets them on the CPU it asked on); a vCPU
 * arriving on another CPU sets them there. */
static void sse_bits_for(const struct vcpu *v)
{
	uint32_t want = v->cr4 & (X86_CR4_OSFXSR | X86_CR4_OSXMMEXCPT), real = read_cr4();

	if (want & ~real)
		__asm__ volatile("mov %0, %%cr4" : : "r"(real | want) : "memory");
}

/* v's view maps c's tables page, read-only, and no longer the last
 * CPU's.  v runs on one CPU at a time and the entry's CR3 load flushes
 * the old translation (no PTE_G in a guest's view). */
static void switcher_map_tables(struct vcpu *v, struct pcpu *c)
{
	const struct pcpu_tables *t = pcpu_tables_of(c);

	if (v->switcher_cpu)
		v->switcher_pt[switcher_pte(pcpu_tables_of(v->switcher_cpu))] = 0;
	v->switcher_pt[switcher_pte(t)] = hv_translate((uint32_t)t) | PTE_P;
	v->switcher_cpu = c;
}

void pcpu_enter(struct pcpu *c, struct vcpu *v)
{
	bool other = c->current != v;

	if (!c->ready_for_guests)
		pcpu_ready_for_guests(c);
	if (v->switcher_cpu != c) {
		switcher_map_tables(v, c);
		sse_bits_for(v);
	}
	if (!other && !v->gdt_changed)
		return;
	if (other)
		fpu_switch(c->current ? &c->current->fpu : 0, &v->fpu);
	for (unsigned i = 0; i < HV_GDT_ENTRIES; i++)
		if (!guest_desc_hv_slot(i))
			pcpu_tables_of(c)->gdt[i] = v->gdt[i];
	/* After the copy: the LDT descriptor goes into the slot the copy
	 * just wrote (0 there in v->gdt), then lldt reads it. */
	vcpu_ldt_enter(c, v);
	v->gdt_changed = false;
	c->current = v;
}

void pcpu_leave(struct pcpu *c)
{
	if (!c->current)
		return;
	fpu_save(&c->current->fpu);
	c->current = 0;
}
