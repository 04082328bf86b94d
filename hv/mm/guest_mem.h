/*
 * guest_mem.h - a guest's "physical" memory: machine frames listed in a
 * physical-to-machine (p2m) array, so guest memory need not be
 * contiguous in machine memory.  Shadow paging (vtlb.c, shadow_notify.c)
 * translates guest frame numbers through this array and refuses any
 * frame outside it.
 */
#ifndef VMI_HV_GUEST_MEM_H
#define VMI_HV_GUEST_MEM_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

struct guest_mem {
	uint64_t size;		/* bytes, a multiple of 4 KiB */
	uint32_t npages;
	uint32_t *p2m;		/* guest pfn -> machine pfn */
	uint32_t p2m_pages;
	uint32_t extents;	/* machine-contiguous runs, for the log */
};

/* Frames that must stay free for the hypervisor itself (shadow page
 * tables, vCPU state) after a guest's memory is taken. */
#define HV_RESERVED_FRAMES  (8u * 1024 * 1024 / 4096)

/* The most guest memory guest_mem_alloc() could give right now. */
uint64_t guest_mem_available(void);
/* Allocate and zero size bytes.  false (with a reason in why) if the
 * machine does not have them to spare. */
bool guest_mem_alloc(struct guest_mem *gm, uint64_t size, char *why, size_t whylen);
/* Every page zeroed again, as guest_mem_alloc() gave them (a reboot). */
void guest_mem_zero(const struct guest_mem *gm);
/* Copy into / out of guest-physical memory.  A range outside the guest
 * is a hypervisor bug: these panic. */
void guest_mem_write(const struct guest_mem *gm, uint64_t gpa, const void *src, size_t len);
void guest_mem_read(const struct guest_mem *gm, uint64_t gpa, void *dst, size_t len);
/* Either way: buf into guest memory when write, else out of it. */
void guest_mem_copy(const struct guest_mem *gm, uint64_t gpa, void *buf, size_t len, bool write);
/* Machine address of a guest-physical address; ~0u if outside. */
uint32_t guest_gpa_to_machine(const struct guest_mem *gm, uint64_t gpa);

#endif
