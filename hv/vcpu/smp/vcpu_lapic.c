/*
 * vcpu_lapic.c - APICRead/APICWrite: a vCPU's virtual local APIC
 * (dev/vlapic.c) and the fixed IPIs it sends to the vCPUs of its own
 * guest (docs/SMP.md, "A guest of several vCPUs").
 *
 * An IPI sets the vector in each target's IRR, taken at that vCPU's next
 * entry with its virtual IF set.  A target running on another CPU
 * (vcpus_at_once=on) is made to leave the guest: an exit of the IPI's own
 * guest.  A halted target is woken (wake_requested, and the exit is not
 * quiet, so the loop wakes it at once); a wake-up is what could cost
 * another guest, preempting the vCPU on the CPU it takes, and the
 * scheduler bounds it: it queues behind a running vCPU of its own guest
 * if there is one, and one guest's wake-ups preempt other guests' vCPUs
 * at most SCHED_WAKE_BURST times a slice (sched.c, sched_wake; docs/TIME.md,
 * "Rates a guest controls", "IPIs").
 */
#include "vcpu_lapic.h"
#include "vcpu_shootdown.h"
#include "console.h"
#include "hvlib.h"

#define APIC_REFUSALS_LOGGED 8

static uint32_t refuse(struct vcpu *v, const char *call, uint32_t reg, uint32_t val)
{
	struct guest *g = v->guest;

	if (g->apic_refused++ < APIC_REFUSALS_LOGGED)
		log_warn("guest %s: vCPU %u: %s register %x value %08x refused (docs/SMP.md, \"A guest of several vCPUs\")",
			 g->name, v->index, call, reg, val);
	return VMI_ERROR_INVALID;
}

uint32_t vcpu_apic_read(struct vcpu *v, uint32_t reg)
{
	uint32_t val;

	if (!vlapic_read(&v->lapic, reg, &val))
		return refuse(v, "APICRead", reg, 0);
	return val;
}

static void send(struct vcpu *v, const struct ipi *ipi)
{
	struct guest *g = v->guest;

	for (unsigned i = 0; i < g->nr_vcpus; i++) {
		struct vcpu *t = g->vcpus[i];

		if (!(ipi->targets >> i & 1) || t->awaiting_start)
			continue;
		vlapic_accept(&t->lapic, ipi->vector);
		v->ipis_sent++;
		/* Running on another CPU (vcpus_at_once): it leaves the
		 * guest, and takes the vector at its entry. */
		if (t != v)
			vcpu_kick_running(t);
		/* A halted target with its IF set wakes (with it clear,
		 * as a CPU in cli; hlt, it does not). */
		if (t->halted && t->vif && !t->wake_requested) {
			t->wake_requested = true;
			g->wakes_requested++;
		}
	}
}

uint32_t vcpu_apic_write(struct vcpu *v, uint32_t reg, uint32_t val)
{
	struct ipi ipi;

	switch (vlapic_write(&v->lapic, reg, val, v->guest->nr_vcpus, &ipi)) {
	case VLAPIC_OK:
		return 0;
	case VLAPIC_SEND:
		send(v, &ipi);
		return 0;
	case VLAPIC_REFUSED:
		break;
	}
	return refuse(v, "APICWrite", reg, val);
}
