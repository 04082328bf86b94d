/*
 * tguest_floods.c - tguest=f:NAME: the hostile-suite cases about rates a
 * guest controls (its alarms), its console output's control sequences and
 * the x87's exceptions (tests/cases/test_hv_hostile.py, block "floods and
 * consoles"); and the two guests of the alarm-flood throughput test
 * (tests/cases/test_hv_floods.py):
 *
 *   tguest=busy            the victim: counts loops in BUSY_WINDOWS windows
 *                          of 200 ms (TSC time), prints each count, then
 *                          calls Shutdown
 *   tguest=f:partner       its neighbour: IRQ0 masked, the UART's receive
 *                          interrupt on, halts until a byte comes, then
 *                          calls Shutdown
 *   tguest=f:partner-flood the same, with a periodic alarm of period 1
 *                          cycle armed first (docs/TIME.md, "Rates a guest
 *                          controls")
 *   tguest=f:partner-ticks the same alarm with IRQ0 unmasked: it takes
 *                          every tick, halting in between
 *   tguest=ticker          a victim with a kernel's tick (a 1 ms periodic
 *                          alarm on IRQ0, taken): counts loops in windows
 *                          of 100 ms on a TSC grid every guest sees alike
 *                          (window K: TSC from K * W to (K + 1) * W),
 *                          prints "ticker: window K loops N" for
 *                          ticker_windows=N windows (default 40), then
 *                          "ticker: done" and calls Shutdown (the hostile
 *                          case drain-flood attacks on the same grid);
 *                          with ticker_quiet, the first 64 windows' lines
 *                          only at the end (no console output meanwhile)
 *
 * The cases run without h_env (tguest_hostile.c): the boot GDT (code 0x10,
 * data 0x18) and an IDT of our own with the gates they need.
 */
#include <stdint.h>
#include "tguest.h"
#include "io.h"
#include "vmi_abi.h"

#define BUSY_WINDOWS 8

static uint64_t f_idt[256];

static void say(const char *what, uint32_t v)
{
	say_value("floods: ", what, v);
}

__attribute__((noreturn)) static void shutdown(void)
{
	vmi_call5(VMI_CALL_Shutdown, 0, 0, 0, 0, 0);
	for (;;)
		;
}

static uint64_t rdtsc64(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return lo | (uint64_t)hi << 32;
}

static uint64_t real_cycles(void)
{
	uint32_t a = VMI_CYCLES_REAL, d = 0, c = 0, b = 0, s = 0;

	__asm__ volatile("int $0x82" : "+a"(a), "+d"(d), "+c"(c), "+b"(b), "+S"(s)
			 : "D"(VMI_CALL_GetCycleCounter) : "memory", "cc");
	return a | (uint64_t)d << 32;
}

/* GetCycleFrequency's low word: a TSC below 4.29 GHz fits. */
static uint32_t cycles_per_ms(void)
{
	return vmi_call5(VMI_CALL_GetCycleFrequency, 0, 0, 0, 0, 0) / 1000;
}

static void set_alarm(uint32_t flags, uint64_t expiry, uint64_t period)
{
	vmi_call5(VMI_CALL_SetAlarm, flags, (uint32_t)expiry, (uint32_t)(expiry >> 32),
	   (uint32_t)period, (uint32_t)(period >> 32));
}

static uint64_t gate(uint32_t off)
{
	return (uint64_t)(off & 0xffff) | (uint64_t)0x10 << 16 | (uint64_t)0x8e << 40 |
	       (uint64_t)(off >> 16) << 48;
}

/* VMI Init with our IDT, the 8259 pair as Linux sets it up (master at
 * 0x20, slave at 0x28) with only the inputs in `irqs` unmasked. */
static void f_env(uint8_t irqs)
{
	struct __attribute__((packed)) { uint16_t limit; uint32_t base; } d = { sizeof(f_idt) - 1, (uint32_t)f_idt };
	uint32_t r;

	__asm__ volatile("lidt %0" : : "m"(d));
	__asm__ volatile("int $0x82" : "=a"(r) : "D"(VMI_CALL_Init) : "memory");
	outb(0x20, 0x11); outb(0x21, 0x20); outb(0x21, 0x04); outb(0x21, 0x01);
	outb(0xa0, 0x11); outb(0xa1, 0x28); outb(0xa1, 0x02); outb(0xa1, 0x01);
	outb(0x21, (uint8_t)~irqs);
	outb(0xa1, 0xff);
}

/* ---- interrupt handlers: count, EOI, VMI IRET ------------------------------ */
volatile uint32_t f_ticks, f_rx;
void f_irq0(void);
void f_irq4(void);
void f_tick(void);
void f_rx_byte(void);
__asm__(".text\n"
	"f_irq0:\n"
	"	pushal\n"
	"	call f_tick\n"
	"	popal\n"
	"	pushl %edi\n"
	"	movl $39, %edi\n"	/* VMI_CALL_IRET: [esp] = edi, then the frame */
	"	int $0x82\n"
	"f_irq4:\n"
	"	pushal\n"
	"	call f_rx_byte\n"
	"	popal\n"
	"	pushl %edi\n"
	"	movl $39, %edi\n"
	"	int $0x82\n");

/* Each tick of a one-shot alarm re-arms it in the past (expiry 0). */
static volatile int f_rearm_past;

void f_tick(void)
{
	f_ticks++;
	if (f_rearm_past)
		set_alarm(VMI_CYCLES_REAL, 0, 0);
	outb(0x20, 0x20);
}

void f_rx_byte(void)
{
	while (inb(0x3f8 + 5) & 1) {
		(void)inb(0x3f8);
		f_rx++;
	}
	outb(0x20, 0x20);
}

/* Spin for ms milliseconds of REAL time with interrupts on. */
static void spin_ms(uint32_t ms)
{
	uint64_t end = real_cycles() + (uint64_t)cycles_per_ms() * ms;

	vmi_call5(VMI_CALL_EnableInterrupts, 0, 0, 0, 0, 0);
	while (real_cycles() < end)
		;
	vmi_call5(VMI_CALL_DisableInterrupts, 0, 0, 0, 0, 0);
}

/* Halt with interrupts on until an interrupt handler has counted one. */
static void halt_until(volatile uint32_t *count)
{
	while (!*count) {
		vmi_call5(VMI_CALL_EnableInterrupts, 0, 0, 0, 0, 0);
		vmi_call5(VMI_CALL_Halt, 0, 0, 0, 0, 0);
	}
	vmi_call5(VMI_CALL_DisableInterrupts, 0, 0, 0, 0, 0);
}

/* ---- the alarm cases ---------------------------------------------------------- */

/* A periodic alarm of period 1 cycle with IRQ0 masked, then 300 ms of
 * spinning: the hypervisor raises the period to its minimum and, with
 * the request latched, spends no timer interrupt on it. */
static void c_alarm_flood(void)
{
	f_env(0);
	set_alarm(VMI_CYCLES_REAL | VMI_ALARM_IS_PERIODIC, real_cycles() + 1, 1);
	spin_ms(300);
	puts("floods: 300 ms with a period-1 alarm and IRQ0 masked\n");
	shutdown();
}

/* The REAL time from arming to disarming (the test divides it by the
 * minimum period: at most one interrupt per period), and the frequency. */
static void say_armed_span(uint64_t armed, uint64_t disarmed)
{
	say("REAL cycles armed, high word", (uint32_t)((disarmed - armed) >> 32));
	say("REAL cycles armed, low word", (uint32_t)(disarmed - armed));
	say("cycles per ms", cycles_per_ms());
}

/* The same alarm taken: at most one interrupt per minimum period.  The
 * spin may last longer than 100 ms: when taking an interrupt costs the
 * guest about a period (exits under a loaded TCG), the loop that reads
 * the clock waits between them, so the bound is per REAL time. */
static void c_alarm_taken(void)
{
	uint64_t armed, disarmed;

	f_idt[0x20] = gate((uint32_t)f_irq0);
	f_env(0x01);
	armed = real_cycles();
	set_alarm(VMI_CYCLES_REAL | VMI_ALARM_IS_PERIODIC, armed + 1, 1);
	spin_ms(100);
	set_alarm(VMI_CYCLES_REAL, ~0ull, 0);	/* far away: quiet */
	disarmed = real_cycles();
	say("alarm interrupts taken:", f_ticks);
	say_armed_span(armed, disarmed);
	shutdown();
}

/* A one-shot alarm in the past, re-armed in the past by every tick. */
static void c_alarm_past(void)
{
	uint64_t armed, disarmed;

	f_idt[0x20] = gate((uint32_t)f_irq0);
	f_env(0x01);
	f_rearm_past = 1;
	armed = real_cycles();
	set_alarm(VMI_CYCLES_REAL, 0, 0);
	spin_ms(100);
	f_rearm_past = 0;
	disarmed = real_cycles();
	say("past one-shot alarm interrupts:", f_ticks);
	say_armed_span(armed, disarmed);
	shutdown();
}

/* ---- the console: forged labels and cursor moves -------------------------- */

/* Lines that would, on a terminal, rewrite our "[guest1] " label as
 * guest 2's, erase the row, climb onto the line above and forge a
 * hypervisor line, back over the label, or hide the text that follows. */
static void c_console_forge(void)
{
	f_env(0);
	puts("floods: forged\r[guest2] idle: got z\n");
	puts("floods: \x1b[2K\x1b[1G[guest2] idle: got z\n");
	puts("\x1b[1A\x1b[2Kvmi-hv: guest stopped: forged\n");
	puts("\b\b\b[guest2] idle: got z\n");
	puts("floods: \x1b[6nquery dropped, \x1b[1;31mred\x1b[0m kept, \x1b[8mhidden\n");
	puts("floods: \x1b" "c reset, \x1b]0;title\a, \f form feed\n");
	puts("floods: forged lines written\n");
	shutdown();
}

/* A row cut by the hypervisor's line: its start goes out (the guest
 * halts until an alarm 100 ms on, so a held line is written), then a
 * denied port read makes the hypervisor log a line, then the row ends.
 * The console shows the row again from its start, colours and all. */
static void c_console_cut(void)
{
	f_idt[0x20] = gate((uint32_t)f_irq0);
	f_env(0x01);
	puts("floods: a row \x1b[1mcut\x1b[0m by the hypervisor's line, ");
	set_alarm(VMI_CYCLES_REAL, real_cycles() + (uint64_t)cycles_per_ms() * 100, 0);
	halt_until(&f_ticks);
	(void)inb(0x3e8);
	puts("then ended whole\n");
	shutdown();
}

/* ---- one OUTSB of 4096 bytes to the console UART ------------------------------ */
static char f_text[4096];

/* Through the OUTSB slot of the ROM, as Linux calls it (the hypervisor
 * continues a call by executing the slot's int $0x82 again). */
static void c_outsb_uart(void)
{
	uint32_t fn = 0xc0000u + VMI_CALL_OUTSB * VROM_CALL_LEN, a = (uint32_t)f_text, d = 0x3f8, c = sizeof(f_text);

	for (unsigned i = 0; i < sizeof(f_text); i++)
		f_text[i] = i % 64 == 63 ? '\n' : (char)('a' + (i / 64) % 26);
	f_env(0);
	__asm__ volatile("call *%3" : "+a"(a), "+d"(d), "+c"(c) : "r"(fn) : "memory", "cc");
	say("OUTSB of 4096 bytes to COM1 returned", a);
	shutdown();
}

/* ---- the x87: an unmasked exception is #MF ---------------------------------- */
void f_mf(void);
void f_mf_report(uint32_t eip);
__asm__(".text\n"
	"f_mf:\n"
	"	pushl (%esp)\n"	/* the faulting eip */
	"	call f_mf_report\n");

void f_mf_report(uint32_t eip)
{
	uint16_t sw;

	__asm__ volatile("fnstsw %0" : "=m"(sw));
	say("#MF delivered: fsw", sw);
	say("#MF at eip", eip);
	shutdown();
}

/* 1/0 with the zero-divide exception unmasked, then fwait: #MF. */
static void c_x87_mf(void)
{
	static const uint16_t cw = 0x037b;	/* ZM clear */
	static const uint32_t one = 1, zero = 0;

	f_idt[16] = gate((uint32_t)f_mf);
	f_env(0);
	__asm__ volatile("fninit\n\tfldcw %0" : : "m"(cw));
	__asm__ volatile("fildl %0\n\tfidivl %1\n\tfwait" : : "m"(one), "m"(zero));
	puts("floods: no #MF after fwait\n");
	shutdown();
}

/* ---- the throughput test's guests ----------------------------------------------- */

/* flood 0: no alarm; 1: a period-1 alarm with IRQ0 masked; 2: the same
 * alarm taken, every tick, halting in between. */
static void partner(int flood)
{
	f_idt[0x20] = gate((uint32_t)f_irq0);
	f_idt[0x24] = gate((uint32_t)f_irq4);
	f_env(flood == 2 ? 0x11 : 0x10);	/* IRQ4, and IRQ0 only to take ticks */
	outb(0x3f8 + 4, 0x08);		/* MCR.OUT2: the IRQ line */
	outb(0x3f8 + 1, 0x01);		/* IER: received data */
	if (flood)
		set_alarm(VMI_CYCLES_REAL | VMI_ALARM_IS_PERIODIC, real_cycles() + 1, 1);
	puts(flood == 2 ? "floods: partner taking a period-1 alarm: halting between ticks\n" :
	     flood ? "floods: partner with a period-1 alarm, IRQ0 masked: halting\n"
		   : "floods: partner without alarms: halting\n");
	halt_until(&f_rx);
	say("partner got a byte; alarm ticks taken", f_ticks);
	shutdown();
}

static void busy(void)
{
	uint64_t window;

	f_env(0);
	window = (uint64_t)cycles_per_ms() * 200;
	for (unsigned w = 0; w < BUSY_WINDOWS; w++) {
		uint64_t start = rdtsc64();
		uint32_t loops = 0;

		while (rdtsc64() - start < window) {
			for (volatile unsigned i = 0; i < 1000; i++)
				;
			loops++;
		}
		puts("busy: window ");
		puthex(w);
		puts(": loops ");
		puthex(loops);
		puts("\n");
	}
	puts("busy: done\n");
	shutdown();
}

/* The TSC's window on a grid of w cycles: one divl (the quotient fits 32
 * bits for years). */
static uint32_t window_of(uint64_t tsc, uint32_t w)
{
	uint32_t q, r;

	__asm__("divl %4" : "=a"(q), "=d"(r) : "a"((uint32_t)tsc), "d"((uint32_t)(tsc >> 32)), "rm"(w));
	return q;
}

static void print_window(uint32_t k, uint32_t loops)
{
	puts("ticker: window ");
	puthex(k);
	puts(" loops ");
	puthex(loops);
	puts("\n");
}

#define TICKER_KEPT 64

static void ticker(const char *cmdline)
{
	uint32_t windows = cmdline_number(cmdline, "ticker_windows=", 40), per_ms, w, k;
	static uint32_t kept[TICKER_KEPT];
	const int quiet = has_word(cmdline, "ticker_quiet");

	f_idt[0x20] = gate((uint32_t)f_irq0);
	f_env(0x01);			/* IRQ0 only */
	per_ms = cycles_per_ms();
	w = per_ms * 100;
	set_alarm(VMI_CYCLES_REAL | VMI_ALARM_IS_PERIODIC, real_cycles() + per_ms, per_ms);
	vmi_call5(VMI_CALL_EnableInterrupts, 0, 0, 0, 0, 0);
	k = window_of(rdtsc64(), w) + 1;
	while (window_of(rdtsc64(), w) < k)
		;
	for (uint32_t n = 0; n < windows; n++, k++) {
		uint32_t loops = 0;

		while (window_of(rdtsc64(), w) == k) {
			for (volatile unsigned i = 0; i < 1000; i++)
				;
			loops++;
		}
		if (quiet && n < TICKER_KEPT) {
			kept[n] = loops;
			continue;
		}
		print_window(k, loops);
	}
	for (uint32_t n = 0; quiet && n < windows && n < TICKER_KEPT; n++)
		print_window(k - windows + n, kept[n]);
	say("ticker: done; ticks", f_ticks);
	shutdown();
}

/* ---- the table ---------------------------------------------------------------- */

static const struct {
	const char *name;
	void (*fn)(void);
} f_cases[] = {
	{ "alarm-flood", c_alarm_flood },
	{ "alarm-taken", c_alarm_taken },
	{ "alarm-past", c_alarm_past },
	{ "console-forge", c_console_forge },
	{ "console-cut", c_console_cut },
	{ "x87-mf", c_x87_mf },
	{ "outsb-uart", c_outsb_uart },
};

int floods_main(const char *cmdline)
{
	if (has_word(cmdline, "tguest=busy"))
		busy();
	if (has_word(cmdline, "tguest=ticker"))
		ticker(cmdline);
	if (has_word(cmdline, "tguest=f:partner"))
		partner(0);
	if (has_word(cmdline, "tguest=f:partner-flood"))
		partner(1);
	if (has_word(cmdline, "tguest=f:partner-ticks"))
		partner(2);
	for (unsigned i = 0; i < sizeof(f_cases) / sizeof(f_cases[0]); i++) {
		char word[48] = "tguest=f:";
		unsigned n = 9;

		for (const char *p = f_cases[i].name; *p && n < sizeof(word) - 1; p++)
			word[n++] = *p;
		word[n] = 0;
		if (!has_word(cmdline, word))
			continue;
		puts("floods: case ");
		puts(f_cases[i].name);
		puts("\n");
		f_cases[i].fn();
		shutdown();
	}
	return 0;
}
