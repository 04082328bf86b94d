/*
 * guest_frames.c - the machine frames a guest's run took, given back when
 * it ends, and the free-frame count that shows none leaked.
 *
 * Loading a guest takes its memory, p2m, vCPU pages and the shadow index
 * before anything runs; running it takes more on demand: shadow page
 * tables and directories (mm/shadow.c), the vTLB's page tables before
 * activation (mm/vtlb.c) and the LDT copy's frames (vcpu_ldt.c).  A dead
 * guest is never entered again, so once its end has been reported (the
 * report includes the shadow audit) those frames go back to the pool, and
 * the hypervisor prints the free count against the one taken before the
 * guests first ran: with every guest ended the two must be equal, so a
 * frame lost on any path a guest can drive (issue 18's fuzzer and hostile
 * suite check it after every run) shows as a difference.
 */
#include "vcpu_state.h"
#include "guest_report.h"
#include "machine_mem.h"
#include "console.h"
#include "hvlib.h"
#include "stop.h"

void guest_frames_baseline(struct guest **guests, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		guests[i]->frames_free_before = machine_frames.nfree;
	kprintf("vmi-hv: machine frames free before the guests run: %u\n", machine_frames.nfree);
}

static void release_ldt(struct vcpu *v)
{
	for (unsigned i = 0; i < VCPU_LDT_PAGES; i++) {
		if (!v->ldt.page[i])
			continue;
		HV_ASSERT(frames_free(&machine_frames, virt_to_phys(v->ldt.page[i]) >> HV_PAGE_SHIFT));
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
}
