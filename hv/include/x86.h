/*
 * x86.h - the one definition of the x86 architectural numbers vmi-hv
 * uses: control-register and EFLAGS bits, exception vectors, page-fault
 * error-code bits, the MSRs it knows.  Page-table entries are in
 * hv/mm/pte.h.
 *
 * No types and no code, so that assembly (boot.S), the freestanding
 * hypervisor and the host-side unit tests all include this very file.
 * In C the bits are unsigned (X86_U), in assembly plain numbers.
 */
#ifndef VMI_HV_X86_H
#define VMI_HV_X86_H

#ifdef __ASSEMBLER__
#define X86_U(x) x
#else
#define X86_U(x) x##u
#endif

/* CR0 */
#define X86_CR0_PE          X86_U(0x00000001)	/* protected mode */
#define X86_CR0_MP          X86_U(0x00000002)
#define X86_CR0_EM          X86_U(0x00000004)
#define X86_CR0_TS          X86_U(0x00000008)	/* task switched (lazy FPU) */
#define X86_CR0_ET          X86_U(0x00000010)	/* hard-wired 1 since the 486 */
#define X86_CR0_NE          X86_U(0x00000020)
#define X86_CR0_WP          X86_U(0x00010000)	/* supervisor writes honour R/W */
#define X86_CR0_AM          X86_U(0x00040000)
#define X86_CR0_PG          X86_U(0x80000000)	/* paging */

/* CR4 */
#define X86_CR4_DE          X86_U(0x00000008)	/* debugging extensions: DR4/DR5 #UD */
#define X86_CR4_PSE         X86_U(0x00000010)	/* 4 MiB pages */
#define X86_CR4_PAE         X86_U(0x00000020)
#define X86_CR4_PGE         X86_U(0x00000080)	/* global pages */
#define X86_CR4_PCE         X86_U(0x00000100)	/* rdpmc allowed in user mode */
#define X86_CR4_OSFXSR      X86_U(0x00000200)
#define X86_CR4_OSXMMEXCPT  X86_U(0x00000400)

/* EFLAGS */
#define X86_EFLAGS_CF       X86_U(0x00000001)
#define X86_EFLAGS_FIXED    X86_U(0x00000002)	/* bit 1 always reads 1 */
#define X86_EFLAGS_TF       X86_U(0x00000100)
#define X86_EFLAGS_IF       X86_U(0x00000200)
#define X86_EFLAGS_DF       X86_U(0x00000400)
#define X86_EFLAGS_IOPL     X86_U(0x00003000)
#define X86_EFLAGS_NT       X86_U(0x00004000)
#define X86_EFLAGS_RF       X86_U(0x00010000)
#define X86_EFLAGS_VM       X86_U(0x00020000)

/* Exception vectors */
#define X86_VEC_DE   0	/* divide error */
#define X86_VEC_DB   1	/* debug */
#define X86_VEC_NMI  2
#define X86_VEC_BP   3	/* int3 */
#define X86_VEC_OF   4	/* into */
#define X86_VEC_BR   5	/* bound */
#define X86_VEC_UD   6	/* invalid opcode */
#define X86_VEC_NM   7	/* device not available */
#define X86_VEC_DF   8	/* double fault */
#define X86_VEC_TS  10	/* invalid TSS */
#define X86_VEC_NP  11	/* segment not present */
#define X86_VEC_SS  12	/* stack fault */
#define X86_VEC_GP  13	/* general protection */
#define X86_VEC_PF  14	/* page fault */
#define X86_VEC_MF  16	/* x87 error */
#define X86_VEC_AC  17	/* alignment check */
#define X86_VEC_MC  18	/* machine check */
#define X86_VEC_XM  19	/* SIMD error */
#define X86_NR_EXCEPTIONS 32

/* Page-fault error code, as the CPU pushes it */
#define X86_PF_P            X86_U(0x1)	/* 0: not present; 1: protection violation */
#define X86_PF_W            X86_U(0x2)	/* the access was a write */
#define X86_PF_U            X86_U(0x4)	/* the access was from CPL 3 */

/* MSRs */
#define X86_MSR_IA32_UCODE_REV 0x8b	/* microcode revision */
#define X86_MSR_IA32_SYSENTER_CS  0x174	/* sysenter's ring-0 CS; 0: sysenter is #GP(0) */
#define X86_MSR_IA32_SYSENTER_ESP 0x175
#define X86_MSR_IA32_SYSENTER_EIP 0x176

/* CPUID leaf 1, EDX */
#define X86_CPUID1_EDX_MSR  X86_U(0x20)	/* rdmsr/wrmsr */
#define X86_CPUID1_EDX_SEP  X86_U(0x800)	/* sysenter/sysexit and their MSRs */

#endif
