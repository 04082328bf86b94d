/*
 * guest_stop.c - stopping the guest; what the hypervisor says about it
 * after is guest_report.c's.
 *
 * A guest that breaks a rule, runs an instruction the emulator does not
 * support, triple-faults or makes a VMI call we do not implement is
 * stopped with one line
 *     vmi-hv: guest stopped: <reason>
 * then the instruction bytes (when there is an instruction), the guest's
 * registers, its virtual control registers and the per-kind counters.
 *
 * The stop marks the guest dead and returns to the run loop (run.c),
 * which prints all that.  The hypervisor itself stays up: "responsive"
 * means, observably, that its clock runs on and its console (COM1 and
 * the keyboard) keeps answering, once no guest is left running:
 *     s  prints the statistics again, with the uptime (which grows);
 *     q  ends the hypervisor with exit code HV_EXIT_GUEST_STOPPED
 *        (isa-debug-exit; a clean halt elsewhere).
 * It never resets or hangs with interrupts off.
 */
#include "vcpu_state.h"
#include "guest_stop.h"
#include "io.h"
#include "hvlib.h"
#include "pcpu.h"
#include "run.h"
#include "vcpu_shootdown.h"

/* Mark the guest dead (as lguest's kill_guest does) and go back to the
 * run loop, which reports it: the record says why (v->brk, filled by
 * the caller), and here where and which vCPU. */
__attribute__((noreturn))
static void kill_guest(struct vcpu *v, enum guest_state how)
{
	struct guest *g = v->guest;

	irq_disable();
	v->brk.cs = (uint16_t)v->frame->cs;
	v->brk.eip = v->frame->eip;
	v->brk.vcpu = v->index;
	g->state = how;
	g->ended_by = v;
	/* Its other vCPUs running elsewhere (vcpus_at_once) come back to
	 * their loops at their exits (vcpu_leave_dead_guest). */
	guest_kick_running(g);
	hv_longjmp(&this_pcpu()->run_jmp, 1);
}

void vcpu_leave_dead_guest(struct vcpu *v)
{
	(void)v;
	irq_disable();
	hv_longjmp(&this_pcpu()->run_jmp, 1);
}

void vcpu_stop_noted(struct vcpu *v)
{
	if (!rule_broken(&v->brk))
		rule_break_note(&v->brk, "a rule broken (no reason noted)");
	kill_guest(v, GUEST_STOPPED);
}

void vcpu_stop(struct vcpu *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rule_break_vnote(&v->brk, fmt, ap);
	va_end(ap);
	v->brk.has_insn = false;
	kill_guest(v, GUEST_STOPPED);
}

void vcpu_stop_insn(struct vcpu *v, const uint8_t *bytes, unsigned len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rule_break_vnote(&v->brk, fmt, ap);
	va_end(ap);
	rule_break_insn(&v->brk, bytes, len);
	kill_guest(v, GUEST_STOPPED);
}

void vcpu_guest_reboot(struct vcpu *v, const char *why)
{
	rule_break_note(&v->brk, "%s", why);
	kill_guest(v, GUEST_REBOOTED);
}

void vcpu_guest_shutdown(struct vcpu *v, const char *why)
{
	rule_break_note(&v->brk, "%s", why);
	kill_guest(v, GUEST_SHUT_DOWN);
}
