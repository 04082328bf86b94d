/*
 * segments.h - the hypervisor's GDT slots and selectors.
 *
 * The GDT lives in the switcher and, once guests run, the guest's own
 * descriptors are copied into it (lguest does the same).  So the
 * hypervisor's descriptors sit in slots Linux i386 leaves unused
 * (arch/x86/include/asm/segment.h: 9-11 reserved) or never loads itself
 * under us (16 = TSS, 31 = double-fault TSS).  Linux's boot selectors
 * (__BOOT_CS 0x10, __BOOT_DS 0x18) and kernel selectors (0x60, 0x68)
 * stay free for the guest.
 */
#ifndef VMI_HV_SEGMENTS_H
#define VMI_HV_SEGMENTS_H

#define HV_GDT_ENTRIES      32
#define HV_GDT_CS_INDEX     10
#define HV_GDT_DS_INDEX     11
#define HV_GDT_TSS_INDEX    16
#define HV_GDT_DFTSS_INDEX  31

#define HV_CS       (HV_GDT_CS_INDEX << 3)      /* 0x50 */
#define HV_DS       (HV_GDT_DS_INDEX << 3)      /* 0x58 */
#define HV_TSS_SEL  (HV_GDT_TSS_INDEX << 3)     /* 0x80 */
#define HV_DFTSS_SEL (HV_GDT_DFTSS_INDEX << 3)  /* 0xF8 */

/* Interrupt vectors. */
#define HV_IRQ_BASE         0x20        /* master PIC: 0x20-0x27 */
#define HV_IRQ_SLAVE_BASE   0x28        /* slave PIC:  0x28-0x2F */
#define HV_IRQ_TIMER        0
#define HV_IRQ_KEYBOARD     1
#define HV_IRQ_COM1         4
/* The local APIC's own interrupts, apart from the PIC's (lapic.c). */
#define HV_LOCAL_TIMER_VECTOR    0x30
#define HV_LOCAL_IPI_VECTOR      0x31	/* another CPU's "look at the run queue" */
#define HV_LOCAL_SPURIOUS_VECTOR 0xff

#endif
