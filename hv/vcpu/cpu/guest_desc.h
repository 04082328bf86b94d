/*
 * guest_desc.h - the rules for a guest's segment descriptors (pure logic,
 * unit-tested in tests/unit/test_guest_desc.c).
 *
 * A guest's GDT entries are copied into our GDT (vcpu_desc.c), but only
 * in a form that cannot give the guest more privilege than ring 1: see
 * guest_desc_convert.  guest_desc_usable says whether the CPU will load a
 * selector into a segment register without faulting, which we must know
 * before we pop a frame into the segment registers at ring 0.
 */
#ifndef VMI_HV_GUEST_DESC_H
#define VMI_HV_GUEST_DESC_H

#include <stdint.h>
#include <stdbool.h>

#define DESC_P      (1ull << 47)
#define DESC_S      (1ull << 44)
#define DESC_DPL(d) ((unsigned)(((d) >> 45) & 3))
#define DESC_TYPE(d) ((unsigned)(((d) >> 40) & 0xf))
#define DESC_TYPE_CODE      0x8
#define DESC_TYPE_CONFORMING 0x4	/* code */
#define DESC_TYPE_RW        0x2	/* data: writable; code: readable */
#define DESC_TYPE_ACCESSED  0x1
#define DESC_DB     (1ull << 54)	/* code: 32-bit default operand size */
/* The type bits in place, for testing a descriptor d directly. */
#define DESC_CODE_BIT      ((uint64_t)DESC_TYPE_CODE << 40)
#define DESC_CONFORMING_BIT ((uint64_t)DESC_TYPE_CONFORMING << 40)	/* data: expand-down */
#define DESC_RW_BIT        ((uint64_t)DESC_TYPE_RW << 40)

/*
 * An IDT gate (lguest's idt_type/idt_present): the system type is bits
 * 40-44 with S clear; a 32-bit interrupt gate clears IF, a trap gate
 * does not; a task gate names a TSS.
 */
#define GATE_TASK    0x05
#define GATE_INT16   0x06
#define GATE_TRAP16  0x07
#define GATE_INT32   0x0e
#define GATE_TRAP32  0x0f

struct gate {
	uint16_t sel;		/* the handler's code segment */
	uint32_t offset;	/* the handler's offset in it */
	unsigned type;		/* GATE_* (or anything else: not a gate) */
	unsigned dpl;		/* who may reach it with int n */
	bool present;
};

static inline struct gate gate_decode(uint64_t g)
{
	return (struct gate){
		.sel = (uint16_t)(g >> 16),
		.offset = (uint32_t)(g & 0xffff) | (uint32_t)(g >> 32 & 0xffff0000u),
		.type = (unsigned)(g >> 40) & 0x1f,
		.dpl = DESC_DPL(g),
		.present = (g & DESC_P) != 0,
	};
}

/* A gate the CPU delivers through at all (task, 16- or 32-bit interrupt or trap). */
static inline bool gate_is_gate(unsigned type)
{
	return type == GATE_TASK || type == GATE_INT16 || type == GATE_TRAP16 ||
	       type == GATE_INT32 || type == GATE_TRAP32;
}

/* A 32-bit interrupt or trap gate: what a guest's IDT may use. */
static inline bool gate_is_32bit(unsigned type)
{
	return type == GATE_INT32 || type == GATE_TRAP32;
}

/* The error code of a fault about IDT entry `vector` (the IDT bit set). */
static inline uint32_t idt_error(unsigned vector)
{
	return vector * 8 + 2;
}

/* One of the hypervisor's own GDT slots (segments.h), never the guest's. */
bool guest_desc_hv_slot(unsigned idx);

/* The descriptor the CPU gets for a guest descriptor, or 0 (unusable):
 * code and data only (S = 1); DPL 0 becomes 1, DPL 3 stays, DPL 1 and 2
 * are refused; the accessed bit is set so the CPU never writes it. */
uint64_t guest_desc_convert(uint64_t d);

uint32_t guest_desc_base(uint64_t d);

/* The last valid offset in the segment (limit scaled by G).  A code
 * segment's EIP must not exceed it: the CPU checks when CS:EIP is loaded
 * (far jmp/call/ret, iret, an IDT gate) and raises #GP(0) otherwise. */
uint32_t guest_desc_limit(uint64_t d);

enum seg_use { SEG_USE_CODE, SEG_USE_STACK, SEG_USE_DATA };

/* Will the CPU load selector sel, whose (converted) descriptor is d, into
 * a segment register used as `use`, when returning to privilege cpl?
 * Slot and table checks (null, LDT, hypervisor slot) are the caller's. */
bool guest_desc_usable(uint64_t d, uint16_t sel, enum seg_use use, unsigned cpl);

/*
 * A segment-register load as the CPU checks it (Intel SDM vol. 2, MOV,
 * JMP, CALL, RET, IRET, "protected mode"), for the loads the emulator
 * performs: d is the converted descriptor (0: unusable), sel the selector,
 * cpl the real privilege level when the load happens (1: the guest
 * kernel, 3: its user space; for the SS of a return to an outer level,
 * the new one).  RPL 0 counts as 1, the guest kernel's level.
 *
 *   SEG_LOAD_CS_TRANSFER  far jmp/call: non-conforming code needs DPL ==
 *                         CPL and RPL <= CPL, conforming DPL <= CPL; CPL stays
 *   SEG_LOAD_CS_RETURN    lret/iret: RPL >= CPL, non-conforming DPL == RPL,
 *                         conforming DPL <= RPL; CPL becomes RPL
 *   SEG_LOAD_SS           writable data with RPL == DPL == CPL
 *   SEG_LOAD_DATA         data or readable code; unless conforming code,
 *                         DPL >= CPL and DPL >= RPL
 *
 * Returns 0 and the selector to put in the register (its RPL the level
 * it runs at, for CS and SS), or the exception the CPU raises: 13 (#GP),
 * 11 (#NP: not present) or 12 (#SS: a not-present stack segment), whose
 * error code is sel & 0xfffc.
 */
/*
 * The LDT (docs/HV.md, "Descriptor tables").  A guest's LDT descriptor (in its GDT, named by
 * lldt or VMI SetLDT) gives the table's guest-linear base and its number
 * of entries, (limit + 1) / 8, at most GUEST_LDT_MAX (what a selector can
 * index).  Returns 0, or the CPU's exception for lldt: 13 (#GP) for
 * anything but an LDT descriptor, 11 (#NP) for one not present.  Its
 * entries then go through guest_desc_convert like the GDT's: code and
 * data only, DPL 0 made 1; gates and DPL 1/2 are not copied.
 */
#define GUEST_LDT_MAX 8192u
unsigned guest_desc_ldt(uint64_t d, uint32_t *base, unsigned *count);

/* The LDT descriptor the CPU gets: our converted copy of count entries
 * at linear base (the switcher), DPL 0, byte granular. */
uint64_t guest_desc_make_ldt(uint32_t base, unsigned count);

enum seg_load { SEG_LOAD_CS_TRANSFER, SEG_LOAD_CS_RETURN, SEG_LOAD_SS, SEG_LOAD_DATA };

unsigned guest_desc_load_check(uint64_t d, uint16_t sel, enum seg_load how, unsigned cpl,
			       uint16_t *loaded);

#endif
