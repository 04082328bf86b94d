/*
 * tguest_rates.c - the victim tests' guests (tests/lib/victim.py): a
 * victim that counts its work, and attackers that attack in phases, so
 * that one run measures the victim beside the same guest quiet and
 * attacking, side by side on a host whose load changes.
 *
 * Time is cut into windows of RATES_WINDOW_MS of TSC time on a grid every
 * guest sees alike (window k: TSC from k * W to (k + 1) * W; REAL is the
 * TSC).  Window k belongs to phase (k / RATES_PHASE_WINDOWS) % 3:
 *   0  idle:   every vCPU of the attacker halts;
 *   1  busy:   its vCPU 0 makes hypercalls without pause (APICRead: an
 *              exit each, waking nobody), the others halt: a neighbour
 *              busy on a CPU of its own, exiting as often as an attack;
 *              under TCG another CPU's exits slow the victim's QEMU
 *              thread too (by 15-20%), whatever the hypervisor does;
 *   2  attack.
 *
 *   tguest=victim       a guest of one vCPU: counts loops in each window;
 *                       after victim_windows=N windows (default 54) it
 *                       prints "victim: window K loops N" for each, then
 *                       "victim: done", and calls Shutdown.
 *   tguest=rates:ipi    (smp_vcpus=2) the attack is IPI ping-pong: vCPU 0
 *                       sends vCPU 1 a fixed IPI and halts, vCPU 1's
 *                       handler sends one back, and it halts.
 *   tguest=rates:lvtt   (smp_vcpus=N) the attack is alarms nobody takes:
 *                       every vCPU masks its LVT timer and arms periodic
 *                       alarms of period 1 cycle wired to it (vCPU 0 on
 *                       AVAILABLE only: its REAL alarm, on IRQ0, ends
 *                       the phases), then halts; at the attack's end
 *                       vCPU 0 cancels them all.
 * An attacker prints "rates: attacking, phase windows N" once it runs,
 * and "rates: attack rounds N" at the end of each attack phase.
 */
#include <stdint.h>
#include "vmi_abi.h"
#include "tguest.h"
#include "io.h"

#define PING 0x40
#define PONG 0x41
#define TICK 0xef
#define MAX_VCPUS 8

enum { PHASE_IDLE, PHASE_BUSY, PHASE_ATTACK };

static uint64_t r_idt[256];
enum { MODE_IPI, MODE_STORM, MODE_LVTT };
static volatile int attacking, mode;
static volatile uint32_t rounds, started;

static uint64_t rdtsc64(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return lo | (uint64_t)hi << 32;
}

/* A window's length in TSC cycles (GetCycleFrequency: every guest alike). */
static uint64_t window_cycles(void)
{
	return (uint64_t)(vmi_call5(VMI_CALL_GetCycleFrequency, 0, 0, 0, 0, 0) / 1000) * RATES_WINDOW_MS;
}

/* udiv64 without libgcc: the TSC over a window fits 32 bits for years. */
static uint32_t window_of(uint64_t tsc, uint64_t w)
{
	uint32_t k = 0;

	for (int b = 31; b >= 0; b--)
		if ((w << b) >> b == w && tsc >= (w << b)) {
			tsc -= w << b;
			k |= 1u << b;
		}
	return k;
}

uint32_t rates_phase(uint64_t tsc)
{
	return window_of(tsc, window_cycles()) / RATES_PHASE_WINDOWS % 3;
}

uint64_t rates_phase_end(uint64_t tsc)
{
	uint64_t w = window_cycles();
	uint32_t k = window_of(tsc, w);

	return (uint64_t)(k - k % RATES_PHASE_WINDOWS + RATES_PHASE_WINDOWS) * w;
}

static uint32_t apic_write(uint32_t reg, uint32_t val)
{
	return vmi_call5(VMI_CALL_APICWrite, reg, val, 0, 0, 0);
}

static void send_ipi(uint32_t apic_id, uint32_t vector)
{
	apic_write(APIC_ICR_HI, apic_id << 24);
	apic_write(APIC_ICR_LO, vector);
}

static void set_alarm(uint32_t flags, uint64_t expiry, uint64_t period)
{
	vmi_call5(VMI_CALL_SetAlarm, flags, (uint32_t)expiry, (uint32_t)(expiry >> 32),
		  (uint32_t)period, (uint32_t)(period >> 32));
}

/* VMI Halt is sti; hlt in one step: an interrupt requested with IF clear
 * (an IPI answered at once from another CPU) still wakes it. */
static void halt(void)
{
	__asm__ volatile("cli");
	vmi_call5(VMI_CALL_Halt, 0, 0, 0, 0, 0);
}

/* ---- handlers: each ends with sti; iret (an iret at CPL 1 does not set IF) */
void r_irq0(void)
{
	outb(0x20, 0x20);
}

/* On an AP: the attack's ping (answered) or vCPU 0's word that the
 * phase changed (its alarms follow `attacking`). */
void r_ping(void)
{
	apic_write(APIC_EOI, 0);
	if (attacking && mode == MODE_IPI)
		send_ipi(0, PONG);
}

void r_pong(void)
{
	rounds++;
	apic_write(APIC_EOI, 0);
}

__asm__(".text\n"
	"r_irq0_entry:\n\tpushal\n\tcall r_irq0\n\tpopal\n\tsti\n\tiret\n"
	"r_ping_entry:\n\tpushal\n\tcall r_ping\n\tpopal\n\tsti\n\tiret\n"
	"r_pong_entry:\n\tpushal\n\tcall r_pong\n\tpopal\n\tsti\n\tiret\n");
extern char r_irq0_entry[], r_ping_entry[], r_pong_entry[];

static uint64_t gate(const char *fn)
{
	uint32_t off = (uint32_t)fn;

	return (uint64_t)(off & 0xffff) | (0x10ull << 16) | (0x8eull << 40) | ((uint64_t)(off >> 16) << 48);
}

static void load_idt(void)
{
	struct __attribute__((packed)) { uint16_t limit; uint32_t base; } d = { sizeof(r_idt) - 1, (uint32_t)r_idt };

	__asm__ volatile("lidt %0" : : "m"(d));
	apic_write(APIC_SVR, 0x1ff);
}

/* The masked LVT timer with periodic alarms of period 1 cycle on the
 * counters in `which`, or none. */
static void lvtt_alarms(int on, int real_too)
{
	uint32_t wire = VMI_ALARM_WIRED_LVTT | VMI_ALARM_IS_PERIODIC;

	if (!on) {
		vmi_call5(VMI_CALL_CancelAlarm, VMI_CYCLES_AVAILABLE, 0, 0, 0, 0);
		if (real_too)
			vmi_call5(VMI_CALL_CancelAlarm, VMI_CYCLES_REAL, 0, 0, 0, 0);
		return;
	}
	apic_write(APIC_LVTT, APIC_LVT_MASKED | TICK);
	set_alarm(wire | VMI_CYCLES_AVAILABLE, 1, 1);
	if (real_too)
		set_alarm(wire | VMI_CYCLES_REAL, rdtsc64() + 1, 1);
}

/* An AP: halts; at each word from vCPU 0 its alarms follow `attacking`. */
static void ap_fn(uint32_t id)
{
	int armed = 0;

	(void)id;
	load_idt();
	__atomic_fetch_add(&started, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		if (mode == MODE_LVTT && attacking != armed) {
			armed = attacking;
			lvtt_alarms(armed, 1);
		}
		halt();
	}
}

/* vCPU 0 halts until the TSC reaches end, woken by its REAL alarm on IRQ0. */
static void halt_until(uint64_t end)
{
	set_alarm(VMI_CYCLES_REAL, end, 0);
	while (rdtsc64() < end)
		halt();
}

static void attack(uint64_t end, uint32_t n)
{
	uint32_t before = rounds;

	attacking = 1;
	if (mode == MODE_STORM) {
		while (rdtsc64() < end) {
			send_ipi(1, PING);
			rounds++;
		}
	} else if (mode == MODE_LVTT) {
		for (uint32_t id = 1; id < n; id++)
			send_ipi(id, PING);
		lvtt_alarms(1, 0);
		halt_until(end);
		lvtt_alarms(0, 0);
	} else {
		set_alarm(VMI_CYCLES_REAL, end, 0);	/* a pong lost never stops it */
		while (rdtsc64() < end) {
			__asm__ volatile("cli");	/* the pong waits for the halt */
			send_ipi(1, PING);
			halt();
		}
	}
	attacking = 0;
	for (uint32_t id = 1; id < n && mode == MODE_LVTT; id++)
		send_ipi(id, PING);
	say_value("rates: ", "attack rounds", rounds - before);
}

static void attacker(uint32_t n)
{
	r_idt[0x20] = gate(r_irq0_entry);
	r_idt[PING] = gate(r_ping_entry);
	r_idt[PONG] = gate(r_pong_entry);
	load_idt();
	/* The 8259 pair at 0x20/0x28, IRQ0 alone unmasked: vCPU 0's wake-ups. */
	outb(0x20, 0x11); outb(0x21, 0x20); outb(0x21, 0x04); outb(0x21, 0x01);
	outb(0xa0, 0x11); outb(0xa1, 0x28); outb(0xa1, 0x02); outb(0xa1, 0x01);
	outb(0x21, 0xfe);
	outb(0xa1, 0xff);
	for (uint32_t id = 1; id < n; id++)
		smp_start_ap(id, ap_fn, 0x11, 0);
	while (started < n - 1)
		__asm__ volatile("pause");
	say_value("rates: ", "attacking, phase windows", RATES_PHASE_WINDOWS);
	for (;;) {
		uint64_t now = rdtsc64(), end = rates_phase_end(now);

		switch (rates_phase(now)) {
		case PHASE_IDLE:
			halt_until(end);
			break;
		case PHASE_BUSY:
			while (rdtsc64() < end)
				vmi_call5(VMI_CALL_APICRead, 0x20, 0, 0, 0, 0);
			break;
		default:
			attack(end, n);
		}
	}
}

/* The victim: loops counted per window, kept, and printed at the end:
 * the victim makes no exit of its own while it counts (under TCG its
 * port writes would wait for QEMU's lock behind the other CPU's exits,
 * which says nothing of the hypervisor). */
#define VICTIM_MAX_WINDOWS 256
static uint32_t victim_loops[VICTIM_MAX_WINDOWS];

static void victim(uint32_t windows)
{
	uint64_t w = window_cycles();
	uint32_t first = window_of(rdtsc64(), w) + 1;

	if (windows > VICTIM_MAX_WINDOWS)
		windows = VICTIM_MAX_WINDOWS;
	while (window_of(rdtsc64(), w) < first)
		;				/* the first whole window */
	for (uint32_t i = 0; i < windows; i++) {
		uint64_t end = (uint64_t)(first + i + 1) * w;
		uint32_t loops = 0;

		while (rdtsc64() < end) {
			for (volatile unsigned j = 0; j < 200; j++)
				;
			loops++;
		}
		victim_loops[i] = loops;
	}
	for (uint32_t i = 0; i < windows; i++) {
		puts("victim: window ");
		puthex(first + i);
		puts(" loops ");
		puthex(victim_loops[i]);
		puts("\n");
	}
	puts("victim: done\n");
	vmi_call5(VMI_CALL_Shutdown, 0, 0, 0, 0, 0);
}

int rates_main(const char *cmdline)
{
	if (has_word(cmdline, "tguest=victim")) {
		victim(cmdline_number(cmdline, "victim_windows=", 54));
		return 1;
	}
	if (has_word(cmdline, "tguest=rates:lvtt"))
		mode = MODE_LVTT;
	else if (has_word(cmdline, "tguest=rates:storm"))
		mode = MODE_STORM;
	else if (!has_word(cmdline, "tguest=rates:ipi"))
		return 0;
	attacker(cmdline_number(cmdline, "smp_vcpus=", 2) > MAX_VCPUS ? MAX_VCPUS
		 : cmdline_number(cmdline, "smp_vcpus=", 2));
	return 1;
}
