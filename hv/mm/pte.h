/*
 * pte.h - the one vocabulary for x86 page tables: the entry bits, the
 * geometry of the paging mode, and helpers that take entries and linear
 * addresses apart.
 *
 * vmi-hv runs non-PAE guests only: 2-level paging, 32-bit entries, 1024
 * entries per table, a page directory entry per 4 MiB (a 4 MiB page with
 * CR4.PSE).  That geometry is in this file and nowhere else: the page
 * size and the large-page size come from layout.h, every index, frame and
 * mask is derived here.  A PAE variant (3 levels, 64-bit entries, 512 per
 * table, 2 MiB large pages) would add its own geometry and pae_* helpers
 * beside these; the bits P..G below mean the same in both.
 *
 * The bits are plain numbers (unsigned in C), so boot.S includes this
 * file too; the helpers are C only.
 */
#ifndef VMI_HV_PTE_H
#define VMI_HV_PTE_H

#include "layout.h"
#include "x86.h"

/* Entry bits, in page-table and page-directory entries alike. */
#define PTE_P    X86_U(0x001)	/* present */
#define PTE_W    X86_U(0x002)	/* writable */
#define PTE_U    X86_U(0x004)	/* user */
#define PTE_PWT  X86_U(0x008)
#define PTE_PCD  X86_U(0x010)
#define PTE_A    X86_U(0x020)	/* accessed */
#define PTE_D    X86_U(0x040)	/* dirty (leaf entries) */
#define PTE_PS   X86_U(0x080)	/* PDE: a 4 MiB page (with CR4.PSE) */
#define PTE_G    X86_U(0x100)	/* global (with CR4.PGE) */

/* Non-PAE geometry. */
#define PTE_SHIFT        HV_PAGE_SHIFT		/* linear bits 21..12 index a page table */
#define PDE_SHIFT        HV_LARGE_PAGE_SHIFT	/* linear bits 31..22 index the directory */
#define PT_ENTRIES       (1 << (PDE_SHIFT - PTE_SHIFT))	/* 1024, in either level */
#define PAGE_OFFSET_MASK (HV_PAGE_SIZE - 1)
#define LARGE_PAGE_OFFSET_MASK (HV_LARGE_PAGE_SIZE - 1)
#define PTE_FRAME_MASK   X86_U(0xFFFFF000)	/* a 4 KiB entry's frame address */
#define PDE_LARGE_FRAME_MASK X86_U(0xFFC00000)	/* a 4 MiB PDE's frame address */
/* Bits 13..21 of a 4 MiB PDE: physical address bits 32..39 with PSE-36,
 * reserved otherwise.  Either way not a frame below 4 GiB.  (Bit 12 is
 * PAT.) */
#define PDE_LARGE_HIGHBITS X86_U(0x003FE000)

#ifndef __ASSEMBLER__
#include <stdint.h>

/* Which directory entry, and which entry of its page table, map lin. */
static inline unsigned pde_index(uint32_t lin)
{
	return lin >> PDE_SHIFT;
}

static inline unsigned pte_index(uint32_t lin)
{
	return (lin >> PTE_SHIFT) & (PT_ENTRIES - 1);
}

static inline uint32_t page_offset(uint32_t lin)
{
	return lin & PAGE_OFFSET_MASK;
}

/* The linear address at which directory entry i starts. */
static inline uint32_t pde_base(unsigned i)
{
	return (uint32_t)i << PDE_SHIFT;
}

/* The frame number of an address, and back. */
static inline uint32_t page_frame(uint32_t addr)
{
	return addr >> PTE_SHIFT;
}

static inline uint32_t frame_addr(uint32_t frame)
{
	return frame << PTE_SHIFT;
}

/* The frame number an entry names (a 4 KiB entry, or a PDE's table). */
static inline uint32_t pte_frame(uint32_t e)
{
	return e >> PTE_SHIFT;
}

/* The frame's address (the entry without its flag bits). */
static inline uint32_t pte_addr(uint32_t e)
{
	return e & PTE_FRAME_MASK;
}

/* A 4 MiB PDE's first frame number. */
static inline uint32_t pde_large_frame(uint32_t e)
{
	return (e & PDE_LARGE_FRAME_MASK) >> PTE_SHIFT;
}

/* An entry naming frame with flags. */
static inline uint32_t make_pte(uint32_t frame, uint32_t flags)
{
	return (frame << PTE_SHIFT) | flags;
}

/* Bytes from addr to the end of its page, at most len: how much of a
 * copy stays in one page. */
static inline unsigned page_chunk(uint32_t addr, unsigned len)
{
	unsigned left = HV_PAGE_SIZE - page_offset(addr);

	return left < len ? left : len;
}
#endif

#endif
