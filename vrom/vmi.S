/*
 * vmi.S -- the VMI 13.0 option ROM that vmi-hv places at guest-physical 0xC0000.
 *
 * Layout (docs/VROM.md): VROMHeader at 0; call N's 32-byte slot at N * 32
 * (the table itself comes from vrom_slots.inc, generated from
 * vrom/abi/vmi-13.0.def); then the PCI and PnP expansion headers, strings
 * and the ROM body.  romtool seal fills romLength, the PCIR image length, the
 * PnP checksum and the final checksum byte.
 *
 * Everything is position-independent: the guest calls the ROM through
 * whatever mapping it likes (normally __va(0xC0000)) and may even copy it,
 * so there are only relative jumps and calls, and data is found relative to
 * the current EIP.  The Makefile links the image at two bases and refuses
 * to build if the bytes differ.
 *
 * Every slot ends in ret, jmp or ud2 and is padded with int3, so nothing
 * falls through into the next slot.
 */

#include "vmi_abi.h"

	.code32
	.text
	.globl	vrom_start
vrom_start:

/* ---- VROMHeader (0x00 - 0x1f; slots 1-3 follow from vrom_slots.inc) ---- */
	.word	VROM_SIGNATURE			/* 0x00 romSignature */
	.byte	0				/* 0x02 romLength: romtool seal */
	/* 0x03 romEntry: a BIOS that scans us far-calls here in real mode at
	 * POST; there is nothing to initialise, so return at once. */
	.byte	0xcb, 0x90, 0x90, 0x90		/* lret; nop; nop; nop */
	.byte	0				/* 0x07 romPad0 */
	.long	VMI_SIGNATURE			/* 0x08 vRomSignature "cVmi" */
	.byte	VMI_API_REV_MINOR		/* 0x0c */
	.byte	VMI_API_REV_MAJOR		/* 0x0d */
	.byte	0, 0				/* 0x0e reserved0, reserved1 */
	.long	VMI_DEFAULT_RESERVED_TOP	/* 0x10 reserved2: hole size, hv may rewrite */
	.long	0				/* 0x14 reserved3: shared page, hv fills */
	.word	vrom_pcir - vrom_start		/* 0x18 pciHeaderOffset */
	.word	vrom_pnp - vrom_start		/* 0x1a pnpHeaderOffset */
	.long	0				/* 0x1c romPad3 */

/* ---- slot macros (used by vrom_slots.inc) -------------------------------- */

/* Start slot n; the gap before it is int3, and .org fails the build if the
 * previous slot overflowed its 32 bytes. */
.macro SLOT n
	.org	\n * VROM_CALL_LEN, 0xcc
.endm

/*
 * A hypercall with sw (0-2) stack argument words.  Transport: edi = call
 * number, eax/edx/ecx = the caller's register arguments untouched, ebx/esi =
 * stack words 1 and 2.  Result in eax (edx:eax for u64).  ebx/esi/edi are
 * callee-saved in the C convention, so they are restored here.
 */
.macro VSLOT_HC n, sw
	SLOT	\n
	.if \sw == 0
	pushl	%edi
	movl	$\n, %edi
	int	$VMI_HYPERCALL_VECTOR
	popl	%edi
	ret
	.elseif \sw == 1
	pushl	%ebx
	pushl	%edi
	movl	12(%esp), %ebx		/* first stack argument, past ret and 2 saves */
	movl	$\n, %edi
	int	$VMI_HYPERCALL_VECTOR
	popl	%edi
	popl	%ebx
	ret
	.elseif \sw == 2
	pushl	%ebx
	pushl	%esi
	pushl	%edi
	movl	16(%esp), %ebx		/* stack arguments 1 and 2, past ret and 3 saves */
	movl	20(%esp), %esi
	movl	$\n, %edi
	int	$VMI_HYPERCALL_VECTOR
	popl	%edi
	popl	%esi
	popl	%ebx
	ret
	.else
	.error	"VSLOT_HC: the transport carries at most 2 stack words"
	.endif
.endm

/* Reserved and unsupported calls: tell the hypervisor which slot was used,
 * then return VMI_ERROR_UNSUPPORTED whatever the hypervisor did. */
.macro VSLOT_UNSUPPORTED n
	SLOT	\n
	movl	$\n, %eax
	jmp	vrom_unsupported
.endm

/* Calls served from the shared page when possible; code in the body. */
.macro VSLOT_FAST n, name
	SLOT	\n
	jmp	fast_\name
.endm

/* A no-return call (none today: IRET is fastnoreturn, SYSEXIT unsupported),
 * entered with jmp.  edi is saved on the guest stack, where the hypervisor
 * restores it from; ud2 stops the guest at a known place should the
 * hypervisor ever resume after the int. */
.macro VSLOT_NORETURN n
	SLOT	\n
	pushl	%edi
	movl	$\n, %edi
	int	$VMI_HYPERCALL_VECTOR
	ud2
.endm

/* Close the table: pad the last slot. */
.macro VSLOT_END count
	.org	\count * VROM_CALL_LEN, 0xcc
	.globl	vrom_slots_end
vrom_slots_end:
.endm

#include "vrom_slots.inc"

/* ---- option ROM expansion headers ---------------------------------------- */

	/* PCI Data Structure (PCI Firmware Spec 3.0, 5.1.2) */
	.balign	4, 0
vrom_pcir:
	.ascii	"PCIR"
	.word	VROM_PCI_VENDOR
	.word	VROM_PCI_DEVICE
	.word	0			/* device list pointer: none */
	.word	0x1c			/* structure length (revision 3 form) */
	.byte	3			/* structure revision (3.0) */
	.byte	0x00, 0x80, 0x08	/* class: prog-if 0, "other system peripheral" */
	.word	0			/* image length (512 units): romtool seal */
	.word	(VMI_API_REV_MAJOR << 8) | VMI_API_REV_MINOR	/* code revision */
	.byte	0			/* code type: x86 PC-AT compatible */
	.byte	0x80			/* indicator: last image */
	.word	0			/* max runtime length: not given */
	.word	0			/* config utility code header: none */
	.word	0			/* DMTF CLP entry point: none */

	/* PnP Option ROM Header (Plug and Play BIOS Spec 1.0A, appendix A) */
	.balign	16, 0
vrom_pnp:
	.ascii	"$PnP"
	.byte	1			/* structure revision */
	.byte	2			/* length in 16-byte units */
	.word	0			/* next header: none */
	.byte	0			/* reserved */
	.byte	0			/* checksum: romtool seal */
	.long	0			/* device identifier: none */
	.word	vrom_mfr - vrom_start	/* manufacturer string */
	.word	vrom_product - vrom_start /* product name string */
	.byte	0x08, 0x80, 0x00	/* device type: system peripheral, other */
	.byte	0x00			/* indicators: not display/input/IPL */
	.word	0			/* boot connection vector: none */
	.word	0			/* disconnect vector: none */
	.word	0			/* bootstrap entry vector: none */
	.word	0			/* reserved */
	.word	0			/* static resource information vector */

vrom_mfr:
	.asciz	"vmi-hv"
vrom_product:
	.asciz	"VMI 13.0 paravirtualization ROM"

/* ---- ROM body -------------------------------------------------------------- */

/* eax = the slot number that was called. */
vrom_unsupported:
	pushl	%edi
	movl	$VMI_HC_REPORT_UNSUPPORTED, %edi
	int	$VMI_HYPERCALL_VECTOR
	popl	%edi
	movl	$VMI_ERROR_UNSUPPORTED, %eax
	movl	$0xffffffff, %edx	/* u64 callers see -ENOSYS too */
	ret

/* Plain hypercall with register arguments only, for the fast paths' slow
 * side.  Same sequence as VSLOT_HC n, 0. */
.macro HYPERCALL n
	pushl	%edi
	movl	$\n, %edi
	int	$VMI_HYPERCALL_VECTOR
	popl	%edi
	ret
.endm

/*
 * ecx := the per-vCPU shared page if the hypervisor published one and
 * enabled feature feat in it; otherwise jump to slow.  The page's address
 * is VROMHeader.reserved3 of this very ROM image, found relative to EIP so
 * that it works at any mapping.  Clobbers ecx and flags only.
 */
.macro SHARED_PAGE feat, slow, seg=
	call	1f
1:	popl	%ecx
	movl	\seg(vrom_start + VMI_OFF_VROMHeader_reserved3 - 1b)(%ecx), %ecx
	testl	%ecx, %ecx
	jz	\slow
	testl	$\feat, \seg VMI_OFF_vmi_shared_page_features(%ecx)
	jz	\slow
.endm

#define SH_IF		VMI_OFF_vmi_shared_page_eflags_if
#define SH_PENDING	VMI_OFF_vmi_shared_page_irq_pending
#define SH_CR2		VMI_OFF_vmi_shared_page_cr2
#define SH_IOPL		VMI_OFF_vmi_shared_page_eflags_iopl

/* The real EFLAGS.IF is always 1 in the guest and its real IOPL always
 * 0: report the virtual ones (SetIOPLMask keeps the IOPL in the page). */
fast_GetInterruptMask:
	SHARED_PAGE VMI_SHARED_F_VIF, hc_GetInterruptMask
	pushfl
	popl	%eax
	andl	$~(VMI_EFLAGS_IF | VMI_EFLAGS_IOPL), %eax
	orl	SH_IF(%ecx), %eax
	orl	SH_IOPL(%ecx), %eax
	ret
hc_GetInterruptMask:
	HYPERCALL VMI_CALL_GetInterruptMask

fast_DisableInterrupts:
	SHARED_PAGE VMI_SHARED_F_VIF, hc_DisableInterrupts
	movl	$0, SH_IF(%ecx)
	ret
hc_DisableInterrupts:
	HYPERCALL VMI_CALL_DisableInterrupts

/* Set IF first, then look for pending work: an interrupt arriving in
 * between is delivered directly, one that was already waiting is picked up
 * by the hypercall. */
fast_EnableInterrupts:
	SHARED_PAGE VMI_SHARED_F_VIF, hc_EnableInterrupts
	movl	$VMI_EFLAGS_IF, SH_IF(%ecx)
	cmpl	$0, SH_PENDING(%ecx)
	jne	hc_EnableInterrupts
	ret
hc_EnableInterrupts:
	HYPERCALL VMI_CALL_EnableInterrupts

/* eax = eflags image; only its IF bit matters. */
fast_SetInterruptMask:
	SHARED_PAGE VMI_SHARED_F_VIF, hc_SetInterruptMask
	movl	%eax, %edx
	andl	$VMI_EFLAGS_IF, %edx
	movl	%edx, SH_IF(%ecx)
	testl	%edx, %edx
	jz	1f
	cmpl	$0, SH_PENDING(%ecx)
	jne	hc_SetInterruptMask	/* eax still holds the argument */
1:	ret
hc_SetInterruptMask:
	HYPERCALL VMI_CALL_SetInterruptMask

fast_GetCR2:
	SHARED_PAGE VMI_SHARED_F_CR2, hc_GetCR2
	movl	SH_CR2(%ecx), %eax
	ret
hc_GetCR2:
	HYPERCALL VMI_CALL_GetCR2

fast_SetCR2:
	SHARED_PAGE VMI_SHARED_F_CR2, hc_SetCR2
	movl	%eax, SH_CR2(%ecx)
	ret
hc_SetCR2:
	HYPERCALL VMI_CALL_SetCR2

/*
 * Page-table entry updates (F_PXE, which the hypervisor sets only with
 * F_VIF).  The ROM writes the entry in guest memory itself, with the
 * guest's own mapping of it, then appends the entry's linear address,
 * ORed with the call (VMI_SHARED_PXE_*, in the two low bits an aligned
 * entry leaves free), to pxe_queue, and the kernel's return address to
 * pxe_site (for the statistics by kind and the audit's report of the last
 * write to a table); the hypervisor drains the queue at every exit, before it
 * handles anything else, re-deriving each entry's shadow (docs/VROM.md,
 * "Page-table updates without an exit").  A full queue, or no F_PXE, means
 * the ordinary hypercall, which drains the queue first.
 *
 * The sequence runs with the virtual IF cleared (in the shared page, no
 * exit), so no guest interrupt handler can run in the middle and append
 * entries of its own; what can still happen in between is an exit (a
 * hidden fault on the entry's page, a host interrupt), which drains the
 * queue: all of it (pxe_count 0), or as much as one exit's work allows,
 * the rest moved to the front (a smaller pxe_count; docs/HV.md, "The work
 * of one exit").  So the append stores the address at queue[count] and
 * then moves count to count + 1 with cmpxchg, and starts again if an exit
 * changed count meanwhile.  The entry is written before
 * it is queued: an exit in between drains the older entries and leaves
 * this one to be queued afterwards.
 *
 * In: eax = ptep, edx = the new entry or the bit number.  Out: eax.
 * Clobbers ecx, edx and flags, like every slot.
 */
#define SH_FEATURES	VMI_OFF_vmi_shared_page_features
#define SH_PXE_COUNT	VMI_OFF_vmi_shared_page_pxe_count
#define SH_PXE_QUEUE	VMI_OFF_vmi_shared_page_pxe_queue
#define SH_PXE_SITE	VMI_OFF_vmi_shared_page_pxe_site

.if SH_PXE_SITE - SH_PXE_QUEUE != 4 * VMI_SHARED_PXE_QUEUE_LEN
	.error "pxe_queue does not hold VMI_SHARED_PXE_QUEUE_LEN entries"
.endif
.if VMI_OFF_vmi_shared_page_time_seq - SH_PXE_SITE != 4 * VMI_SHARED_PXE_QUEUE_LEN
	.error "pxe_site does not hold VMI_SHARED_PXE_QUEUE_LEN entries"
.endif

/* ecx := the shared page with F_PXE and F_VIF, the virtual IF saved on the
 * stack and cleared, room in the queue; otherwise (IF restored) jump to
 * slow with eax and edx untouched.  An unaligned entry (whose address
 * would not leave the kind bits free) takes the hypercall too. */
.macro PXE_ENTER slow
	testb	$VMI_SHARED_PXE_KIND_MASK, %al
	jnz	\slow
	SHARED_PAGE VMI_SHARED_F_PXE, \slow
	testl	$VMI_SHARED_F_VIF, SH_FEATURES(%ecx)
	jz	\slow
	pushl	SH_IF(%ecx)
	movl	$0, SH_IF(%ecx)
	/* Only an exit can change pxe_count now, and it can only lower it. */
	cmpl	$VMI_SHARED_PXE_QUEUE_LEN, SH_PXE_COUNT(%ecx)
	jb	2f
	popl	SH_IF(%ecx)		/* full: the hypercall drains it */
	jmp	\slow
2:
.endm

/* eax = ptep | kind (queued), edx = the result, ecx = the shared page,
 * (%esp) = the caller's virtual IF, 4(%esp) the kernel's return address.
 * Queue, restore IF, return edx in eax. */
pxe_queue_and_return:
	pushl	%ebx
	pushl	%esi
	movl	%eax, %ebx
1:	movl	SH_PXE_COUNT(%ecx), %eax
	movl	%ebx, SH_PXE_QUEUE(%ecx,%eax,4)
	movl	12(%esp), %esi		/* the kernel's return address */
	movl	%esi, SH_PXE_SITE(%ecx,%eax,4)
	leal	1(%eax), %esi
	/* No lock: the page is this vCPU's; an exit is all that can intervene,
	 * and a single instruction is never split by one. */
	cmpxchgl %esi, SH_PXE_COUNT(%ecx)
	jne	1b
	popl	%esi
	popl	%ebx
	movl	%edx, %eax
	popl	%edx			/* the caller's virtual IF */
	movl	%edx, SH_IF(%ecx)
	testl	%edx, %edx
	jz	3f
	cmpl	$0, SH_PENDING(%ecx)	/* as EnableInterrupts: set, then look */
	jne	4f
3:	ret
4:	pushl	%eax
	pushl	%edi
	movl	$VMI_CALL_EnableInterrupts, %edi
	int	$VMI_HYPERCALL_VECTOR
	popl	%edi
	popl	%eax
	ret

fast_SetPxE:
	PXE_ENTER hc_SetPxE
	movl	%edx, (%eax)
	jmp	pxe_queue_and_return
hc_SetPxE:
	HYPERCALL VMI_CALL_SetPxE

/* Returns the old entry. */
fast_SwapPxE:
	PXE_ENTER hc_SwapPxE
	xchgl	%edx, (%eax)
	orl	$VMI_SHARED_PXE_SWAP, %eax
	jmp	pxe_queue_and_return
hc_SwapPxE:
	HYPERCALL VMI_CALL_SwapPxE

/* Return the old bit (0 or 1); the bit number is taken modulo 32, as the
 * hypervisor does. */
fast_TestAndSetPxEBit:
	PXE_ENTER hc_TestAndSetPxEBit
	andl	$31, %edx
	lock btsl %edx, (%eax)
	setc	%dl
	movzbl	%dl, %edx
	orl	$VMI_SHARED_PXE_TEST_SET, %eax
	jmp	pxe_queue_and_return
hc_TestAndSetPxEBit:
	HYPERCALL VMI_CALL_TestAndSetPxEBit

fast_TestAndClearPxEBit:
	PXE_ENTER hc_TestAndClearPxEBit
	andl	$31, %edx
	lock btrl %edx, (%eax)
	setc	%dl
	movzbl	%dl, %edx
	orl	$VMI_SHARED_PXE_TEST_CLEAR, %eax
	jmp	pxe_queue_and_return
hc_TestAndClearPxEBit:
	HYPERCALL VMI_CALL_TestAndClearPxEBit

/*
 * FlushDeferredCalls (F_FLUSH, with F_PXE): no exit, whatever the queue
 * holds.  The queued entries are already in the guest's tables; the
 * hypervisor applies them to its shadows at the next exit, which comes
 * before anything could tell the difference: an entry that allows more
 * faults until then (the fault is an exit, which drains first), and one
 * that allows less is followed, in Linux as on hardware, by a TLB flush,
 * which is a hypercall (docs/VROM.md, "Page-table updates without an
 * exit").
 */
fast_FlushDeferredCalls:
	SHARED_PAGE VMI_SHARED_F_FLUSH, hc_FlushDeferredCalls
	xorl	%eax, %eax
	ret
hc_FlushDeferredCalls:
	HYPERCALL VMI_CALL_FlushDeferredCalls

/*
 * AllocatePage and ReleasePage (F_PTLIFE, with F_PXE and F_VIF): queued in
 * pxe_queue beside the entry writes, in program order, no exit.  A call
 * takes 1 + its argument words: VMI_SHARED_PXE_CALL | call << 2 (an
 * address in the reserved top, which no entry can have), then the
 * arguments as the call got them; every word's pxe_site is the kernel's
 * return address.  The hypervisor applies them at the next exit, in
 * order with the entries around them (docs/MEMORY.md, "Queued page-table
 * lifecycle calls").  A queue without room for the whole call, or no
 * F_PTLIFE, means the hypercall, which drains the queue first.
 */
#define PXE_CALL(n)	(VMI_SHARED_PXE_CALL | ((n) << 2))

/*
 * Append edx words at esi (on the stack) to the queue, each with the site
 * edi; ecx = the shared page.  Like PXE_ENTER and pxe_queue_and_return:
 * the virtual IF is cleared around it, the words are stored above the
 * count first and the count moves with cmpxchg, again if an exit drained
 * the queue meanwhile.  eax = 0 when queued; 1 (nothing queued, IF as it
 * was) without F_VIF or room for all edx words.  Clobbers eax, ebx and
 * flags; keeps ecx, edx, esi, edi.
 */
pxe_queue_call:
	testl	$VMI_SHARED_F_VIF, SH_FEATURES(%ecx)
	jz	8f
	pushl	SH_IF(%ecx)
	movl	$0, SH_IF(%ecx)
	movl	$VMI_SHARED_PXE_QUEUE_LEN, %eax
	subl	%edx, %eax
	cmpl	%eax, SH_PXE_COUNT(%ecx)	/* room: count + n <= LEN */
	ja	7f
	pushl	%ebp
1:	movl	SH_PXE_COUNT(%ecx), %eax
	leal	SH_PXE_QUEUE(%ecx,%eax,4), %ebp
	xorl	%ebx, %ebx
2:	pushl	(%esi,%ebx,4)
	popl	%ds:(%ebp,%ebx,4)	/* ds, as every other store to the page */
	movl	%edi, %ds:(SH_PXE_SITE - SH_PXE_QUEUE)(%ebp,%ebx,4)
	incl	%ebx
	cmpl	%edx, %ebx
	jb	2b
	leal	(%eax,%edx), %ebx
	cmpxchgl %ebx, SH_PXE_COUNT(%ecx)	/* an exit can only have lowered it */
	jne	1b
	popl	%ebp
	popl	%eax			/* the caller's virtual IF */
	movl	%eax, SH_IF(%ecx)
	testl	%eax, %eax
	jz	3f
	cmpl	$0, SH_PENDING(%ecx)	/* as EnableInterrupts: set, then look */
	je	3f
	pushl	%edi
	movl	$VMI_CALL_EnableInterrupts, %edi
	int	$VMI_HYPERCALL_VECTOR
	popl	%edi
3:	xorl	%eax, %eax
	ret
7:	popl	SH_IF(%ecx)
8:	movl	$1, %eax
	ret

/* In: eax = ppn, edx = flags, ecx = orig, 4(%esp) = base, 8(%esp) = count. */
fast_AllocatePage:
	pushl	%ecx
	SHARED_PAGE VMI_SHARED_F_PTLIFE, 9f
	pushl	%ebx
	pushl	%esi
	pushl	%edi
	pushl	24(%esp)		/* count (past edi, esi, ebx, orig, ret, base) */
	pushl	24(%esp)		/* base */
	pushl	20(%esp)		/* orig */
	pushl	%edx
	pushl	%eax
	pushl	$PXE_CALL(VMI_CALL_AllocatePage)
	movl	40(%esp), %edi		/* the kernel's return address */
	movl	%esp, %esi
	movl	$6, %edx
	call	pxe_queue_call
	movl	4(%esp), %ecx		/* the arguments again, for the slow side */
	movl	8(%esp), %edx
	movl	12(%esp), %ebx
	addl	$24, %esp
	xchgl	%eax, %ecx		/* eax = ppn, ecx = 0 when queued */
	popl	%edi
	popl	%esi
	testl	%ecx, %ecx
	movl	%ebx, %ecx		/* orig */
	popl	%ebx
	jnz	9f
	popl	%ecx
	ret
9:	popl	%ecx			/* orig, for the hypercall */
hc_AllocatePage:
	pushl	%ebx
	pushl	%esi
	pushl	%edi
	movl	16(%esp), %ebx		/* stack arguments 1 and 2, as VSLOT_HC n, 2 */
	movl	20(%esp), %esi
	movl	$VMI_CALL_AllocatePage, %edi
	int	$VMI_HYPERCALL_VECTOR
	popl	%edi
	popl	%esi
	popl	%ebx
	ret

/* In: eax = ppn, edx = flags. */
fast_ReleasePage:
	SHARED_PAGE VMI_SHARED_F_PTLIFE, hc_ReleasePage
	pushl	%ebx
	pushl	%esi
	pushl	%edi
	pushl	%edx
	pushl	%eax
	pushl	$PXE_CALL(VMI_CALL_ReleasePage)
	movl	24(%esp), %edi		/* the kernel's return address */
	movl	%esp, %esi
	movl	$3, %edx
	call	pxe_queue_call
	movl	%eax, %ecx
	movl	4(%esp), %eax		/* the arguments again, for the slow side */
	movl	8(%esp), %edx
	addl	$12, %esp
	popl	%edi
	popl	%esi
	popl	%ebx
	testl	%ecx, %ecx
	jnz	hc_ReleasePage
	ret
hc_ReleasePage:
	HYPERCALL VMI_CALL_ReleasePage

/*
 * InvalPage and FlushTLB (F_INVAL): the hypervisor publishes F_INVAL only
 * while its shadows follow the guest's tables (after activation), where
 * these calls have nothing to do but apply what is queued: with the
 * queue empty every shadow entry is already what the guest's entry says,
 * so there is nothing stale to drop, and the call returns at once.  With
 * anything queued it makes the hypercall, which drains the queue first:
 * the first call of a run of InvalPages exits, the rest find the queue
 * empty (docs/MEMORY.md, "Invalidations without an exit").  In: eax.
 */
fast_InvalPage:
	SHARED_PAGE VMI_SHARED_F_INVAL, hc_InvalPage
	cmpl	$0, SH_PXE_COUNT(%ecx)
	jne	hc_InvalPage
	ret
hc_InvalPage:
	HYPERCALL VMI_CALL_InvalPage

fast_FlushTLB:
	SHARED_PAGE VMI_SHARED_F_INVAL, hc_FlushTLB
	cmpl	$0, SH_PXE_COUNT(%ecx)
	jne	hc_FlushTLB
	ret
hc_FlushTLB:
	HYPERCALL VMI_CALL_FlushTLB

/*
 * GetCycleCounter (F_TIME).  REAL is the TSC itself (the hypervisor gives
 * the guest the machine's TSC, CR4.TSD clear); AVAILABLE = REAL - STOLEN;
 * STOLEN is published on the page and only changes while the vCPU does not
 * run, i.e. at an exit.  The hypervisor adds 1 to time_seq whenever it
 * publishes, so a read that an exit interrupted (the TSC from before it,
 * stolen from after, or half of each 64-bit word) is done again: reading
 * seq, then the TSC and stolen, then seq unchanged means no exit came in
 * between.  An unknown counter goes to the hypervisor, which stops the
 * guest.  In: eax = counter.  Out: edx:eax.
 */
#define SH_TIME_SEQ	VMI_OFF_vmi_shared_page_time_seq
#define SH_STOLEN	VMI_OFF_vmi_shared_page_stolen

fast_GetCycleCounter:
	SHARED_PAGE VMI_SHARED_F_TIME, hc_GetCycleCounter
	cmpl	$VMI_CYCLES_REAL, %eax
	jne	1f
	rdtsc
	ret
1:	cmpl	$VMI_CYCLES_STOLEN, %eax
	ja	hc_GetCycleCounter
	pushl	%ebx
	pushl	%esi
	movl	%eax, %esi		/* AVAILABLE or STOLEN */
2:	movl	SH_TIME_SEQ(%ecx), %ebx
	cmpl	$VMI_CYCLES_STOLEN, %esi
	je	3f
	rdtsc
	subl	SH_STOLEN(%ecx), %eax
	sbbl	SH_STOLEN+4(%ecx), %edx
	jmp	4f
3:	movl	SH_STOLEN(%ecx), %eax
	movl	SH_STOLEN+4(%ecx), %edx
4:	cmpl	SH_TIME_SEQ(%ecx), %ebx
	jne	2b
	popl	%esi
	popl	%ebx
	ret
hc_GetCycleCounter:
	HYPERCALL VMI_CALL_GetCycleCounter

/*
 * The 8259s' masks and EOIs (F_PIC, with F_VIF; docs/VROM.md, "The
 * 8259s and the alarm without an exit").  The hypervisor publishes each
 * chip's IMR, ISR and IRR before an entry (when they changed) and takes
 * back at an exit the IMR and ISR words that differ from those it
 * published; in between the ROM serves what Linux's i8259
 * driver does around each interrupt: OCW1 (a new mask, on 0x21/0xa1),
 * OCW2's non-specific (0x20) and specific (0x60-0x67) EOI (on
 * 0x20/0xa0), and INB of the mask.  Only a chip the hypervisor marked
 * ready (initialised, not auto-EOI) is served; everything else (ICW1-4,
 * OCW3, rotation, another port) is the hypercall.  Each change is one
 * instruction (a store, a btr), so an exit between instructions sees
 * the state before or after it, never half of it.
 *
 * A new mask or an EOI can let a request through that was held back.
 * It must not wait for some later exit: with the virtual IF set the ROM
 * makes the EnableInterrupts hypercall at once, so the hypervisor
 * delivers it; with IF clear it sets irq_pending, so the STI or IRET
 * that sets IF makes that hypercall (as when the hypervisor sets it).
 * "Let through" is judged from the published IRR alone (masked, not
 * looking at priority): an exit too many at worst.
 *
 * In: eax = value, edx = port.  Clobbers eax, ecx, edx, flags.
 */
#define SH_PIC_IMR	VMI_OFF_vmi_shared_page_pic_imr
#define SH_PIC_ISR	VMI_OFF_vmi_shared_page_pic_isr
#define SH_PIC_IRR	VMI_OFF_vmi_shared_page_pic_irr
#define SH_PIC_READY	VMI_OFF_vmi_shared_page_pic_ready

fast_OUTB:
	SHARED_PAGE VMI_SHARED_F_PIC, hc_OUTB
	testl	$VMI_SHARED_F_VIF, SH_FEATURES(%ecx)
	jz	hc_OUTB
	pushl	%ebx
	pushl	%esi
	movl	%edx, %ebx
	andl	$~0x81, %ebx
	cmpl	$0x20, %ebx
	jne	8f			/* not 0x20, 0x21, 0xa0 or 0xa1 */
	movl	%edx, %ebx
	shrl	$7, %ebx		/* the chip: 0 master, 1 slave */
	btl	%ebx, SH_PIC_READY(%ecx)
	jnc	8f			/* initialising, or auto-EOI: the hypervisor's */
	movzbl	%al, %esi
	testb	$1, %dl
	jz	3f
	movl	%esi, SH_PIC_IMR(%ecx,%ebx,4)	/* OCW1: the new mask */
	jmp	5f
3:	cmpl	$0x20, %esi
	je	4f
	subl	$0x60, %esi
	cmpl	$7, %esi
	ja	8f			/* not an EOI: ICW1, OCW3, rotation */
	btrl	%esi, SH_PIC_ISR(%ecx,%ebx,4)	/* specific EOI */
	jmp	5f
4:	bsfl	SH_PIC_ISR(%ecx,%ebx,4), %esi	/* non-specific: the highest in service */
	jz	5f
	btrl	%esi, SH_PIC_ISR(%ecx,%ebx,4)
5:	movl	SH_PIC_IMR(%ecx,%ebx,4), %esi
	notl	%esi
	testl	SH_PIC_IRR(%ecx,%ebx,4), %esi
	popl	%esi
	popl	%ebx
	jnz	6f
	ret
6:	movl	$1, SH_PENDING(%ecx)	/* for the STI or IRET that sets IF */
	testl	$VMI_EFLAGS_IF, SH_IF(%ecx)
	jnz	hc_EnableInterrupts	/* IF set: have it delivered now */
	ret
8:	popl	%esi
	popl	%ebx
hc_OUTB:
	HYPERCALL VMI_CALL_OUTB

/*
 * SetAlarm (F_ALARM): a one-shot (flags = the counter, REAL or
 * AVAILABLE, wired to IRQ0) whose expiry is at or after the counter's
 * alarm_floor is left in alarm_lazy without an exit.  The hypervisor
 * publishes as the floor the time by which it will look at this page
 * anyway (the alarm it has armed, or the one it expects the guest to set
 * after the last one fired), less a slack; it takes alarm_lazy at every
 * exit, so the alarm fires at the expiry or at most that slack after it
 * (docs/TIME.md, "Alarms set without an exit").  An earlier expiry, a
 * periodic alarm and any other flag make the hypercall.
 *
 * The floor is only good until the next exit, which may publish a new
 * one: so with every new floor the hypervisor writes a fresh token
 * (ALARM_EMPTY_HI in the high word) into alarm_lazy, the ROM reads it
 * before the floor, and stores the expiry with cmpxchg8b against it.  If
 * an exit that published another floor came in between, the token
 * changed and the ROM starts again with the new floor; one instruction writes all 64 bits, so the hypervisor never
 * sees half of an expiry.
 *
 * In: eax = flags, ecx:edx = expiry, 4(%esp) and 8(%esp) = the period
 * (a one-shot has none).  Clobbers eax, ecx, edx, flags.
 */
#define SH_ALARM_FLOOR	VMI_OFF_vmi_shared_page_alarm_floor
#define SH_ALARM_LAZY	VMI_OFF_vmi_shared_page_alarm_lazy

fast_SetAlarm:
	pushl	%ecx			/* expiry high: SHARED_PAGE needs ecx */
	SHARED_PAGE VMI_SHARED_F_ALARM, alarm_hc
	cmpl	$VMI_ALARM_COUNTERS, %eax
	jae	alarm_hc		/* periodic, or any other flag */
	testl	$VMI_SHARED_ALARM_EMPTY_HI, (%esp)
	jnz	alarm_hc		/* it would read as a token */
	pushl	%ebx
	pushl	%esi
	pushl	%edi
	pushl	%ebp
	movl	%ecx, %esi		/* the page */
	movl	%eax, %edi		/* the counter */
	movl	%edx, %ebx		/* ecx:ebx = the expiry */
	movl	16(%esp), %ecx
1:	movl	SH_ALARM_LAZY(%esi,%edi,8), %eax	/* edx:eax = the token */
	movl	SH_ALARM_LAZY+4(%esi,%edi,8), %edx
	movl	%ecx, %ebp
	cmpl	SH_ALARM_FLOOR(%esi,%edi,8), %ebx
	sbbl	SH_ALARM_FLOOR+4(%esi,%edi,8), %ebp
	jb	2f			/* before the floor: the hypervisor must know now */
	cmpxchg8b SH_ALARM_LAZY(%esi,%edi,8)
	jne	1b			/* an exit came: a new floor */
	popl	%ebp
	popl	%edi
	popl	%esi
	popl	%ebx
	popl	%ecx
	ret
2:	movl	%edi, %eax		/* the flags and expiry again */
	movl	%ebx, %edx
	popl	%ebp
	popl	%edi
	popl	%esi
	popl	%ebx
alarm_hc:
	popl	%ecx
hc_SetAlarm:
	pushl	%ebx			/* as VSLOT_HC 81, 2 */
	pushl	%esi
	pushl	%edi
	movl	16(%esp), %ebx
	movl	20(%esp), %esi
	movl	$VMI_CALL_SetAlarm, %edi
	int	$VMI_HYPERCALL_VECTOR
	popl	%edi
	popl	%esi
	popl	%ebx
	ret

/*
 * INB (F_INB): the hypervisor publishes, before every entry, the ports
 * whose reads have no side effect together with their values (the 8250's
 * LSR, polled for every console byte, and its other plain registers).
 * They change only at an exit (a guest OUT, received input), so a
 * published value is the port's value until the next exit.  Any other
 * port makes the hypercall.  In: eax = port.  Out: eax.
 */
#define SH_INB_CACHE	VMI_OFF_vmi_shared_page_inb_cache

fast_INB:
	SHARED_PAGE VMI_SHARED_F_PIC, inb_cached
	movl	%eax, %edx
	andl	$~0x80, %edx
	cmpl	$0x21, %edx
	jne	inb_cached		/* not an 8259's mask (0x21, 0xa1) */
	movl	%eax, %edx
	shrl	$7, %edx		/* the chip: 0 master, 1 slave */
	btl	%edx, SH_PIC_READY(%ecx)
	jnc	inb_cached
	movzbl	SH_PIC_IMR(%ecx,%edx,4), %eax
	ret
inb_cached:
	SHARED_PAGE VMI_SHARED_F_INB, hc_INB
	pushl	%esi
	movzwl	%ax, %edx
	shll	$8, %edx
	orl	$VMI_SHARED_INB_VALID, %edx	/* the entry for this port, value 0 */
	xorl	%esi, %esi
1:	movl	SH_INB_CACHE(%ecx,%esi,4), %eax
	xorl	%edx, %eax		/* the value alone if the port matches */
	cmpl	$0xff, %eax
	jbe	2f
	incl	%esi
	cmpl	$VMI_SHARED_INB_CACHE_LEN, %esi
	jb	1b
	movl	%edx, %eax
	shrl	$8, %eax
	andl	$0xffff, %eax		/* the port again, for the hypervisor */
	popl	%esi
	jmp	hc_INB
2:	popl	%esi
	ret
hc_INB:
	HYPERCALL VMI_CALL_INB

/*
 * IRET (F_IRET, with F_VIF): a real iret, no exit.  At CPL 1 the CPU
 * leaves EFLAGS.IF and IOPL alone whatever the frame says (CPL > IOPL 0),
 * and checks the frame's cs, ss and eip against the GDT like any iret,
 * so the guest gets nothing it could not get from the instruction.  What
 * the ROM adds is the virtual IF: it stores the frame's IF bit in the
 * page first.  From that store until the iret is done the virtual IF is
 * the one the frame returns to, but the frame is still on the stack: an
 * interrupt delivered there would nest on it.  So that window
 * (vrom_iret_window up to vrom_iret_window_end) is the hypervisor's to
 * finish: at an exit whose eip is inside it, the hypervisor completes the
 * iret itself, as the IRET hypercall would, before anything else
 * (docs/VROM.md, "The ROM's IRET, cheap exits, system calls without an exit").  Inside the window, with IF set and an
 * interrupt pending, the ROM makes the IRET hypercall, so the interrupt
 * is delivered at once, on the frame's side of the return.
 *
 * A frame the iret refuses (a bad cs or ss from sigreturn) faults at
 * vrom_iret_insn; the hypervisor reports that fault to the guest at the
 * IRET slot with the caller's virtual IF (docs/VROM.md, "A faulting
 * IRET").  The caller's IF is kept in iret_caller_if for that, since
 * eflags_if already holds the frame's; the hypercall below puts it back
 * first, so the hypercall sees the state the slot was entered with.
 * Everywhere in the window but at the iret itself the saved ecx is on
 * the stack.
 *
 * Entered with jmp: [esp] = eip, cs, eflags [, esp, ss].  Every register
 * is the caller's and stays so; ecx is saved below the frame.  The data
 * segments are already the ones being returned to (a user's ds may even
 * be null), so every access goes through ss, the kernel's stack segment,
 * as lguest's iret did.
 */
#define SH_IRET_COUNT	VMI_OFF_vmi_shared_page_iret_count
#define SH_IRET_CALLER_IF VMI_OFF_vmi_shared_page_iret_caller_if

fast_IRET:
	pushl	%ecx
	SHARED_PAGE VMI_SHARED_F_IRET, iret_hypercall, %ss:
	testl	$VMI_SHARED_F_VIF, %ss:SH_FEATURES(%ecx)
	jz	iret_hypercall
	incl	%ss:SH_IRET_COUNT(%ecx)	/* for the statistics; an exit zeroes it */
	pushl	%ss:SH_IF(%ecx)
	popl	%ss:SH_IRET_CALLER_IF(%ecx)
	pushl	12(%esp)		/* the frame's eflags (past ecx, eip, cs) */
	andl	$VMI_EFLAGS_IF, (%esp)
	popl	%ss:SH_IF(%ecx)
	.globl	vrom_iret_window
vrom_iret_window:
	testl	$VMI_EFLAGS_IF, %ss:SH_IF(%ecx)
	jz	1f
	cmpl	$0, %ss:SH_PENDING(%ecx)
	jne	2f
1:	popl	%ecx
	.globl	vrom_iret_insn
vrom_iret_insn:
	iret
2:	pushl	%ss:SH_IRET_CALLER_IF(%ecx)
	popl	%ss:SH_IF(%ecx)
	.globl	vrom_iret_window_end
vrom_iret_window_end:
iret_hypercall:
	popl	%ecx
	pushl	%edi
	movl	$VMI_CALL_IRET, %edi
	int	$VMI_HYPERCALL_VECTOR
	ud2

	.globl	vrom_end
vrom_end:
