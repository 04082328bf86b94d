/*
 * tguest_smpfuzz_run.c - the SMP fuzzer's vCPUs (tguest=smpfuzz, see
 * tguest_smpfuzz.c): SetInitialAPState of every shape, each vCPU's loop,
 * the end of a run (figures, the "calls N" marker, Shutdown or a final
 * rule break), and the epochs that end in Reboot or Shutdown.
 */
#include <stdint.h>
#include "tguest.h"
#include "tguest_smpfuzz.h"
#include "vmi_abi.h"
#include "io.h"

#define INVALID 0xffffffeau
#define CR0_PG_WP_PE_ET 0x80010011u

extern char gdt[], gdt_end[];		/* entry.S: 0x10 flat code, 0x18 flat data */
static uint32_t calls, epoch, epochs, ender, end_at, final, next_progress, forced;
static volatile uint32_t started_ok, done, ran[SFZ_MAX], final_go, ended;
static uint64_t zero_gdt[4] __attribute__((aligned(8)));

/* A GDT whose ring-1 code segment ends at 4 KiB, below all our code. */
static uint64_t short_gdt[4] __attribute__((aligned(8))) = {
	0, 0, 0x00409a0000000fffull, 0x00cf92000000ffffull,
};

void sfz_ap_entry(void);
__asm__(".text\n"
	"sfz_ap_entry:\n"
	"	pushl %eax\n"
	"	call sfz_ap_main\n"
	"1:	jmp 1b\n");

/* How a vCPU starts as it should: paging on, on its own directory. */
static APState good_state(struct sfz *c, uint32_t id)
{
	APState s = { 0 };
	s.cr0 = CR0_PG_WP_PE_ET;
	s.cr3 = sfz_mmu_dir(id);
	s.cr4 = sfz_chance(c, 20) ? 0x10 : 0;			/* PSE */
	s.eip = (uint32_t)sfz_ap_entry;
	s.eflags = 0x2 | (sfz_chance(c, 30) ? 0x200 : 0) | (sfz_chance(c, 10) ? 0x3000 : 0) | (sfz_rnd(c) & 0x8d5);
	s.eax = id;
	s.ebx = sfz_rnd(c);
	s.ecx = sfz_rnd(c);
	s.ebp = sfz_rnd(c);
	s.esp = (uint32_t)sfz_ap_stack[id % SFZ_MAX] + SFZ_STACK;
	s.cs = 0x11;
	s.ss = s.ds = s.es = 0x19;
	s.fs = s.gs = sfz_chance(c, 50) ? 0x19 : 0;
	s.gdtr_base = (uint32_t)gdt;
	s.gdtr_limit = (uint16_t)(gdt_end - gdt - 1);
	s.idtr_base = sfz_idt_base();
	s.idtr_limit = 256 * 8 - 1;
	return s;
}

/* The shapes: 0 good; 1-15 refused by the pointer, the ID or
 * ap_start_state_check; 16 on refused only when the state is loaded. */
#define FIRST_LOAD_CLASS 16
#define CLASSES 25
static uint32_t shape(struct sfz *c, APState *s, unsigned cls)
{
	switch (cls) {
	case 1: return 0x3fff0000u;			/* not mapped */
	case 2: return 0x00fffff0u;			/* runs past the identity map */
	case 3: s->efer = sfz_chance(c, 50) ? 1 : 1ull << 32; break;
	case 4: s->cr0 = 0x80010010u; break;		/* PE off */
	case 5: s->cs = (uint16_t[]){ 0x10, 0x13, 0x01 }[sfz_pick(c, 3)]; break;
	case 6: s->ss = (uint16_t[]){ 0x18, 0x1b, 0x01 }[sfz_pick(c, 3)]; break;
	case 7: s->eflags = (uint32_t[]){ 0, 0x20002, 0x4002, 0x8002, 0x80000002 }[sfz_pick(c, 5)]; break;
	case 8: s->ldtr = 0x28; break;
	case 9: s->gdtr_limit = sfz_pick(c, 15); break;
	case 10: s->cr3 = sfz_mmu_table(sfz_pick(c, SFZ_MAX)); break;	/* a page table of the identity map */
	case 11: s->cr3 = 0xfff00000u; break;
	case 12: case 13: case 14: case 15: break;	/* the ID's shapes (sfz_op_start) */
	case 16: s->cr4 = sfz_chance(c, 50) ? 0x20 : 0xffffffffu; break;	/* PAE */
	case 17: s->es = 0x1b; break;			/* RPL 3 */
	case 18: s->gdtr_base = 0xfff00000u; break;
	case 19: s->gs = 0x0f; break;			/* an LDT selector, no LDT */
	case 20: s->ss = 0x11; break;			/* code as the stack */
	case 21: s->ds = 0x79; break;			/* beyond the GDT */
	case 22: s->gdtr_base = (uint32_t)short_gdt; s->gdtr_limit = sizeof(short_gdt) - 1; break;
	case 23: s->cs = 0x19; break;			/* data as code */
	case 24: s->gdtr_base = (uint32_t)zero_gdt; s->gdtr_limit = sizeof(zero_gdt) - 1; break;
	}
	return (uint32_t)s;
}

static uint32_t try_start(struct sfz *c, uint32_t id, unsigned cls)
{
	APState s = good_state(c, id);
	uint32_t lin = shape(c, &s, cls), r;

	if (cls >= FIRST_LOAD_CLASS && id < sfz_nvcpus && !ran[id])
		sfz_load_refused[id] = 1;	/* marked first: it may start any time after */
	r = sfz_hc(c, VMI_CALL_SetInitialAPState, lin, id, 0, 0, 0);
	if (!r) {
		__atomic_fetch_add(&started_ok, 1, __ATOMIC_SEQ_CST);
		c->starts++;
	} else {
		c->refused++;
	}
	return r;
}

void sfz_op_start(struct sfz *c)
{
	unsigned cls = sfz_chance(c, 25) ? 0 : 1 + sfz_pick(c, CLASSES - 1);
	uint32_t id = sfz_pick(c, sfz_nvcpus), r;

	switch (cls) {
	case 12: id = sfz_nvcpus + sfz_pick(c, 4); break;
	case 13: id = (uint32_t[]){ 99, 0xffffffffu, 8, 0x80000001u }[sfz_pick(c, 4)]; break;
	case 14: id = c->id; break;			/* itself: started */
	case 15: id = 0; break;
	}
	r = try_start(c, id, cls);
	if (cls || id == 0 || id == c->id || id >= sfz_nvcpus)
		sfz_check(c, r == INVALID, "SetInitialAPState refusal", r, cls << 8 | id);
}

/* ---- the loop, and the ends ------------------------------------------------ */

static void end_epoch(struct sfz *c);

static void duties_of_vcpu0(struct sfz *c)
{
	if (sfz_total >= next_progress) {
		next_progress += calls / 8;
		sfz_lock();
		puts("smpfuzz: progress calls ");
		puthex(sfz_total);
		puts("\n");
		sfz_unlock();
	}
	if (!forced && sfz_total >= calls / 8) {
		forced = 1;			/* every AP fuzzes from here on */
		for (uint32_t id = 1; id < sfz_nvcpus; id++)
			if (!ran[id])
				try_start(c, id, 0);
	}
}

static void fuzz_loop(struct sfz *c)
{
	while (sfz_total < calls) {
		if (epochs && c->id == ender && sfz_total >= end_at)
			end_epoch(c);
		sfz_op(c);
		if (c->id == 0)
			duties_of_vcpu0(c);
	}
	if (epochs && c->id == ender)
		end_epoch(c);
}

static void print_figures(void)
{
	for (unsigned i = 0; i < sfz_nvcpus; i++) {
		struct sfz *c = &sfz_cpu[i];
		const uint32_t f[] = { c->ops, c->hypercalls, c->rom, c->irqs, c->ipis, c->alarms, c->halts, c->starts,
				       c->refused, c->apic, c->touches, c->faults, c->checks, c->bad };
		static const char *const n[] = { "ops", "hypercalls", "rom", "irqs", "ipis", "alarms", "halts",
						 "starts", "refused", "apicwrites", "touches", "faults", "checks", "failed" };

		puts("smpfuzz: vcpu ");
		putc('0' + i);
		puts(ran[i] || !i ? ":" : " (never started):");
		for (unsigned k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
			puts(" ");
			puts(n[k]);
			puts("=");
			puthex(f[k]);
		}
		puts("\nsmpfuzz: vcpu ");
		putc('0' + i);
		puts(" by op:");
		for (unsigned k = 0; k < SFZ_KINDS; k++) {
			puts(" ");
			puts(sfz_op_names[k]);
			puts("=");
			puthex(c->by_op[k]);
		}
		puts("\n");
	}
}

static void marker(void)
{
	uint32_t bad = 0;

	for (unsigned i = 0; i < sfz_nvcpus; i++)
		bad += sfz_cpu[i].bad;
	print_figures();
	puts("smpfuzz: failed checks ");
	puthex(bad);
	puts("\nsmpfuzz: calls ");
	puthex(sfz_total);
	puts("\n");
}

/* The epoch's end, by the vCPU the seed picked: Reboot (Shutdown in the
 * last epoch) while the others go on. */
static void end_epoch(struct sfz *c)
{
	int last = epoch + 1 >= epochs;

	if (__atomic_exchange_n(&ended, 1, __ATOMIC_SEQ_CST))
		return;
	sfz_lock();
	marker();
	puts(last ? "smpfuzz: epoch ends: Shutdown from vcpu " : "smpfuzz: epoch ends: Reboot from vcpu ");
	putc('0' + c->id);
	puts("\n");
	sfz_hc(c, last ? VMI_CALL_Shutdown : VMI_CALL_Reboot, sfz_pick(c, 3), 0, 0, 0, 0);
	sfz_unlock();			/* not reached */
}

/* ---- rule breaks for the end (smpfuzz_final=K), the hypervisor stops us -- */

static const char *const finals[] = {
	"none", "alarm-stolen", "alarm-flags", "alarm-irq0-on-ap", "alarm-period-0", "cancel-flags",
	"counter-unknown", "call-out-of-range", "hlt-if-off",
};
#define FINALS (sizeof(finals) / sizeof(finals[0]))

static void final_action(struct sfz *c)
{
	uint32_t e = (uint32_t)sfz_counter(c, VMI_CYCLES_REAL) + 1000000;

	switch (final) {
	case 1: sfz_hc(c, VMI_CALL_SetAlarm, VMI_CYCLES_STOLEN | VMI_ALARM_WIRED_LVTT, e, 0, 0, 0); break;
	case 2: sfz_hc(c, VMI_CALL_SetAlarm, 0x80000000u | VMI_ALARM_WIRED_LVTT, e, 0, 0, 0); break;
	case 3: sfz_hc(c, VMI_CALL_SetAlarm, VMI_CYCLES_REAL, e, 0, 0, 0); break;	/* IRQ0, on vCPU 1 */
	case 4: sfz_hc(c, VMI_CALL_SetAlarm, VMI_ALARM_IS_PERIODIC | VMI_ALARM_WIRED_LVTT, e, 0, 0, 0); break;
	case 5: sfz_hc(c, VMI_CALL_CancelAlarm, 0x100, 0, 0, 0, 0); break;
	case 6: sfz_hc(c, VMI_CALL_GetCycleCounter, 3, 0, 0, 0, 0); break;
	case 7: sfz_hc(c, 0x1234, 0, 0, 0, 0, 0); break;
	case 8: __asm__ volatile("cli; hlt"); break;
	}
}

/* An AP done: its alarms off, then halted for good (interrupts off). */
static void ap_finish(struct sfz *c)
{
	sfz_quiesce(c);
	__atomic_fetch_add(&done, 1, __ATOMIC_SEQ_CST);
	if (final == 3 && c->id == 1) {
		while (!final_go)
			__asm__ volatile("pause");
		final_action(c);
	}
	for (;;)
		__asm__ volatile("cli; hlt");
}

void sfz_ap_main(uint32_t id)
{
	struct sfz *c = &sfz_cpu[id % SFZ_MAX];

	ran[c->id] = 1;
	sfz_mmu_ap_init(c);
	sfz_hc(c, VMI_CALL_APICWrite, 0xf0, 0x1ff, 0, 0, 0);
	__asm__ volatile("sti");
	fuzz_loop(c);
	ap_finish(c);
}

static void vcpu0_finish(struct sfz *c)
{
	uint64_t end = sfz_counter(c, VMI_CYCLES_REAL) + (uint64_t)sfz_us_cycles * 60000000u;

	sfz_quiesce(c);
	while (done < started_ok && sfz_counter(c, VMI_CYCLES_REAL) < end)
		__asm__ volatile("pause");
	sfz_lock();
	if (done < started_ok)
		sfz_check(c, 0, "APs that never finished", started_ok - done, 0);
	if (epochs) {
		sfz_unlock();
		end_epoch(c);		/* the ender never got there */
		return;
	}
	marker();
	if (final > 0 && final < FINALS) {
		puts("smpfuzz: final: ");
		puts(finals[final]);
		puts("\n");
		sfz_unlock();
		if (final == 3) {
			final_go = 1;
			for (;;)
				__asm__ volatile("pause");
		}
		final_action(c);
		puts("smpfuzz: survived the final action\n");
	} else {
		sfz_unlock();
	}
	puts("smpfuzz: shutdown\n");
	sfz_hc(c, VMI_CALL_Shutdown, 0, 0, 0, 0, 0);
}

/* ---- set-up ---------------------------------------------------------------- */

/* The epoch, as the test types it: decimal digits and a newline. */
static uint32_t read_epoch(void)
{
	uint32_t e = 0;

	puts("smpfuzz: epoch?\n");
	for (;;) {
		uint8_t ch;

		while (!(inb(0x3f8 + 5) & 1))
			__asm__ volatile("pause");
		ch = inb(0x3f8);
		if (ch == '\r' || ch == '\n')
			return e;
		if (ch >= '0' && ch <= '9')
			e = e * 10 + ch - '0';
	}
}

/* vCPU 0's 8259: IRQ0 at vector PIC_BASE, every other line masked. */
static void pic_init(void)
{
	static const uint8_t icw[2][5] = { { 0x20, 0x11, 0x30, 4, 1 }, { 0xa0, 0x11, 0x38, 2, 1 } };

	for (unsigned p = 0; p < 2; p++) {
		outb(icw[p][0], icw[p][1]);
		for (unsigned k = 2; k < 5; k++)
			outb(icw[p][0] + 1, icw[p][k]);
	}
	outb(0x21, 0xfe);
	outb(0xa1, 0xff);
}

int smpfuzz_main(const uint8_t *boot_params, const char *cmdline)
{
	uint32_t seed = cmdline_number(cmdline, "tguest=smpfuzz:", 0);
	struct sfz *c = &sfz_cpu[0];

	if (!seed)
		return 0;
	calls = cmdline_number(cmdline, "smpfuzz_calls=", 100000);
	sfz_nvcpus = cmdline_number(cmdline, "smp_vcpus=", 2);
	sfz_nvcpus = sfz_nvcpus < 1 ? 1 : sfz_nvcpus > SFZ_MAX ? SFZ_MAX : sfz_nvcpus;
	sfz_trace = has_word(cmdline, "smpfuzz_trace");
	sfz_skip_lvtt = has_word(cmdline, "smpfuzz_skip=lvtt-after-load-refusal");
	epochs = cmdline_number(cmdline, "smpfuzz_epochs=", 0);
	final = cmdline_number(cmdline, "smpfuzz_final=", 0);
	epoch = epochs ? read_epoch() : 0;
	sfz_npages = tguest_e820_top(boot_params) >> 12;
	for (unsigned i = 0; i < SFZ_MAX; i++)
		sfz_cpu[i] = (struct sfz){ .id = i, .rng = ((seed + epoch * 7919) * 2654435761u ^ (i + 1) * 0x9e3779b9u) | 1 };
	sfz_us_cycles = vmi_call5(VMI_CALL_GetCycleFrequency, 0, 0, 0, 0, 0) / 1000000;
	ender = sfz_pick(c, sfz_nvcpus);
	end_at = calls / 4 + sfz_pick(c, calls / 2 + 1);
	next_progress = calls / 8;
	puts("smpfuzz: seed ");
	puthex(seed);
	puts(" epoch ");
	puthex(epoch);
	puts(" calls ");
	puthex(calls);
	puts(" vcpus ");
	puthex(sfz_nvcpus);
	puts(sfz_skip_lvtt ? " skip lvtt-after-load-refusal\n" : "\n");
	ran[0] = 1;
	sfz_idt_init();
	sfz_load_idt();
	pic_init();
	sfz_mmu_setup(c);
	sfz_hc(c, VMI_CALL_APICWrite, 0xf0, 0x1ff, 0, 0, 0);
	puts("smpfuzz: paging on, shadows active\n");
	/* vCPU 1: a few refused starts of any shape first, then its start. */
	for (unsigned k = sfz_pick(c, 3); k-- && sfz_nvcpus > 1;)
		try_start(c, 1, 1 + sfz_pick(c, CLASSES - 1));
	if (sfz_nvcpus > 1)
		try_start(c, 1, 0);
	__asm__ volatile("sti");
	fuzz_loop(c);
	vcpu0_finish(c);
	return 1;
}
