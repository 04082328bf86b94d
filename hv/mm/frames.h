/*
 * frames.h - the machine page-frame allocator.
 *
 * A bitmap, one bit per 4 KiB frame, set = in use.  Pure logic: the pool
 * is handed its bitmap storage, so the same code runs in the hypervisor
 * and in tests/unit/test_frames.c.  Frames start out in use; the caller
 * frees what the memory map says is RAM and then reserves what is taken
 * (the image, the modules, the multiboot data).
 */
#ifndef VMI_HV_FRAMES_H
#define VMI_HV_FRAMES_H

#include <stdint.h>
#include <stdbool.h>

struct frame_pool {
	uint32_t *bitmap;	/* nframes bits */
	uint32_t nframes;	/* frames [0, nframes) are tracked */
	uint32_t nfree;
	uint32_t next;		/* where the next search starts */
};

/* Size in 32-bit words of a bitmap for nframes frames. */
#define FRAME_BITMAP_WORDS(nframes) (((nframes) + 31) / 32)

void frames_init(struct frame_pool *p, uint32_t *bitmap, uint32_t nframes);
/* Mark whole frames inside [start, end) free (partial frames stay used). */
void frames_add_ram(struct frame_pool *p, uint64_t start, uint64_t end);
/* Mark every frame touching [start, end) used.  Returns how many of them
 * were free before. */
uint32_t frames_reserve(struct frame_pool *p, uint64_t start, uint64_t end);
/* Lowest free frame at or after the search hint; false if none. */
bool frames_alloc(struct frame_pool *p, uint32_t *pfn);
/* count contiguous frames, first one a multiple of align (a power of 2). */
bool frames_alloc_contig(struct frame_pool *p, uint32_t count, uint32_t align,
			 uint32_t *pfn);
/* Returns false (and changes nothing) if the frame was not allocated. */
bool frames_free(struct frame_pool *p, uint32_t pfn);
bool frames_is_free(const struct frame_pool *p, uint32_t pfn);

#endif
