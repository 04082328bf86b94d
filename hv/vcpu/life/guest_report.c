/*
 * guest_report.c - what the hypervisor says about a guest: its counters
 * (Ctrl-] s and every end), the report of a stop (the reason, the
 * instruction, the registers) or of a reboot or power-off, and the
 * console once no guest is left running.  Above the stop path: stopping
 * a guest (guest_stop.c) prints nothing itself.
 */
#include "vcpu_state.h"
#include "guest_frames.h"
#include "guest_report.h"
#include "vcpu_mmu.h"
#include "stop.h"
#include "io.h"
#include "timer.h"
#include "traps.h"

static uint64_t reflected(const struct vcpu_stats *s)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < 32; i++)
		n += s->reflected_by_vector[i];
	return n;
}

const struct shadow_audit *vcpu_report_audit(const struct vcpu *v, struct shadow_audit *a)
{
	return vcpu_mmu_audit(v, a) ? a : 0;
}

/*
 * Page-table writes still queued in the vCPUs' shared pages when the
 * guest ended: in its tables (the ROM wrote them there), never in its
 * shadows (another vCPU ended the guest before their drain, or a stop
 * came first).  Its shadows then differ from its tables by design, so
 * the end report says so instead of auditing them.
 */
static uint32_t writes_left_queued(const struct guest *g)
{
	uint32_t n = 0;

	for (unsigned i = 0; i < g->nr_vcpus; i++) {
		uint32_t c = *(volatile uint32_t *)&g->vcpus[i]->shared->pxe_count;

		n += c < VMI_SHARED_PXE_QUEUE_LEN ? c : VMI_SHARED_PXE_QUEUE_LEN;
	}
	return n;
}

/* The audit of an ended guest, unless writes were left queued (*left). */
static const struct shadow_audit *end_audit(const struct guest *g, struct shadow_audit *a, uint32_t *left)
{
	*left = writes_left_queued(g);
	return *left ? 0 : vcpu_report_audit(g->ended_by, a);
}

static void say_audit_not_run(uint32_t left)
{
	if (left)
		kprintf("vmi-hv: shadow audit: not run: %u page-table writes were still queued in the vCPUs' shared pages when the guest ended (in its tables, never in its shadows)\n",
			left);
}

/* The plain counters, a line each (vcpu_counters.h): each row's values
 * side by side in struct vcpu_stats from its first field on, one for
 * each %llu of its format. */
#define COUNTER_ROW(section, format, ...) \
	{ section, "vmi-hv: " format "\n", offsetof(struct vcpu_stats, VCPU_COUNTER_FIRST(__VA_ARGS__)) },
static const struct counter_line {
	enum vcpu_counter_section section;
	const char *format;
	size_t first;
} counter_lines[] = { VCPU_COUNTER_LINES(COUNTER_ROW) };

/* format with each %llu replaced by the next of values. */
static void print_counter_line(const char *format, const uint64_t *values)
{
	for (const char *p = format; *p; p++) {
		if (p[0] == '%' && p[1] == 'l' && p[2] == 'l' && p[3] == 'u') {
			kprintf("%llu", (unsigned long long)*values++);
			p += 3;
		} else {
			kprintf("%c", *p);
		}
	}
}

static void print_plain_counters(const struct vcpu_stats *s, enum vcpu_counter_section section)
{
	for (unsigned i = 0; i < ARRAY_SIZE(counter_lines); i++)
		if (counter_lines[i].section == section)
			print_counter_line(counter_lines[i].format,
				   (const uint64_t *)((const char *)s + counter_lines[i].first));
}

/* The hypervisor's time per exit and what the exits were. */
static void print_exit_counters(const struct vcpu_stats *s)
{
	kprintf("vmi-hv: hypervisor time per exit: %llu cycles (%llu ns) on average over %llu exits, run loop included; %llu exits quiet (the vCPU entered again at once, no device poll)\n",
		(unsigned long long)(s->hv_timed_exits ? udiv64(s->hv_cycles, s->hv_timed_exits) : 0),
		(unsigned long long)(s->hv_timed_exits ? udiv64(tsc_to_us(s->hv_cycles * 1000), s->hv_timed_exits) : 0),
		(unsigned long long)s->hv_timed_exits, (unsigned long long)s->quiet_exits);
	kprintf("vmi-hv: the longest exit: %llu us from the exit to the next entry (run loop included); %llu exits took over 1 ms\n",
		(unsigned long long)tsc_to_us(s->hv_max_cycles), (unsigned long long)s->hv_long_exits);
	kprintf("vmi-hv: exits handled while another CPU was handling one: %llu of %llu\n",
		(unsigned long long)s->parallel_exits, (unsigned long long)s->exits);
	kprintf("vmi-hv: exits by vector:");
	for (unsigned i = 0; i < ARRAY_SIZE(s->exits_by_vector); i++)
		if (s->exits_by_vector[i])
			kprintf(" %u=%llu", i, (unsigned long long)s->exits_by_vector[i]);
	kprintf("\n");
	kprintf("vmi-hv: VMI calls:");
	for (unsigned c = 0; c < ARRAY_SIZE(s->hypercalls_by_call); c++)
		if (s->hypercalls_by_call[c])
			kprintf(" %s=%llu", c < NUM_VMI_CALLS ? vmi_call_name(c) : "?",
				(unsigned long long)s->hypercalls_by_call[c]);
	kprintf("\n");
}

/* The calls that the ROM and the shared page serve without an exit, and the
 * VMI calls' other counts. */
static void print_call_counters(const struct vcpu *v)
{
	const struct vcpu_stats *s = &v->stats;

	print_plain_counters(s, COUNTERS_CALLS);
	kprintf("vmi-hv: queued page-table updates by call: SetPxE=%llu SwapPxE=%llu TestAndSetPxEBit=%llu TestAndClearPxEBit=%llu\n",
		(unsigned long long)s->pxe_by_kind[VMI_SHARED_PXE_SET],
		(unsigned long long)s->pxe_by_kind[VMI_SHARED_PXE_SWAP],
		(unsigned long long)s->pxe_by_kind[VMI_SHARED_PXE_TEST_SET],
		(unsigned long long)s->pxe_by_kind[VMI_SHARED_PXE_TEST_CLEAR]);
	kprintf("vmi-hv: page-table lifecycle calls queued without an exit: AllocatePage=%llu ReleasePage=%llu\n",
		(unsigned long long)s->pxe_calls[0], (unsigned long long)s->pxe_calls[1]);
	kprintf("vmi-hv: system calls entered directly: gate %s; %llu exits in its entry window\n",
		v->int80_direct ? "installed" : "not installed", (unsigned long long)s->int80_entry_window);
}

/* Virtual interrupts, alarms, and the vCPUs-at-once shootdowns. */
static void print_interrupt_counters(const struct vcpu *v)
{
	const struct vcpu_stats *s = &v->stats;

	kprintf("vmi-hv: virtual interrupts: %llu delivered, %llu alarms fired (at worst %llu us late, %llu us on average)\n",
		(unsigned long long)s->injected, (unsigned long long)v->valarm.count,
		(unsigned long long)tsc_to_us(v->valarm.max_late),
		(unsigned long long)valarm_mean_late_us(&v->valarm));
	kprintf("vmi-hv: alarm limits (%u us minimum): %llu SetAlarm calls raised, %llu expiries found their IRQ0 or LVTT vector still requested, %llu us of alarm work charged to this guest\n",
		VALARM_MIN_US, (unsigned long long)v->valarm.raised,
		(unsigned long long)v->valarm.skipped,
		(unsigned long long)tsc_to_us(v->valarm.charged));
	kprintf("vmi-hv: 8259 and alarm in the ROM: %llu exits found a mask or EOI the ROM made; %llu one-shot alarms set without an exit (%llu before the floor), %llu looks for one found none\n",
		(unsigned long long)s->rom_pic_changes, (unsigned long long)v->valarm.lazy_taken,
		(unsigned long long)v->valarm.lazy_early,
		(unsigned long long)v->valarm.looks_unused);
	print_plain_counters(s, COUNTERS_INTERRUPTS);
	if (v->guest->vcpus_at_once) {
		kprintf("vmi-hv: vCPUs at once: %llu shootdowns of the guest's other CPUs (%llu IPIs)\n",
			(unsigned long long)v->guest->shootdowns, (unsigned long long)v->guest->shootdown_ipis);
		kprintf("vmi-hv: vCPUs at once: waits for a CPU to leave the guest at a shootdown: %llu us in all, "
			"the longest %llu us\n", (unsigned long long)tsc_to_us(v->guest->shootdown_waited),
			(unsigned long long)tsc_to_us(v->guest->shootdown_longest));
	}
	if (v->guest->nr_vcpus > 1)
		kprintf("vmi-hv: queues of other vCPUs drained at an exit that relies on them: %llu (%llu of those vCPUs made to leave guest mode first)\n",
			(unsigned long long)v->guest->sibling_drains, (unsigned long long)v->guest->sibling_kicks);
}

void vcpu_print_counters(const struct vcpu *v, const struct shadow_audit *audit)
{
	const struct vcpu_stats *s = &v->stats;

	kprintf("vmi-hv: counters: %llu exits, %llu emulated instructions, %llu hidden (shadow) page faults, %llu exceptions reflected, %llu hypercalls, %llu COM1 bytes, %llu denied port accesses\n",
		(unsigned long long)s->exits, (unsigned long long)s->emulated,
		(unsigned long long)s->hidden_faults,
		(unsigned long long)reflected(s),
		(unsigned long long)s->hypercalls, (unsigned long long)v->guest->vuart.tx_bytes,
		(unsigned long long)v->guest->ports.denied);
	kprintf("vmi-hv: emulated by kind:");
	for (unsigned k = 0; k < EMUL_KIND_COUNT; k++)
		if (s->emulated_by_kind[k])
			kprintf(" %s=%llu", emul_kind_name(k), (unsigned long long)s->emulated_by_kind[k]);
	kprintf("\n");
	print_plain_counters(s, COUNTERS_EXITS);
	print_exit_counters(s);
	print_call_counters(v);
	vcpu_mmu_print_stats(v, audit);
	print_interrupt_counters(v);
}

static void print_guest_state(const struct vcpu *v, const struct shadow_audit *audit)
{
	const struct trap_frame *f = v->frame;

	kprintf("vmi-hv: guest registers (ring %u, %s mode, virtual IF %u):\n", f->cs & 3,
		v->paravirtual ? "paravirtual" : "emulated", v->vif);
	trap_dump_registers(f, f->esp, f->ss);
	kprintf("  (cr0-cr4 above are the hypervisor's)  guest cr0=%08x cr2=%08x cr3=%08x cr4=%08x\n",
		v->cr0, v->cr2, v->cr3, v->cr4);
	kprintf("  guest gdtr=%08x/%04x idtr=%08x/%04x tr=%04x; last trap vector %u error %x\n",
		v->gdtr.base, v->gdtr.limit, v->idtr.base, v->idtr.limit, v->tr,
		f->vector, f->error);
	if (v->last_call.made)
		kprintf("  last VMI call: %u (%s) eax=%08x edx=%08x ecx=%08x stack args %08x %08x\n",
			v->last_call.call,
			v->last_call.call < NUM_VMI_CALLS ? vmi_call_name(v->last_call.call) : "out of range",
			v->last_call.eax, v->last_call.edx, v->last_call.ecx,
			v->last_call.ebx, v->last_call.esi);
	else
		kprintf("  last VMI call: none (the guest has made no VMI call)\n");
	vcpu_print_counters(v, audit);
}

static void report_stop(const struct vcpu *v, const struct shadow_audit *audit)
{
	const struct rule_break *b = &v->brk;

	kprintf("\nvmi-hv: guest stopped: %s\n", b->why);
	if (!b->has_insn) {
		kprintf("vmi-hv: at guest eip %04x:%08x (vCPU %u)\n", b->cs, b->eip, b->vcpu);
	} else {
		kprintf("vmi-hv: instruction at guest eip %04x:%08x (vCPU %u):", b->cs, b->eip, b->vcpu);
		for (unsigned i = 0; i < b->insn_len; i++)
			kprintf(" %02x", b->insn[i]);
		if (!b->insn_len)
			kprintf(" (not fetched)");
		kprintf("\n");
	}
	print_guest_state(v, audit);
}

/*
 * The guest ended itself (reboot or power off): not a rule break, so no
 * register dump; the statistics and the exit rate.  A reboot's guest is
 * then started again (guest_restart.c), with its counters from zero.
 */
static void report_end(const struct vcpu *v, const char *what, const struct shadow_audit *audit)
{
	uint64_t ms = tsc_to_us(rdtsc() - v->start_tsc) / 1000;

	kprintf("\nvmi-hv: guest %s: %s\n", what, v->brk.why);
	vcpu_print_counters(v, audit);
	kprintf("vmi-hv: guest ran %llu ms: %llu exits, %llu exits/s\n",
		(unsigned long long)ms, (unsigned long long)v->stats.exits,
		(unsigned long long)(ms ? udiv64(v->stats.exits * 1000, (uint32_t)ms) : 0));
}

void guest_report_end(struct guest *g)
{
	struct console_hold hold;
	struct shadow_audit a;
	const struct shadow_audit *audit;
	uint32_t left;

	if (g->end_reported || g->state == GUEST_RUNNING)
		return;
	g->end_reported = true;
	audit = end_audit(g, &a, &left);
	hold = console_enter();
	if (g->state == GUEST_STOPPED)
		report_stop(g->ended_by, audit);
	else
		report_end(g->ended_by, g->state == GUEST_REBOOTED || guest_restarting(g) ? "reboot" : "powered off",
			   audit);
	say_audit_not_run(left);
	console_leave(hold);
	/* After the report, whose statistics show its shadows and audit;
	 * outside it, as frames_lock ranks before console_lock. */
	guest_frames_release(g);
}

void guests_after_stop(struct guest **guests, unsigned n)
{
	/* Said only now: while other guests run, the console is theirs. */
	kprintf("vmi-hv: the hypervisor is still running: on the console (serial or keyboard), 's' prints statistics, 'q' exits\n");
	for (;;) {
		int c = console_wait_char(console_getc);

		if (c == 's') {
			kprintf("vmi-hv: statistics (guest stopped, hypervisor up %llu ms, %llu timer interrupts):\n",
				(unsigned long long)hv_uptime_ms(),
				(unsigned long long)hv_timer_interrupts());
			for (unsigned i = 0; i < n; i++) {
				struct shadow_audit a;
				const struct shadow_audit *audit;
				uint32_t left;

				if (guests[i]->state != GUEST_STOPPED)
					continue;
				audit = end_audit(guests[i], &a, &left);
				vcpu_print_counters(guests[i]->ended_by, audit);
				say_audit_not_run(left);
			}
		} else if (c == 'q') {
			hv_stop(HV_EXIT_GUEST_STOPPED, "guest stopped; 'q' typed on the console");
		}
	}
}
