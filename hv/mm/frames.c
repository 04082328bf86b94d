/* frames.c - bitmap page-frame allocator; see frames.h. */
#include "frames.h"

#define FRAME_SHIFT 12

static bool test(const struct frame_pool *p, uint32_t pfn)
{
	return p->bitmap[pfn / 32] & (1u << (pfn % 32));
}

static void set_used(struct frame_pool *p, uint32_t pfn)
{
	p->bitmap[pfn / 32] |= 1u << (pfn % 32);
}

static void set_free(struct frame_pool *p, uint32_t pfn)
{
	p->bitmap[pfn / 32] &= ~(1u << (pfn % 32));
}

void frames_init(struct frame_pool *p, uint32_t *bitmap, uint32_t nframes)
{
	p->bitmap = bitmap;
	p->nframes = nframes;
	p->nfree = 0;
	p->next = 0;
	for (uint32_t i = 0; i < FRAME_BITMAP_WORDS(nframes); i++)
		bitmap[i] = 0xffffffffu;
}

static uint32_t clamp_pfn(const struct frame_pool *p, uint64_t pfn)
{
	return pfn > p->nframes ? p->nframes : (uint32_t)pfn;
}

void frames_add_ram(struct frame_pool *p, uint64_t start, uint64_t end)
{
	uint32_t first, last;

	if (end <= start)
		return;
	first = clamp_pfn(p, (start + (1u << FRAME_SHIFT) - 1) >> FRAME_SHIFT);
	last = clamp_pfn(p, end >> FRAME_SHIFT);
	for (uint32_t pfn = first; pfn < last; pfn++) {
		if (test(p, pfn)) {
			set_free(p, pfn);
			p->nfree++;
		}
	}
	if (first < p->next)
		p->next = first;
}

uint32_t frames_reserve(struct frame_pool *p, uint64_t start, uint64_t end)
{
	uint32_t first, last, taken = 0;

	if (end <= start)
		return 0;
	first = clamp_pfn(p, start >> FRAME_SHIFT);
	last = clamp_pfn(p, (end + (1u << FRAME_SHIFT) - 1) >> FRAME_SHIFT);
	for (uint32_t pfn = first; pfn < last; pfn++) {
		if (!test(p, pfn)) {
			set_used(p, pfn);
			p->nfree--;
			taken++;
		}
	}
	return taken;
}

bool frames_is_free(const struct frame_pool *p, uint32_t pfn)
{
	return pfn < p->nframes && !test(p, pfn);
}

bool frames_alloc(struct frame_pool *p, uint32_t *pfn)
{
	if (!p->nfree)
		return false;
	/* Frames below `next` are all in use, so start there; skip full
	 * words quickly. */
	for (uint32_t i = p->next; i < p->nframes;) {
		if ((i % 32) == 0 && p->bitmap[i / 32] == 0xffffffffu) {
			i += 32;
			continue;
		}
		if (!test(p, i)) {
			set_used(p, i);
			p->nfree--;
			p->next = i + 1;
			*pfn = i;
			return true;
		}
		i++;
	}
	return false;	/* not reached while nfree is right */
}

bool frames_alloc_contig(struct frame_pool *p, uint32_t count, uint32_t align,
			 uint32_t *pfn)
{
	if (!count || !align || (align & (align - 1)) || count > p->nfree)
		return false;
	for (uint32_t base = 0; base + count <= p->nframes && base + count > base;
	     base += align) {
		uint32_t i;

		for (i = 0; i < count; i++)
			if (test(p, base + i))
				break;
		if (i == count) {
			for (i = 0; i < count; i++)
				set_used(p, base + i);
			p->nfree -= count;
			*pfn = base;
			return true;
		}
		/* Skip past the used frame, keeping alignment. */
		base = ((base + i) & ~(align - 1));
	}
	return false;
}

bool frames_free(struct frame_pool *p, uint32_t pfn)
{
	if (pfn >= p->nframes || !test(p, pfn))
		return false;
	set_free(p, pfn);
	p->nfree++;
	if (pfn < p->next)
		p->next = pfn;
	return true;
}
