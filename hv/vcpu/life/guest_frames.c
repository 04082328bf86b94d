/*
 * guest_frames.c - the machine frames a guest holds beyond its memory:
 * charged to its frame budget while it runs, given back when it ends, and
 * the free-frame count that shows none leaked.
 *
 * The budget (mm/frame_budget.h; docs/MEMORY.md, "Frame budgets") is
 * HV_RESERVED_FRAMES per guest, the frames the loader keeps free for it.
 * Charged at load: the guest's record, its vCPUs (their struct, stack
 * and shared pages), the vTLB's page directory and the shadow index.
 * Charged while it runs, on demand: shadow page tables and directories
 * with their link frames (mm/shadow_notify.c), the vTLB's page tables
 * (mm/vtlb.c) and the LDT copy's frames (vcpu_ldt.c).  At the limit the
 * shadows and the vTLB are caches and give frames back (evict, flush);
 * what cannot be had even so stops that guest with a diagnostic.
 *
 * A dead guest is never entered again, so once its end has been reported
 * (the report includes the shadow audit) its run-time frames go back to
 * the pool, and the hypervisor prints the free count against the one
 * taken before the guests first ran: with every guest ended the two must
 * be equal, so a frame lost on any path a guest can drive (the fuzzer and
 * the hostile suite check it after every run) shows as a difference.
 */
#include "vcpu_state.h"
#include "guest_frames.h"
#include "guest_report.h"
#include "vcpu_shootdown.h"
#include "machine_mem.h"
#include "console.h"
#include "hvlib.h"
#include "stop.h"

static uint32_t pages_of(size_t bytes)
{
	return (uint32_t)((bytes + HV_PAGE_SIZE - 1) / HV_PAGE_SIZE);
}

/* The record must leave most of the budget for what the guest runs on. */
_Static_assert(sizeof(struct guest) < HV_RESERVED_FRAMES / 8 * HV_PAGE_SIZE,
	       "struct guest takes too much of a guest's frame budget");

void *guest_alloc_at_load(struct guest *g, size_t bytes, const char *what)
{
	uint32_t pages = pages_of(bytes);

	/* Before the guest runs: what its budget must hold for the guest to
	 * run at all, so not holding it is a configuration the hypervisor
	 * cannot run (no guest input has been seen yet). */
	if (!frame_budget_take(&g->budget, pages))
		hv_fail("guest %s: %s (%u frames) does not fit its frame budget: %u of %u frames in use",
			g->name, what, pages, g->budget.used, g->budget.limit);
	return alloc_zeroed(bytes);
}

/*
 * The guest's caches give back what they can: every shadow the loaded
 * directories do not need, every vTLB table (rebuilt on demand).  Another
 * vCPU may be in guest mode on another CPU, on its vTLB, its TLB and
 * paging-structure caches reaching those tables: it leaves the guest
 * first (guest_shootdown), and cannot enter again before the tables are
 * gone, since its entry needs the guest's lock that this exit holds.
 * Otherwise a table frame back in the pool, taken by another guest,
 * could still be walked by that CPU.
 */
static void trim_caches(struct guest *g)
{
	if (g->shadow_ready)
		shadow_trim(&g->shadow);
	if (g->nr_vcpus > 1)
		guest_shootdown(g);
	for (unsigned i = 0; i < g->nr_vcpus; i++)
		vtlb_flush(&g->vcpus[i]->vtlb);
}

void *guest_alloc_page(struct guest *g)
{
	uint32_t pfn;
	void *p;

	if (!frame_budget_take(&g->budget, 1)) {
		trim_caches(g);
		if (!frame_budget_take(&g->budget, 1))
			return 0;
	}
	/* The pool backs every budget (guest_frames_baseline), so this
	 * holds; if it did not, the guest is refused, nobody else. */
	if (!machine_frame_alloc(&pfn)) {
		frame_budget_give(&g->budget, 1);
		return 0;
	}
	p = phys_to_virt(pfn << HV_PAGE_SHIFT);
	memset(p, 0, HV_PAGE_SIZE);
	return p;
}

void guest_free_page(struct guest *g, void *page)
{
	HV_ASSERT(machine_frame_free(virt_to_phys(page) >> HV_PAGE_SHIFT));
	frame_budget_give(&g->budget, 1);
}

void guest_budget_print(const struct guest *g)
{
	const struct frame_budget *b = &g->budget;

	kprintf("vmi-hv: frame budget: %u of %u frames in use (%u KiB of %u KiB; peak %u), %llu takes refused at the limit\n",
		b->used, b->limit, b->used * (HV_PAGE_SIZE / 1024), b->limit * (HV_PAGE_SIZE / 1024), b->peak,
		(unsigned long long)b->refused);
}

void guest_frames_baseline(struct guest **guests, unsigned n)
{
	uint32_t promised = 0;

	for (unsigned i = 0; i < n; i++) {
		guests[i]->frames_free_before = machine_frames.nfree;
		guests[i]->load_frames = guests[i]->budget.used;
		promised += guests[i]->budget.limit - guests[i]->budget.used;
	}
	kprintf("vmi-hv: machine frames free before the guests run: %u (%u promised to the guests' frame budgets)\n",
		machine_frames.nfree, promised);
	/* The loader kept HV_RESERVED_FRAMES free per guest (guest_set.c,
	 * guest_mem.c), so this holds by construction; if it did not, a guest
	 * within its budget could find the pool empty. */
	if (promised > machine_frames.nfree)
		hv_fail("the frame pool (%u frames) does not back the guests' frame budgets (%u frames)",
			machine_frames.nfree, promised);
}

static void release_ldt(struct vcpu *v)
{
	for (unsigned i = 0; i < VCPU_LDT_PAGES; i++) {
		if (!v->ldt.page[i])
			continue;
		guest_free_page(v->guest, v->ldt.page[i]);
		v->ldt.page[i] = 0;
	}
	v->ldt.count = 0;
}

void guest_frames_release(struct guest *g)
{
	if (g->frames_released)
		return;
	g->frames_released = true;
	if (g->shadow_ready)
		shadow_destroy(&g->shadow);
	for (unsigned i = 0; i < g->nr_vcpus; i++) {
		vtlb_flush(&g->vcpus[i]->vtlb);
		release_ldt(g->vcpus[i]);
	}
	kprintf("vmi-hv: machine frames free: %u after guest %s's end (%u before the guests ran)\n",
		machine_frames.nfree, g->name, g->frames_free_before);
	/* Every run-time take given back: a budget that does not come back
	 * to its load charge leaks (give below take) even when no frame is
	 * lost, and a restart would hide it (it starts the budget afresh). */
	kprintf("vmi-hv: frame budget: %u frames in use after guest %s's end (%u charged at load)\n",
		g->budget.used, g->name, g->load_frames);
}
