/*
 * vcpu_layout.h - where a vCPU's state sits in the switcher.
 *
 * Plain #defines, shared by switcher.S and C.  One vCPU for now, at
 * HV_SWITCHER_VCPU_BASE (layout.h), HV_SWITCHER_VCPU_PAGES pages:
 *
 *   page 0: the ring-0 stack.  TSS.esp0 points at its top, so a trap from
 *           ring 1 or 3 pushes ss/esp/eflags/cs/eip (and the stub and
 *           trap_common the rest of struct trap_frame) right there: the
 *           guest's registers.  It is the ONE switcher page the guest's
 *           view maps writable (the CPU must push there while the guest's
 *           CR3 is loaded, and CR0.WP makes a read-only page fault even for
 *           ring 0).  The guest can only scribble on its own registers
 *           with it, and every entry re-validates them (vcpu_check_frame).
 *   page 1: not mapped: a guard above the stack.
 *   page 2: the VMI shared page (vmi_shared_page, docs/VROM.md): the
 *           guest's virtual IF, "interrupt pending" and CR2, which the
 *           ROM reads and writes without leaving the guest.  Writable by
 *           the guest kernel (ring 1), never by ring 3; it holds only
 *           guest-owned state, which the hypervisor reads back and
 *           sanitizes at every exit.  Published in VROMHeader.reserved3.
 *   page 3: not mapped.
 *   pages 4-19: the guest's LDT as the CPU reads it (vcpu_ldt.c): its
 *           entries converted like the GDT's, read-only and supervisor-
 *           only in the guest's view, mapped only when the vCPU has an
 *           LDT (up to 8192 entries, 64 KiB).
 *
 * Each vCPU has a page table of its own for this (vcpu_switcher.c), so
 * vCPUs on different CPUs each see their own pages at these addresses;
 * the hypervisor's own view maps none of them.
 */
#ifndef VMI_HV_VCPU_LAYOUT_H
#define VMI_HV_VCPU_LAYOUT_H

#include "layout.h"

#define HV_VCPU_STACK_PAGE   HV_SWITCHER_VCPU_BASE
#define HV_VCPU_STACK_TOP    (HV_SWITCHER_VCPU_BASE + HV_PAGE_SIZE)
/* struct trap_frame is 19 words; from ring 1/3 the CPU pushes all of it. */
#define HV_TRAP_FRAME_SIZE   (19 * 4)
#define HV_VCPU_FRAME        (HV_VCPU_STACK_TOP - HV_TRAP_FRAME_SIZE)
/* Offset of cs in struct trap_frame (for trap_common's "from a guest?"). */
#define HV_TRAP_FRAME_CS     (15 * 4)
/* Index of the stack page in the switcher page table. */
#define HV_VCPU_STACK_PTE    ((HV_VCPU_STACK_PAGE - HV_SWITCHER_BASE) >> HV_PAGE_SHIFT)
#define HV_VCPU_SHARED_PAGE  (HV_SWITCHER_VCPU_BASE + 2 * HV_PAGE_SIZE)
#define HV_VCPU_SHARED_PTE   ((HV_VCPU_SHARED_PAGE - HV_SWITCHER_BASE) >> HV_PAGE_SHIFT)
#define HV_VCPU_LDT_BASE     (HV_SWITCHER_VCPU_BASE + 4 * HV_PAGE_SIZE)
#define HV_VCPU_LDT_PAGES    16
#define HV_VCPU_LDT_PTE      ((HV_VCPU_LDT_BASE - HV_SWITCHER_BASE) >> HV_PAGE_SHIFT)

#endif
