/* machine_mem.h - the machine's RAM, as the frame allocator sees it. */
#ifndef VMI_HV_MACHINE_MEM_H
#define VMI_HV_MACHINE_MEM_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include "frames.h"
#include "multiboot.h"

/* The pool: taken from and given back to only through the functions
 * below (they hold frames_lock), but for the loader's allocations at
 * boot, before the other CPUs run.  nfree may be read for statistics. */
extern struct frame_pool machine_frames;

/* Build the pool from the multiboot memory map, reserving the first MiB,
 * the hypervisor image, the modules and all multiboot data. */
void machine_mem_init(const struct multiboot_info *mbi);

/* One zeroed frame, as a pointer in the direct map; stops the hypervisor
 * with a panic if memory is exhausted (only for its own small needs). */
void *alloc_zeroed_page(void);
/* One frame taken from the pool, or given back (false: not taken). */
bool machine_frame_alloc(uint32_t *pfn);
bool machine_frame_free(uint32_t pfn);
/* Zeroed, machine-contiguous whole pages for bytes. */
void *alloc_zeroed(size_t bytes);
uint32_t machine_free_bytes_kib(void);
/* A page of RAM below 640 KiB that no multiboot structure uses (for a
 * started CPU's real-mode code); 0 if there is none.  The first MiB is
 * never handed out, so it stays ours. */
uint32_t machine_mem_low_page(void);

static inline void *phys_to_virt(uint32_t pa) { return (void *)pa; }
static inline uint32_t virt_to_phys(const void *va) { return (uint32_t)va; }

#endif
