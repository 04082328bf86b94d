/* guest_mem.c - allocate and access a guest's memory; see guest_mem.h. */
#include "guest_mem.h"
#include "machine_mem.h"
#include "layout.h"
#include "pte.h"
#include "stop.h"
#include "hvlib.h"

uint64_t guest_mem_available(void)
{
	uint32_t avail, npages;

	if (machine_frames.nfree <= HV_RESERVED_FRAMES + 1)
		return 0;
	avail = machine_frames.nfree - HV_RESERVED_FRAMES;
	/* Each 1024 guest pages need one page of p2m list. */
	npages = avail - (avail + 1024) / 1025;
	return (uint64_t)npages * HV_PAGE_SIZE;
}

bool guest_mem_alloc(struct guest_mem *gm, uint64_t size, char *why, size_t whylen)
{
	uint32_t npages = (uint32_t)(size / HV_PAGE_SIZE);
	uint32_t p2m_pages = (npages * 4 + HV_PAGE_SIZE - 1) / HV_PAGE_SIZE;
	uint32_t need = npages + p2m_pages + HV_RESERVED_FRAMES;
	uint32_t p2m_pfn, prev = ~0u;

	if (size > 0xffffffffull || need > machine_frames.nfree) {
		uint32_t avail = machine_frames.nfree > HV_RESERVED_FRAMES + p2m_pages ?
				 machine_frames.nfree - HV_RESERVED_FRAMES - p2m_pages : 0;

		fmt_snprintf(why, whylen,
			     "guest_mem=%lluM is larger than the memory available: at most %uM (%u KiB free, %u KiB kept for the hypervisor)",
			     size >> 20, avail / 256, machine_frames.nfree * 4,
			     HV_RESERVED_FRAMES * 4);
		return false;
	}
	if (!frames_alloc_contig(&machine_frames, p2m_pages, 1, &p2m_pfn)) {
		fmt_snprintf(why, whylen,
			     "no %u contiguous free frames for the guest's page list",
			     p2m_pages);
		return false;
	}
	gm->size = size;
	gm->npages = npages;
	gm->p2m = phys_to_virt(p2m_pfn * HV_PAGE_SIZE);
	gm->p2m_pages = p2m_pages;
	gm->extents = 0;
	for (uint32_t i = 0; i < npages; i++) {
		uint32_t pfn;

		/* Cannot fail: we checked nfree above. */
		if (!frames_alloc(&machine_frames, &pfn))
			hv_panic("frame pool ran dry during guest allocation");
		memset(phys_to_virt(pfn * HV_PAGE_SIZE), 0, HV_PAGE_SIZE);
		gm->p2m[i] = pfn;
		if (pfn != prev + 1)
			gm->extents++;
		prev = pfn;
	}
	return true;
}

void guest_mem_zero(const struct guest_mem *gm)
{
	for (uint32_t i = 0; i < gm->npages; i++)
		memset(phys_to_virt(gm->p2m[i] * HV_PAGE_SIZE), 0, HV_PAGE_SIZE);
}

uint32_t guest_gpa_to_machine(const struct guest_mem *gm, uint64_t gpa)
{
	if (gpa >= gm->size)
		return ~0u;
	return gm->p2m[gpa / HV_PAGE_SIZE] * HV_PAGE_SIZE + (uint32_t)(gpa % HV_PAGE_SIZE);
}

static void check_range(const struct guest_mem *gm, uint64_t gpa, size_t len)
{
	if (gpa > gm->size || len > gm->size - gpa)
		hv_panic("guest access %llx+%zx outside guest memory (%llx)",
			 gpa, len, gm->size);
}

/* Copy page by page: neighbouring guest pages need not be neighbours in
 * machine memory.  gpa is below 4 GiB here (check_range). */
void guest_mem_copy(const struct guest_mem *gm, uint64_t gpa, void *buf, size_t len, bool write)
{
	uint8_t *p = buf;

	check_range(gm, gpa, len);
	while (len) {
		size_t chunk = page_chunk((uint32_t)gpa, len);
		void *m = phys_to_virt(guest_gpa_to_machine(gm, gpa));

		if (write)
			memcpy(m, p, chunk);
		else
			memcpy(p, m, chunk);
		gpa += chunk;
		p += chunk;
		len -= chunk;
	}
}

void guest_mem_write(const struct guest_mem *gm, uint64_t gpa, const void *src, size_t len)
{
	guest_mem_copy(gm, gpa, (void *)src, len, true);
}

void guest_mem_read(const struct guest_mem *gm, uint64_t gpa, void *dst, size_t len)
{
	guest_mem_copy(gm, gpa, dst, len, false);
}
