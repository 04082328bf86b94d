/*
 * layout.h - the one definition of vmi-hv's linear and physical memory layout.
 *
 * Plain #defines only, no types and no includes, so that C, assembly, the
 * linker script (via cpp), the VMI ROM build and the guest kernel patch can
 * all include this very file.  Change a number here and everything follows.
 *
 * The hypervisor runs in its own address space (its own page directory).
 * Guests run in theirs.  The only thing both kinds of address space share is
 * the top HV_TOP_RESERVED_SIZE bytes of the linear address space: the guest
 * promises never to use them (reserve_top_address() in the guest patch), and
 * the hypervisor maps its "switcher" there, the code and tables that must be
 * reachable at the moment of a world switch (IDT, GDT, TSS, trap entry code,
 * per-vCPU save areas), because an interrupt can arrive while a guest's CR3
 * is loaded.
 *
 *   hypervisor address space          guest address space
 *   0xFFC00000 +--------------+        +--------------+ switcher page table
 *              | switcher     |  ===   | switcher     |   (the same PDE 1023)
 *   0xFC000000 +--------------+        +--------------+ HV_TOP_RESERVED_BASE
 *              | unused       |        |              |
 *   0xC0000000 +--------------+        | guest's own  |
 *              | machine RAM, |        | page tables  |
 *              | identity     |        | (shadowed)   |
 *   0x00001000 +--------------+        |              |
 *              | not present  |        |              |
 *   0x00000000 +--------------+        +--------------+
 */
#ifndef VMI_HV_LAYOUT_H
#define VMI_HV_LAYOUT_H

#define HV_PAGE_SIZE            0x1000
#define HV_PAGE_SHIFT           12
#define HV_LARGE_PAGE_SIZE      0x400000    /* one PDE with PSE: 4 MiB */
#define HV_LARGE_PAGE_SHIFT     22

/*
 * Top of the linear address space reserved for the hypervisor in every
 * guest address space.  64 MiB, as Xen's non-PAE x86_32 did: it leaves a
 * guest about 823 MiB of lowmem and gives room for per-vCPU mappings beside
 * the switcher.  The guest patch passes this size to reserve_top_address().
 */
#define HV_TOP_RESERVED_SIZE    0x04000000
#define HV_TOP_RESERVED_BASE    0xFC000000  /* == 2^32 - HV_TOP_RESERVED_SIZE */

/*
 * The switcher: the last 4 MiB, exactly one page-directory entry, so a
 * single page table (owned by the hypervisor) is plugged into PDE 1023 of
 * the hypervisor's and of every guest's page directory.
 */
#define HV_SWITCHER_BASE        0xFFC00000
#define HV_SWITCHER_SIZE        0x00400000
#define HV_SWITCHER_PDE_INDEX   1023
/* The linked switcher image (code, IDT, GDT, TSS) starts at the base... */
#define HV_SWITCHER_IMAGE_MAX   0x00100000
/* ...and the per-vCPU pages (saved registers, ring-0 stack) start here. */
#define HV_SWITCHER_VCPU_BASE   0xFFD00000
#define HV_SWITCHER_VCPU_PAGES  20          /* pages per vCPU (vcpu_layout.h) */

/*
 * In the hypervisor's own address space, linear == machine physical for
 * [0, HV_DIRECT_MAP_END), except page 0 (not present, so that NULL pointer
 * dereferences fault).  Machine frames at or above this are not used.
 */
#define HV_DIRECT_MAP_END       0xC0000000

/* The most physical CPUs the hypervisor runs on (struct pcpu each, in the
 * switcher), and each CPU's hypervisor stack: HV_STACK_SIZE bytes, aligned
 * to its size, with its CPU's struct pcpu pointer in the lowest word
 * (this_pcpu() finds it from the stack pointer). */
#define HV_MAX_CPUS             8
#define HV_STACK_SIZE           0x4000

/* Physical load address of the hypervisor image (multiboot, 1 MiB). */
#define HV_LOAD_PHYS            0x00100000

/* Guest-physical layout built by the loader (hv/loader/guest_layout.c). */
#define GUEST_BOOT_PARAMS_GPA   0x00010000  /* Linux boot_params, "zero page" */
#define GUEST_CMDLINE_GPA       0x00011000  /* guest command line, NUL-ended */
#define GUEST_CMDLINE_MAX       0x00001000
#define GUEST_LOW_RAM_END       0x000A0000  /* RAM below the legacy hole */
#define GUEST_VGA_HOLE          0x000A0000  /* legacy VGA window, reserved */
#define GUEST_ROM_GPA           0x000C0000  /* VMI option ROM goes here */
#define GUEST_ROM_AREA_END      0x000E0000  /* option-ROM scan area ends */
#define GUEST_MP_TABLE_GPA      0x000F0000  /* MP table (loader/mp_table.c), BIOS area */
#define GUEST_MP_TABLE_END      0x000F1000
#define GUEST_HIGH_RAM_START    0x00100000  /* RAM from 1 MiB up */
#define GUEST_KERNEL_GPA        0x00100000  /* protected-mode kernel */

#define GUEST_MEM_DEFAULT       0x08000000  /* 128 MiB */
#define GUEST_MEM_MIN           0x01000000  /* 16 MiB */

#endif
