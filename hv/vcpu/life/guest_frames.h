/*
 * guest_frames.h - the machine frames a guest causes (guest_frames.c):
 * its frame budget (docs/MEMORY.md, "Frame budgets"), and the frames of a
 * dead guest's run given back.
 */
#ifndef VMI_HV_GUEST_FRAMES_H
#define VMI_HV_GUEST_FRAMES_H

#include <stddef.h>

struct guest;

/* The guest's frame budget (set up by the loader, with the guest's
 * record charged): before the guest runs, zeroed contiguous memory charged to it (the
 * hypervisor stops with a diagnostic if the budget cannot hold it); */
void *guest_alloc_at_load(struct guest *g, size_t bytes, const char *what);
/* while it runs: one zeroed frame charged to it, after trimming its
 * shadows and vTLB if the budget is spent; 0 if even that leaves none. */
void *guest_alloc_page(struct guest *g);
void guest_free_page(struct guest *g, void *page);
/* One line for the statistics: frames in use against the budget. */
void guest_budget_print(const struct guest *g);

/* The free-frame count before the guests run (checked against what the
 * budgets promise); the frames a dead guest's run took (shadows, vTLB
 * tables, LDT copy) given back. */
void guest_frames_baseline(struct guest **guests, unsigned n);
void guest_frames_release(struct guest *g);

#endif
