/*
 * guest_set.h - from the multiboot module list and the command line to
 * the set of guests to load (pure logic, unit-tested in
 * tests/unit/test_guest_set.c): modules pair up as bzImage, initrd,
 * bzImage, initrd, ...; each guest gets its name, weight and memory size,
 * and the sizes must fit the machine together.
 */
#ifndef VMI_HV_GUEST_SET_H
#define VMI_HV_GUEST_SET_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include "cmdline.h"

struct guest_spec {
	unsigned number;		/* 1-based, as in guestN.* and Ctrl-] N */
	unsigned kernel_module;		/* 0-based module index; the initrd follows */
	char name[GUEST_NAME_LEN];
	unsigned weight;
	uint32_t cpus;			/* the CPUs it may run on (bit c: CPU c); 0: any */
	unsigned vcpus;			/* its vCPUs, 1-GUEST_MAX_VCPUS */
	uint64_t mem;			/* bytes */
	/* The size came from the command line (a single guest's default
	 * size may still shrink to the machine when it is loaded). */
	bool mem_given;
	/* Several guests: false when mem is the default, shrunk to fit. */
	bool mem_given_by_user;
};

/* Frames one guest of mem bytes takes from the pool: its pages, its page
 * list, and the reserve kept for the hypervisor's own use on its behalf
 * (shadow page tables, vCPU state). */
uint64_t guest_frames_needed(uint64_t mem, uint32_t reserve_frames);

/*
 * Decide the guests: nr_modules from the boot loader, free_frames in the
 * frame pool now, reserve_frames kept per guest.  With two modules or
 * fewer, one guest whose module checks are the loader's (an absent
 * initrd is reported there).  Several guests each get guestN.mem, else
 * guest_mem=, else the default, shrunk equally for the guests without a
 * given size when the default ones do not fit.  false with one line in
 * err ("guest N (name): ..." when the fault is one guest's).
 */
bool guest_set_plan(unsigned nr_modules, const struct hv_options *o,
		    uint64_t free_frames, uint32_t reserve_frames,
		    struct guest_spec out[HV_MAX_GUESTS], unsigned *nr_guests,
		    char *err, size_t errlen);

#endif
