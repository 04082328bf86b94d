/*
 * vcpu_shootdown.c - remote invalidation for the vCPUs of one guest that
 * run at once on several CPUs (docs/SMP.md, "Concurrent vCPUs").
 *
 * A CPU in guest mode holds no lock, and its TLB (and paging-structure
 * caches) may hold any shadow entry of the guest's.  The hypervisor never
 * enables PGE, so an exit, which loads the hypervisor's CR3, flushes them
 * all; the next entry loads the vCPU's CR3 again.  So "flush that CPU's
 * TLB" is "make it leave guest mode once": an IPI (HV_LOCAL_IPI_VECTOR),
 * answered by the exit itself.  Each CPU counts its exits
 * (pcpu.guest_exits) and says which vCPU it is in (pcpu.in_guest), set
 * before it lets go of the guest's lock at an entry and cleared at the
 * exit before it takes the lock again.  The CPU changing the shadows
 * holds that lock, so a CPU it does not see in the guest enters only
 * after the change (and loads CR3 then), and one it sees leaves after the
 * IPI: waiting for its count to move is waiting for its acknowledgement.
 *
 * No deadlock: the CPU that is waited for answers with its exit, which
 * needs nothing (interrupts are on in guest mode); after it, that CPU
 * may spin on the guest's lock with interrupts off, which the waiter
 * holds, but by then the waiter has its answer.  Only the holder of the
 * guest's lock ever waits, so two CPUs never wait for each other.
 */
#include "vcpu_shootdown.h"
#include "pcpu.h"
#include "smp.h"
#include "stop.h"
#include "timer.h"
#include "hvlib.h"
#include "io.h"

/* How long an acknowledgement may take: the IPI is taken at once in guest
 * mode, but under TCG on a loaded host QEMU's thread for that CPU may not
 * run for a while (waits of 0.56 s were measured at a load of 3-4 on two
 * cores); five seconds (of TSC cycles) means a CPU that no longer answers. */
#define SHOOTDOWN_ANSWER_SECONDS 5
static void wait_left(struct pcpu *c, const struct vcpu *w, uint32_t seen)
{
	uint64_t start = rdtsc(), limit = tsc_hz() * SHOOTDOWN_ANSWER_SECONDS, waited;

	while (__atomic_load_n(&c->in_guest, __ATOMIC_ACQUIRE) == w &&
	       __atomic_load_n(&c->guest_exits, __ATOMIC_ACQUIRE) == seen) {
		__asm__ volatile("pause");
		if (rdtsc() - start > limit)
			hv_panic("CPU %u did not leave guest %s within %u seconds of a shadow shootdown",
				 c->index, w->guest->name, SHOOTDOWN_ANSWER_SECONDS);
	}
	waited = rdtsc() - start;
	w->guest->shootdown_waited += waited;
	if (waited > w->guest->shootdown_longest)
		w->guest->shootdown_longest = waited;
}

/* Each other CPU in a vCPU of g: an IPI; and with wait, its exit. */
static void each_running(struct guest *g, bool wait)
{
	struct pcpu *self = this_pcpu();

	for (unsigned i = 0; i < nr_online_cpus; i++) {
		struct pcpu *c = &pcpus[i];
		uint32_t seen;
		struct vcpu *w;

		if (c == self)
			continue;
		seen = __atomic_load_n(&c->guest_exits, __ATOMIC_SEQ_CST);
		w = __atomic_load_n(&c->in_guest, __ATOMIC_SEQ_CST);
		if (!w || w->guest != g)
			continue;
		cpu_kick(c);
		g->shootdown_ipis++;
		if (wait)
			wait_left(c, w, seen);
	}
}

void guest_shootdown(struct guest *g)
{
	g->shootdowns++;
	each_running(g, true);
}

void guest_kick_running(struct guest *g)
{
	each_running(g, false);
}

bool vcpu_make_leave(struct vcpu *v)
{
	struct pcpu *self = this_pcpu();

	for (unsigned i = 0; i < nr_online_cpus; i++) {
		struct pcpu *c = &pcpus[i];
		uint32_t seen = __atomic_load_n(&c->guest_exits, __ATOMIC_SEQ_CST);

		if (c == self || __atomic_load_n(&c->in_guest, __ATOMIC_SEQ_CST) != v)
			continue;
		cpu_kick(c);
		wait_left(c, v, seen);
		return true;
	}
	return false;
}

int vcpu_guest_mode_cpu(const struct vcpu *v)
{
	for (unsigned i = 0; i < nr_online_cpus; i++)
		if (__atomic_load_n(&pcpus[i].in_guest, __ATOMIC_SEQ_CST) == v)
			return (int)i;
	return -1;
}

void vcpu_kick_running(struct vcpu *v)
{
	int cpu = vcpu_guest_mode_cpu(v);

	if (cpu >= 0 && &pcpus[cpu] != this_pcpu())
		cpu_kick(&pcpus[cpu]);
}
