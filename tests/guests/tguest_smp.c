/*
 * tguest_smp.c - tguest=smp: a guest of several vCPUs (vcpus=N, N given
 * again as smp_vcpus=N on the guest's command line).  vCPU 0 starts each
 * other vCPU with SetInitialAPState at ap_entry, flat ring-1 segments of
 * entry.S's GDT, a stack of its own and its APIC ID in eax; each prints
 * that ID, takes one tick of a one-shot alarm wired to its LVT timer
 * (the last AP after the refused starts of the garbage below), adds one
 * to a shared counter and halts for good.  vCPU 0
 * waits for the counter, then tries the garbage the hypervisor must
 * refuse without harm (docs/SMP.md, "A guest of several vCPUs"), prints
 * each answer, plays IPI ping-pong through the virtual local APICs
 * (APICWrite's ICR: vector 0x40 to each AP, which answers 0x41 to vCPU 0;
 * each handler ends with an EOI), tries the vLAPIC's garbage, and powers
 * off.
 *
 * tguest=smptick (vcpus=N, smp_vcpus=N): each vCPU wires its LVT timer to
 * vector 0xef (Linux's LOCAL_TIMER_VECTOR) and arms a periodic AVAILABLE
 * alarm on it, SetAlarm(VMI_ALARM_WIRED_LVTT | VMI_ALARM_IS_PERIODIC),
 * as the seed's Linux does on each CPU; each counts its own ticks in its
 * handler (an EOI each) while it halts.  vCPU 0 waits until every vCPU
 * has TICKS_WANTED, prints each count, then masks its LVTT and checks
 * that no tick comes while it runs with interrupts on, and powers off.
 *
 * Hostile modes (tests/cases/test_hv_hostile.py, "round 5: SMP guests"),
 * smp_vcpus=2:
 *   tguest=smpbad    APStates the hypervisor must refuse: an EIP beyond
 *                    its CS's limit (a GDT of its own with a 4 KiB ring-1
 *                    code segment), paging on with a CR3 outside guest
 *                    memory; then the AP starts as it should.
 *   tguest=smpstorm  an IPI to APIC ID 2 (there is none), then vCPU 0
 *                    sends IPIs to vCPU 1 without pause, for ever: the
 *                    guest beside it must keep answering.
 *
 * Options of tguest=smp: smp_ap_dies (below, ap_dies: then it is started
 * again), smp_pic (pic_from_ap: vCPU 1 writes the 8259's mask while
 * vCPU 0 runs).
 *
 * tguest=smpreboot (smp_vcpus=2): whether its two vCPUs ran at once,
 * then a reboot, again and again (smp_reboot).  tguest=gdtreboot: what
 * its boot GDT held, then a reboot, again and again (gdt_reboot).
 */
#include <stdint.h>
#include "io.h"
#include "vmi_abi.h"
#include "tguest.h"

#define MAX_APS 8
#define AP_STACK 1024
#define PING 0x40
#define PONG 0x41
#define ROUNDS 20
#define TICK 0xef
#define TICKS_WANTED 30
#define TICK_US 2000

extern char gdt[], gdt_end[];		/* entry.S: 0x10 flat code, 0x18 flat data */

static volatile uint32_t started, pongs, pings[MAX_APS], ticks[MAX_APS];
static volatile int tick_mode, tick_once;
static uint64_t smp_idt[TICK + 1];

static uint32_t apic_read(uint32_t reg)
{
	return vmi_call5(VMI_CALL_APICRead, reg, 0, 0, 0, 0);
}

static uint32_t apic_write(uint32_t reg, uint32_t val)
{
	return vmi_call5(VMI_CALL_APICWrite, reg, val, 0, 0, 0);
}

static uint32_t send_ipi(uint32_t apic_id, uint32_t icr_lo)
{
	apic_write(APIC_ICR_HI, apic_id << 24);
	return apic_write(APIC_ICR_LO, icr_lo);
}

/* VMI Halt: sti; hlt in one step, so an IPI that came meanwhile wakes it. */
static void halt(void)
{
	__asm__ volatile("cli");
	vmi_call5(VMI_CALL_Halt, 0, 0, 0, 0, 0);
}

/* smp_ap_dies: the AP this names halts with interrupts off at its next
 * ping (a privileged hlt at ring 1, as Linux's stop_this_cpu). */
static volatile uint32_t dying_ap;
/* smp_pic: the master 8259 mask vCPU 1 writes at its next ping (0:
 * none), and that it did. */
static volatile uint32_t pic_mask_req, pic_mask_done;

/* Vector 0x40 on an AP: count it, EOI, answer vCPU 0. */
void ping_handler(void)
{
	uint32_t id = apic_read(APIC_ID) >> 24;

	if (dying_ap && id == dying_ap)
		for (;;)
			__asm__ volatile("cli; hlt");
	if (pic_mask_req && id == 1) {
		outb(0x21, (uint8_t)pic_mask_req);
		pic_mask_req = 0;
		pic_mask_done = 1;
	}
	pings[id % MAX_APS]++;
	apic_write(APIC_EOI, 0);
	send_ipi(0, PONG);
}

/* Vector 0x41 on vCPU 0. */
void pong_handler(void)
{
	pongs++;
	apic_write(APIC_EOI, 0);
}

/* Vector 0xef: this vCPU's alarm through its LVT timer. */
void tick_handler(void)
{
	ticks[(apic_read(APIC_ID) >> 24) % MAX_APS]++;
	apic_write(APIC_EOI, 0);
}

__asm__(".text\n"
	"ping_entry:\n\tpushal\n\tcall ping_handler\n\tpopal\n\tiret\n"
	"pong_entry:\n\tpushal\n\tcall pong_handler\n\tpopal\n\tiret\n"
	/* sti: an iret at CPL 1 cannot set IF (the hypervisor emulates
	 * sti), and the masked check runs with interrupts on. */
	"tick_entry:\n\tpushal\n\tcall tick_handler\n\tpopal\n\tsti\n\tiret\n");
extern char ping_entry[], pong_entry[], tick_entry[];

static uint64_t available_cycles(void)
{
	uint32_t a = VMI_CYCLES_AVAILABLE, d = 0, c = 0, b = 0, s = 0;

	__asm__ volatile("int $0x82" : "+a"(a), "+d"(d), "+c"(c), "+b"(b), "+S"(s)
			 : "D"(VMI_CALL_GetCycleCounter) : "memory", "cc");
	return a | (uint64_t)d << 32;
}

static uint64_t rdtsc64(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return lo | (uint64_t)hi << 32;
}

/* GetCycleFrequency's low word: a TSC below 4.29 GHz fits. */
static uint32_t tick_cycles(void)
{
	return vmi_call5(VMI_CALL_GetCycleFrequency, 0, 0, 0, 0, 0) / 1000000 * TICK_US;
}

/* This vCPU's tick, as the seed's setup_secondary_vmi_alarm: LVTT first,
 * then the alarm wired to it. */
static void arm_tick(void)
{
	uint64_t period = tick_cycles(), expiry = available_cycles() + period;

	apic_write(APIC_LVTT, TICK);
	vmi_call5(VMI_CALL_SetAlarm, VMI_ALARM_WIRED_LVTT | VMI_ALARM_IS_PERIODIC | VMI_CYCLES_AVAILABLE,
		  (uint32_t)expiry, (uint32_t)(expiry >> 32), (uint32_t)period, (uint32_t)(period >> 32));
}

/* One tick through LVTT, as an AP's first alarm: the one that went
 * through a refused SetInitialAPState first must have a whole alarm
 * device (its LVTT wire to its local APIC) like the others. */
static void arm_tick_once(void)
{
	uint64_t expiry = available_cycles() + tick_cycles();

	apic_write(APIC_LVTT, TICK);
	vmi_call5(VMI_CALL_SetAlarm, VMI_ALARM_WIRED_LVTT | VMI_CYCLES_AVAILABLE,
		  (uint32_t)expiry, (uint32_t)(expiry >> 32), 0, 0);
}

static void set_smp_gate(unsigned v, const char *fn)
{
	uint32_t off = (uint32_t)fn;

	smp_idt[v] = (uint64_t)(off & 0xffff) | (0x10ull << 16) | (0x8eull << 40) |
		     ((uint64_t)(off >> 16) << 48);
}
/* vcpu_id of this vCPU's VMI shared page (the ROM header names where
 * the page is; the switcher maps each vCPU's own there). */
static uint32_t shared_vcpu_id(void)
{
	uint32_t page = *(const volatile uint32_t *)(0xc0000u + VMI_OFF_VROMHeader_reserved3);

	return *(const volatile uint32_t *)(page + VMI_OFF_vmi_shared_page_vcpu_id);
}

static uint8_t ap_stacks[MAX_APS][AP_STACK] __attribute__((aligned(16)));

/* What an AP started by smp_start_ap runs (tguest_smp_mmu.c), or 0. */
static void (*ap_fn)(uint32_t id);

/* Each AP begins here, its APIC ID in eax (the APState's). */
void ap_main(uint32_t id)
{
	if (ap_fn)
		ap_fn(id);
	say_value("tguest: smp: ", "AP up, APIC ID", id);
	say_value("tguest: smp: ", "APICRead ID", apic_read(APIC_ID));
	say_value("tguest: smp: ", "AP's shared page names its own vCPU", shared_vcpu_id() == id);
	apic_write(APIC_SVR, 0x1ff);
	if (tick_mode)
		arm_tick();
	if (tick_once) {
		arm_tick_once();
		while (!ticks[id % MAX_APS])
			halt();
		say_value("tguest: smp: ", "AP ticked, APIC ID", id);
	}
	__atomic_fetch_add(&started, 1, __ATOMIC_SEQ_CST);
	for (;;)
		halt();				/* woken by each ping or tick */
}

__asm__(".text\n"
	"ap_entry:\n\t"
	"pushl %eax\n\t"
	"call ap_main\n"
	"1:\tjmp 1b\n");
extern char ap_entry[];

static APState flat_state(uint32_t id)
{
	APState s = { 0 };

	s.cr0 = 0x11;			/* PE, ET: paging off, as the boot CPU's */
	s.eip = (uint32_t)ap_entry;
	s.eflags = 0x2;
	s.eax = id;
	s.esp = (uint32_t)ap_stacks[id % MAX_APS] + AP_STACK;
	s.cs = 0x11;
	s.ss = s.ds = s.es = 0x19;
	s.gdtr_base = (uint32_t)gdt;
	s.gdtr_limit = (uint16_t)(gdt_end - gdt - 1);
	s.idtr_base = (uint32_t)smp_idt;
	s.idtr_limit = sizeof(smp_idt) - 1;
	return s;
}

static uint32_t start_ap(const APState *s, uint32_t id)
{
	return vmi_call5(VMI_CALL_SetInitialAPState, (uint32_t)s, id, 0, 0, 0);
}

uint32_t smp_start_ap(uint32_t id, void (*fn)(uint32_t), uint32_t cr0, uint32_t cr3)
{
	APState s = flat_state(id);

	ap_fn = fn;
	s.cr0 = cr0;
	s.cr3 = cr3;
	return start_ap(&s, id);
}

/* One garbage call, its answer on the console for the test to read. */
static void garbage(const char *what, uint32_t lin, uint32_t id)
{
	say_value("tguest: smp: garbage ", what, vmi_call5(VMI_CALL_SetInitialAPState, lin, id, 0, 0, 0));
}

/* tguest=smptick: every vCPU's LVTT-wired alarm ticks on its own. */
static void smp_ticks(uint32_t n)
{
	uint32_t done = 0, spins = 0, before, period;
	APState s;

	tick_mode = 1;
	for (uint32_t id = 1; id < n; id++) {
		s = flat_state(id);
		say_value("tguest: smp: ", "SetInitialAPState", start_ap(&s, id));
	}
	arm_tick();
	while (done < n && ++spins < 1000000) {
		halt();
		done = 0;
		for (uint32_t id = 0; id < n; id++)
			done += ticks[id] >= TICKS_WANTED;
	}
	say_value("tguest: smp: ", "vCPUs with their ticks", done);
	for (uint32_t id = 0; id < n; id++)
		say_value("tguest: smp: ", "ticks of a vCPU at least wanted", ticks[id] >= TICKS_WANTED);
	/* Masked: its alarm goes on, and delivers nothing to it (a tick
	 * requested before comes in at the entry after the write). */
	__asm__ volatile("sti");
	apic_write(APIC_LVTT, APIC_LVT_MASKED | TICK);
	before = ticks[0];
	period = tick_cycles();
	__asm__ volatile("sti");
	for (uint64_t end = rdtsc64() + 20ull * period; rdtsc64() < end;)
		__asm__ volatile("pause");
	say_value("tguest: smp: ", "ticks while masked", ticks[0] - before);
	apic_write(APIC_LVTT, TICK);
	before = ticks[0];
	for (uint64_t end = rdtsc64() + 20ull * period; rdtsc64() < end && ticks[0] == before;)
		__asm__ volatile("pause");
	__asm__ volatile("cli");
	say_value("tguest: smp: ", "ticks again unmasked", ticks[0] != before);
	say_value("tguest: smp: garbage ", "APICWrite LVT timer vector 3", apic_write(APIC_LVTT, 3));
	say_value("tguest: smp: garbage ", "APICWrite timer count", apic_write(0x380, 1000));
	__asm__ volatile("int $0x82" : : "D"(VMI_CALL_Shutdown) : "memory");
}

/* A GDT whose ring-1 code segment (0x11) ends at 4 KiB, below every EIP
 * of ours; 0x19 flat data. */
static uint64_t short_gdt[4] __attribute__((aligned(8))) = {
	0, 0, 0x00409a0000000fffull, 0x00cf92000000ffffull,
};

static void smp_bad(void)
{
	APState s = flat_state(1);

	s.gdtr_base = (uint32_t)short_gdt;
	s.gdtr_limit = sizeof(short_gdt) - 1;
	garbage("EIP beyond the CS limit", (uint32_t)&s, 1);
	s = flat_state(1);
	s.cr0 = 0x80010011u;		/* PG, WP, PE, ET */
	s.cr3 = 0xfff00000u;
	garbage("CR3 outside guest memory", (uint32_t)&s, 1);
	s = flat_state(1);
	say_value("tguest: smp: ", "SetInitialAPState", start_ap(&s, 1));
	while (!started)
		__asm__ volatile("pause");
	say_value("tguest: smp: ", "survived, APs", started);
	__asm__ volatile("int $0x82" : : "D"(VMI_CALL_Shutdown) : "memory");
}

/* vCPU 1 takes each IPI (vector TICK: counted, EOI) in its halt loop. */
static void smp_storm(void)
{
	APState s = flat_state(1);
	uint32_t sent = 0;

	say_value("tguest: smp: garbage ", "IPI to APIC ID 2 of 2", send_ipi(2, TICK));
	say_value("tguest: smp: ", "SetInitialAPState", start_ap(&s, 1));
	while (!started)
		__asm__ volatile("pause");
	for (;;) {
		send_ipi(1, TICK);
		if (++sent == 20000)
			say_value("tguest: smp: ", "storm: IPIs sent, the AP took some", ticks[1] > 0);
		if (sent == 20000)
			puts("hostile: holding\n");
	}
}

/* AP `id` halts with interrupts off; vCPU 0 goes on: a ping to the dead
 * AP is never taken, the other APs still answer theirs. */
static void ap_dies(uint32_t id)
{
	uint32_t before = pings[id], others = 0;

	dying_ap = id;
	send_ipi(id, PING);
	for (volatile uint32_t spin = 0; spin < 20000000u; spin++)
		;
	send_ipi(id, PING);
	for (volatile uint32_t spin = 0; spin < 20000000u; spin++)
		;
	for (uint32_t ap = 1; ap < id; ap++) {
		uint32_t had = pings[ap], spins = 0;

		send_ipi(ap, PING);
		while (pings[ap] == had && ++spins < 100000)
			halt();
		others += pings[ap] > had;
	}
	say_value("tguest: smp: ", "pings the dead AP took", pings[id] - before);
	say_value("tguest: smp: ", "other APs still answering", others);
}

/* The AP ap_dies parked is started again (a CPU brought back online):
 * SetInitialAPState takes it, it comes up and answers a ping. */
static void ap_restarts(uint32_t id)
{
	APState s = flat_state(id);
	uint32_t had = started, pinged = pings[id], spins = 0;

	dying_ap = 0;
	say_value("tguest: smp: ", "parked AP started again, SetInitialAPState", start_ap(&s, id));
	while (started == had && ++spins < 2000000000u)
		__asm__ volatile("pause");
	send_ipi(id, PING);
	spins = 0;
	while (pings[id] == pinged && ++spins < 100000)
		halt();
	say_value("tguest: smp: ", "restarted AP answers a ping", pings[id] > pinged);
}

/*
 * vCPU 0 runs without an exit (its page's 8259 copy published at its
 * last entry) while vCPU 1, pinged, writes the master's mask (a trapped
 * outb); then vCPU 0 reads the mask back.  vCPU 0's stale copy must not
 * undo vCPU 1's write at vCPU 0's next exit.
 */
static void pic_from_ap(void)
{
	uint32_t spins = 0;
	uint8_t before = inb(0x21), want = before ^ 0x50;

	pic_mask_req = want;
	send_ipi(1, PING);
	while (!pic_mask_done && ++spins < 2000000000u)
		__asm__ volatile("pause");
	say_value("tguest: smp: ", "8259 mask vCPU 1 wrote read back by vCPU 0", inb(0x21) == want);
	outb(0x21, before);
}

/* tguest=smpreboot's vCPU 1: counts without end, never exits. */
static volatile uint32_t spin_count;

static void spin_ap(uint32_t id)
{
	(void)id;
	for (;;)
		spin_count++;
}

/*
 * tguest=smpreboot: vCPU 0 starts vCPU 1 spinning on a counter, then
 * counts the times the counter moved between two of its own reads less
 * than 100 us apart: only a vCPU running at that moment on another CPU
 * moves it so soon (one vCPU at a time, or both on one CPU, vCPU 0 would
 * be off its CPU for a slice in between).  It prints the count and
 * reboots, and so on after each reboot, for ever.
 */
static void smp_reboot(void)
{
	const uint32_t freq = vmi_call5(VMI_CALL_GetCycleFrequency, 0, 0, 0, 0, 0);
	const uint32_t window = freq / 10000;	/* 100 us */
	uint32_t overlaps = 0;
	uint64_t end;

	say_value("tguest: smp: ", "reboot test, SetInitialAPState", smp_start_ap(1, spin_ap, 0x11, 0));
	while (!spin_count)
		__asm__ volatile("pause");
	for (end = rdtsc64() + freq / 2; rdtsc64() < end;) {
		uint64_t t0 = rdtsc64();
		uint32_t a = spin_count, b = spin_count;

		overlaps += b != a && rdtsc64() - t0 < window;
	}
	say_value("tguest: smp: ", "reboot test, counts moved while vCPU 0 ran", overlaps);
	__asm__ volatile("int $0x82" : : "D"(VMI_CALL_Reboot) : "memory");
	for (;;)
		halt();
}

/*
 * tguest=gdtreboot: the number of slots 4-9 of the boot GDT that were
 * loadable (entry.S), then a GDT of its own with flat data segments in
 * slots 4-9, and a reboot; the same again after it, for ever.  After a
 * reboot the boot GDT must hold nothing of the guest's life before (nor
 * of whatever else the CPU ran): 0 each time.
 */
extern volatile uint32_t boot_gdt_loadable;
static uint64_t full_gdt[10] __attribute__((aligned(8))) = {
	0, 0, 0x00cf9a000000ffffull, 0x00cf92000000ffffull,
	0x00cf92000000ffffull, 0x00cf92000000ffffull, 0x00cf92000000ffffull,
	0x00cf92000000ffffull, 0x00cf92000000ffffull, 0x00cf92000000ffffull,
};

static void gdt_reboot(void)
{
	struct __attribute__((packed)) { uint16_t limit; uint32_t base; } gdtr =
		{ sizeof(full_gdt) - 1, (uint32_t)full_gdt };

	say_value("tguest: gdtreboot: ", "boot GDT slots 4-9 loadable", boot_gdt_loadable);
	__asm__ volatile("lgdt %0" : : "m"(gdtr));
	__asm__ volatile("int $0x82" : : "D"(VMI_CALL_Reboot) : "memory");
	for (;;)
		halt();
}

int smp_main(const char *cmdline)
{
	uint32_t n, spins = 0;
	APState s;

	if (!has_word(cmdline, "tguest=smp") && !has_word(cmdline, "tguest=smptick") &&
	    !has_word(cmdline, "tguest=smpbad") && !has_word(cmdline, "tguest=smpstorm") &&
	    !has_word(cmdline, "tguest=smpreboot") && !has_word(cmdline, "tguest=gdtreboot"))
		return 0;
	n = cmdline_number(cmdline, "smp_vcpus=", 2);
	{
		struct __attribute__((packed)) { uint16_t limit; uint32_t base; } idtr =
			{ sizeof(smp_idt) - 1, (uint32_t)smp_idt };

		set_smp_gate(PING, ping_entry);
		set_smp_gate(PONG, pong_entry);
		set_smp_gate(TICK, tick_entry);
		__asm__ volatile("lidt %0" : : "m"(idtr));
		apic_write(APIC_SVR, 0x1ff);
	}
	if (n > MAX_APS)
		n = MAX_APS;
	if (has_word(cmdline, "tguest=smptick")) {
		smp_ticks(n);
		return 1;
	}
	if (has_word(cmdline, "tguest=smpbad")) {
		smp_bad();
		return 1;
	}
	if (has_word(cmdline, "tguest=smpstorm")) {
		smp_storm();
		return 1;
	}
	if (has_word(cmdline, "tguest=gdtreboot")) {
		gdt_reboot();
		return 1;
	}
	if (has_word(cmdline, "tguest=smpreboot")) {
		smp_reboot();
		return 1;
	}
	/* The last AP waits through the garbage, then starts as the others;
	 * each AP takes one LVTT tick before it counts itself in. */
	uint32_t last = n - 1;

	tick_once = 1;
	say_value("tguest: smp: ", "vCPU 0's shared page names vCPU", shared_vcpu_id());

	s = flat_state(1);
	garbage("bad pointer", 0xfffff000u, last);
	garbage("APIC ID out of range", (uint32_t)&s, 99);
	s = flat_state(last);
	s.cs = 0x10;
	garbage("ring-0 CS", (uint32_t)&s, last);
	s = flat_state(last);
	s.gdtr_base = 0xfff00000u;
	garbage("bad GDT base", (uint32_t)&s, last);
	s = flat_state(last);
	s.eflags = 0x20002;
	garbage("VM flag", (uint32_t)&s, last);
	for (uint32_t id = 1; id < n; id++) {
		s = flat_state(id);
		say_value("tguest: smp: ", "SetInitialAPState", start_ap(&s, id));
	}
	while (started < n - 1 && ++spins < 2000000000u)
		__asm__ volatile("pause");
	say_value("tguest: smp: ", "APs started", started);
	s = flat_state(1);
	garbage("start twice", (uint32_t)&s, 1);

	/* Ping-pong: each round, a ping to every AP and a pong back from
	 * each.  Pongs that arrive together are one interrupt (one IRR bit,
	 * as on an APIC), so the round ends on the APs' counts, each pong
	 * waking vCPU 0 from its halt. */
	uint32_t rounds = 0;

	for (uint32_t r = 1; r <= ROUNDS && n > 1; r++) {
		for (uint32_t id = 1; id < n; id++)
			send_ipi(id, PING);
		spins = 0;
		for (uint32_t id = 1; id < n; id++)
			while (pings[id] < r && ++spins < 100000)
				halt();
		rounds += spins < 100000;
	}
	say_value("tguest: smp: ", "rounds", rounds);
	/* vCPU 0 takes a pong only with its IF set (in halt()): pongs that
	 * came while it ran with IF clear are one, or none if it found the
	 * round done without halting. */
	spins = 0;
	while (n > 1 && !pongs && ++spins < 100000)
		halt();				/* a pong waiting in its IRR comes in */
	say_value("tguest: smp: ", "pong interrupts taken", pongs > 0);
	for (uint32_t id = 1; id < n; id++)
		say_value("tguest: smp: ", "pings taken by an AP", pings[id]);
	say_value("tguest: smp: garbage ", "APICWrite LVT timer", apic_write(APIC_LVTT, 0x03));
	say_value("tguest: smp: garbage ", "APICWrite unknown register", apic_write(0x1234, 1));
	say_value("tguest: smp: garbage ", "APICRead unknown register", apic_read(0x1004));
	say_value("tguest: smp: garbage ", "IPI to APIC ID 99", send_ipi(99, PING));
	say_value("tguest: smp: garbage ", "INIT IPI", send_ipi(1, 0x500));
	say_value("tguest: smp: garbage ", "vector 3 IPI", send_ipi(1, 0x03));
	say_value("tguest: smp: ", "survived, APs", started);
	if (has_word(cmdline, "smp_pic") && n > 1)
		pic_from_ap();
	if (has_word(cmdline, "smp_ap_dies") && n > 1) {
		ap_dies(n - 1);
		ap_restarts(n - 1);
	}
	__asm__ volatile("int $0x82" : : "D"(VMI_CALL_Shutdown) : "memory");
	return 1;
}
