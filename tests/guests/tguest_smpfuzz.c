/*
 * tguest_smpfuzz.c - tguest=smpfuzz:SEED: the hypervisor's SMP surface
 * fuzzed by 2-4 vCPUs of one guest at once (smp_vcpus=N, the
 * hypervisor's vcpus=N), interleaved with the paravirtual MMU calls of
 * the shadow fuzzer (tguest_smpfuzz_mmu.c); docs/HV.md, "Tests".
 *
 * vCPU 0 turns paging on, activates VMI, announces every vCPU's tables,
 * starts vCPU 1 and fuzzes; every vCPU then makes, from its own random
 * stream (the seed and its index), until the vCPUs together have made
 * smpfuzz_calls=N VMI calls:
 *   - SetInitialAPState of good states (which start an AP: each then
 *     fuzzes too), and of states refused at each check (a bad pointer,
 *     an APIC ID out of range or already started, every field
 *     ap_start_state_check refuses, a CR3 that is no directory, and what only
 *     the load refuses: CR4, CR0, GDT/IDT bases, SS, a data selector,
 *     an EIP beyond its CS's limit), to any ID, again and again;
 *   - APICRead and APICWrite of every register offset and garbage ones,
 *     every class of value; the answers checked against the vLAPIC's
 *     rules (ID, version, read-back of TPR/SVR/LVTT, which writes are
 *     refused); IPIs: every vector, delivery mode, logical bit,
 *     shorthand and destination, the answer checked likewise;
 *   - SetAlarm (hypercall and the ROM's slot) on REAL and AVAILABLE,
 *     wired to IRQ0 (vCPU 0, its 8259 set up) or LVTT, periodic or
 *     one-shot, periods and expiries from the past and 1 cycle to
 *     2^64-1, LVTT masked or not, CancelAlarm, GetCycleCounter (REAL
 *     checked monotonic per vCPU);
 *   - Halt (woken by a one-shot LVTT alarm it arms first, or an IPI),
 *     interrupts masked and unmasked around MMU calls (GetInterruptMask
 *     checked), and every interrupt taken, counted and EOId.
 * Then each AP cancels its alarms and halts for good; vCPU 0 prints each
 * vCPU's figures and "smpfuzz: calls N" (hex: VMI calls made by all)
 * and powers off, or, with smpfuzz_final=K, breaks one rule the
 * hypervisor must stop it for (finals[]).
 *
 * smpfuzz_epochs=E: Reboot and Shutdown.  The guest reads its epoch from
 * the console first ("smpfuzz: epoch?", the test types it), so that
 * after a reboot it goes on from a known seed: in each epoch a vCPU
 * picked by the seed calls Reboot (Shutdown in the last) at a point
 * picked by the seed, while the others fuzz.
 *
 * smpfuzz_skip=lvtt-after-load-refusal: no LVTT alarm (so no Halt) on a
 * vCPU a start was refused for after its state was read, a pattern that
 * today stops the hypervisor (the alarm device is rebuilt without its
 * APIC); smpfuzz_trace prints every call (to replay a seed).
 */
#include <stdint.h>
#include "tguest.h"
#include "tguest_smpfuzz.h"
#include "vmi_abi.h"
#include "io.h"

#define WAKE_VECTOR 0xee
#define PIC_BASE 0x30		/* vCPU 0's 8259: IRQ0 is vector 0x30 */
#define INVALID 0xffffffeau	/* VMI_ERROR_INVALID */

struct sfz sfz_cpu[SFZ_MAX];
uint32_t sfz_npages, sfz_nvcpus, sfz_total, sfz_trace, sfz_skip_lvtt, sfz_us_cycles;
volatile uint32_t sfz_load_refused[SFZ_MAX];
uint8_t sfz_ap_stack[SFZ_MAX][SFZ_STACK] __attribute__((aligned(16)));
static uint64_t idt[256] __attribute__((aligned(8)));
static volatile uint32_t print_lock;

void sfz_lock(void)
{
	while (__atomic_exchange_n(&print_lock, 1, __ATOMIC_ACQUIRE))
		__asm__ volatile("pause");
}

void sfz_unlock(void) { __atomic_store_n(&print_lock, 0, __ATOMIC_RELEASE); }

/* Which vCPU runs: the APs run on sfz_ap_stack[id], vCPU 0 on entry.S's. */
struct sfz *sfz_self(void)
{
	uint32_t sp = (uint32_t)__builtin_frame_address(0), base = (uint32_t)sfz_ap_stack;

	if (sp > base && sp <= base + sizeof(sfz_ap_stack))
		return &sfz_cpu[(sp - base - 1) / SFZ_STACK];
	return &sfz_cpu[0];
}

static void trace_call(struct sfz *c, const char *how, uint32_t call, uint32_t a, uint32_t d, uint32_t cx,
		       uint32_t b, uint32_t s)
{
	sfz_lock();
	puts("smpfuzz: v");
	putc('0' + c->id);
	puts(how);
	puthex(call);
	const uint32_t w[5] = { a, d, cx, b, s };
	for (unsigned i = 0; i < 5; i++) {
		putc(' ');
		puthex(w[i]);
	}
	puts("\n");
	sfz_unlock();
}

static void count(struct sfz *c, uint32_t *kind)
{
	sfz_add(kind, 1);
	sfz_add(&sfz_total, 1);
	(void)c;
}

uint32_t sfz_hc(struct sfz *c, uint32_t call, uint32_t a, uint32_t d, uint32_t cx, uint32_t b, uint32_t s)
{
	count(c, &c->hypercalls);
	if (sfz_trace && !c->in_irq)
		trace_call(c, " hc ", call, a, d, cx, b, s);
	__asm__ volatile("int $0x82" : "+a"(a), "+d"(d), "+c"(cx), "+b"(b), "+S"(s) : "D"(call) : "memory", "cc");
	return a;
}

static uint64_t hc64(struct sfz *c, uint32_t call, uint32_t a)
{
	uint32_t d = 0, cx = 0, b = 0, s = 0;

	count(c, &c->hypercalls);
	if (sfz_trace)
		trace_call(c, " hc ", call, a, 0, 0, 0, 0);
	__asm__ volatile("int $0x82" : "+a"(a), "+d"(d), "+c"(cx), "+b"(b), "+S"(s) : "D"(call) : "memory", "cc");
	return a | (uint64_t)d << 32;
}

/* A ROM slot (at guest-physical 0xC0000, identity-mapped): three
 * register words and two on the stack, as regparm(3) callers pass them. */
uint64_t sfz_rom(struct sfz *c, uint32_t call, uint32_t a, uint32_t d, uint32_t cx, uint32_t b, uint32_t s)
{
	uint32_t fn = 0xc0000u + call * 32;

	count(c, &c->rom);
	if (sfz_trace)
		trace_call(c, " rom ", call, a, d, cx, b, s);
	__asm__ volatile("pushl %5\n\tpushl %4\n\tcall *%3\n\taddl $8, %%esp"
			 : "+a"(a), "+d"(d), "+c"(cx) : "r"(fn), "r"(b), "r"(s) : "memory", "cc");
	return a | (uint64_t)d << 32;
}

void sfz_check(struct sfz *c, int ok, const char *what, uint32_t got, uint32_t want)
{
	c->checks++;
	if (ok)
		return;
	if (c->bad++ < 8) {
		sfz_lock();
		puts("smpfuzz: CHECK FAILED: vcpu ");
		putc('0' + c->id);
		puts(": ");
		puts(what);
		puts(" got ");
		puthex(got);
		puts(" want ");
		puthex(want);
		puts("\n");
		sfz_unlock();
	}
}

/* ---- interrupts: one stub per vector 16-255, and the #PF handler -------- */

__asm__(".text\n"
	".balign 16\n"
	"sfz_stubs:\n"
	".set sfz_v, 16\n"
	".rept 240\n"
	".balign 16\n"
	"pushl $sfz_v\n"
	"jmp sfz_irq_common\n"
	".set sfz_v, sfz_v + 1\n"
	".endr\n"
	"sfz_irq_common:\n"
	"	pushal\n"
	"	pushl 32(%esp)\n"
	"	call sfz_irq\n"
	"	addl $4, %esp\n"
	"	popal\n"
	"	addl $4, %esp\n"
	"	pushl %edi\n"
	"	movl $39, %edi\n"		/* VMI_CALL_IRET: [esp] = edi, then the frame */
	"	int $0x82\n"
	"sfz_pf_entry:\n"
	"	pushal\n"
	"	call sfz_pf_handler\n"
	"	popal\n"
	"	addl $4, %esp\n"		/* the error code */
	"	addl $2, (%esp)\n"		/* movl (%ecx),%eax or movl %eax,(%ecx) */
	"	iret\n");
extern char sfz_stubs[], sfz_pf_entry[];

/* Any vector: counted, and an EOI (and the 8259's, for vCPU 0's IRQ0). */
void sfz_irq(uint32_t vector)
{
	struct sfz *c = sfz_self();

	c->in_irq++;
	sfz_add(&c->irqs, 1);
	if (c->id == 0 && vector == PIC_BASE)
		outb(0x20, 0x20);
	sfz_hc(c, VMI_CALL_APICWrite, APIC_EOI, 0, 0, 0, 0);
	c->in_irq--;
}

/* Interrupts through interrupt gates, ended by the IRET call (which sets
 * the virtual IF from the frame; an iret at ring 1 cannot): one at a
 * time, as 240 vectors requested at once and taken nested, each EOI
 * letting the next in, would overflow any stack.  #PF through a trap
 * gate: interrupts stay as they were. */
static void set_gate(unsigned v, uint32_t off, uint32_t type)
{
	idt[v] = (uint64_t)(off & 0xffff) | (0x10ull << 16) | ((uint64_t)type << 40) | ((uint64_t)(off >> 16) << 48);
}

uint32_t sfz_idt_base(void) { return (uint32_t)idt; }

void sfz_load_idt(void)
{
	struct __attribute__((packed)) { uint16_t limit; uint32_t base; } d = { sizeof(idt) - 1, (uint32_t)idt };

	__asm__ volatile("lidt %0" : : "m"(d));
}

/* ---- the vLAPIC ------------------------------------------------------------ */

static uint32_t lvtt_ok(uint32_t val)
{
	return !(val & ~0x000700ffu) && (val & 0x60000u) != 0x60000u && ((val & APIC_LVT_MASKED) || (val & 0xff) >= 16);
}

static int lvtt_allowed(struct sfz *c)
{
	return !(sfz_skip_lvtt && sfz_load_refused[c->id]);
}

static uint32_t apic_reg(struct sfz *c)
{
	switch (sfz_pick(c, 8)) {
	case 0: return sfz_rnd(c);
	case 1: return sfz_pick(c, 0x400) | (1 + sfz_pick(c, 15));	/* unaligned */
	case 2: return 0x400 + sfz_pick(c, 0x1000);
	default: return sfz_pick(c, 0x40) << 4;			/* every register */
	}
}

static void op_apic_read(struct sfz *c)
{
	uint32_t reg = sfz_chance(c, 30) ? APIC_ID : apic_reg(c), r = sfz_hc(c, VMI_CALL_APICRead, reg, 0, 0, 0, 0);

	if (reg == APIC_ID)
		sfz_check(c, r == c->id << 24, "APICRead ID", r, c->id << 24);
	else if (reg == APIC_VERSION)
		sfz_check(c, r == 0x00050014u, "APICRead version", r, 0x00050014u);
	else if (reg == APIC_ICR_LO)
		sfz_check(c, r == 0, "APICRead ICR low (never pending)", r, 0);
	else if (reg & 0xf || reg >= 0x400)
		sfz_check(c, r == INVALID, "APICRead of no register", r, reg);
}

/* What a write answers: 0, or refused (vlapic.c's rules); ~0: unknown. */
static uint32_t apic_write_answer(uint32_t reg, uint32_t val)
{
	switch (reg) {
	case APIC_TPR: case APIC_EOI: case 0xd0: case 0xe0: case APIC_SVR: case 0x280: case APIC_ICR_HI:
		return 0;
	case APIC_LVTT:
		return lvtt_ok(val) ? 0 : INVALID;
	case APIC_ICR_LO:
		return ~0u;
	}
	return INVALID;
}

static uint32_t apic_value(struct sfz *c, uint32_t reg)
{
	if (reg == APIC_LVTT && sfz_chance(c, 60))
		return (16 + sfz_pick(c, 240)) | (sfz_chance(c, 40) ? APIC_LVT_MASKED : 0) | sfz_pick(c, 3) << 17;
	if (reg == APIC_TPR && sfz_chance(c, 70))
		return sfz_pick(c, 0x100);
	if (reg == APIC_SVR && sfz_chance(c, 70))
		return sfz_chance(c, 80) ? 0x1ff : 0xff;
	return sfz_chance(c, 50) ? sfz_rnd(c) : 1u << sfz_pick(c, 32);
}

static void op_apic_write(struct sfz *c)
{
	uint32_t reg = sfz_chance(c, 40) ? (uint32_t[]){ APIC_TPR, APIC_SVR, APIC_LVTT, APIC_EOI }[sfz_pick(c, 4)]
					 : apic_reg(c);
	uint32_t val = apic_value(c, reg), want, r;

	if (reg == APIC_ICR_LO || (reg == APIC_LVTT && !lvtt_allowed(c)))
		return;
	want = apic_write_answer(reg, val);
	r = sfz_hc(c, VMI_CALL_APICWrite, reg, val, 0, 0, 0);
	c->apic++;
	sfz_check(c, r == want, "APICWrite answer", r, reg);
	if (r)
		return;
	if (reg == APIC_TPR || reg == APIC_SVR || reg == APIC_LVTT) {
		uint32_t mask = reg == APIC_TPR ? 0xff : reg == APIC_SVR ? 0x1ff : ~0u;

		r = sfz_hc(c, VMI_CALL_APICRead, reg, 0, 0, 0, 0);
		sfz_check(c, r == (val & mask), "APICRead after APICWrite", r, val & mask);
	}
}

/* An IPI of any shape; the answer as vlapic_decode_icr's rules say. */
static void op_ipi(struct sfz *c)
{
	uint32_t vector = sfz_chance(c, 80) ? 16 + sfz_pick(c, 240) : sfz_pick(c, 16);
	uint32_t mode = sfz_chance(c, 70) ? 0 : sfz_pick(c, 8), sh = sfz_chance(c, 60) ? 0 : sfz_pick(c, 4);
	uint32_t logical = sfz_chance(c, 10), dest, lo, ok, r;

	switch (sfz_pick(c, 6)) {
	case 0: dest = 0xff; break;
	case 1: dest = sfz_rnd(c) & 0xff; break;
	case 2: dest = sfz_nvcpus + sfz_pick(c, 8); break;
	default: dest = sfz_pick(c, sfz_nvcpus); break;
	}
	lo = vector | mode << 8 | logical << 11 | sh << 18 | (sfz_rnd(c) & 0xf000 & -sfz_chance(c, 20));
	ok = mode == 0 && vector >= 16 && (sh || (!logical && (dest == 0xff || dest < sfz_nvcpus)));
	sfz_hc(c, VMI_CALL_APICWrite, APIC_ICR_HI, dest << 24 | (sfz_rnd(c) & 0x00ffffffu), 0, 0, 0);
	r = sfz_hc(c, VMI_CALL_APICWrite, APIC_ICR_LO, lo, 0, 0, 0);
	sfz_check(c, r == (ok ? 0 : INVALID), "IPI answer", r, lo);
	c->ipis += ok;
}

/* ---- time ------------------------------------------------------------------ */

uint64_t sfz_counter(struct sfz *c, uint32_t which)
{
	return sfz_chance(c, 50) ? hc64(c, VMI_CALL_GetCycleCounter, which)
				 : sfz_rom(c, VMI_CALL_GetCycleCounter, which, 0, 0, 0, 0);
}

static void op_counter(struct sfz *c)
{
	uint64_t now = sfz_counter(c, VMI_CYCLES_REAL), last = (uint64_t)c->last_real_hi << 32 | c->last_real_lo;

	sfz_check(c, now >= last, "REAL cycle counter went back", (uint32_t)now, (uint32_t)last);
	c->last_real_hi = now >> 32;
	c->last_real_lo = (uint32_t)now;
	sfz_counter(c, sfz_pick(c, 3));		/* AVAILABLE, STOLEN too */
}

static uint64_t period_of(struct sfz *c)
{
	static const uint64_t big[] = { 1ull << 40, 1ull << 63, ~0ull, 1ull << 32 };

	switch (sfz_pick(c, 10)) {
	case 0: return 1 + sfz_pick(c, 3);				/* raised to the minimum */
	case 1: return 100 * sfz_us_cycles - 1;
	case 2: return big[sfz_pick(c, 4)];
	case 3: return 0;						/* a one-shot's: unused */
	default: return (uint64_t)(10000 + sfz_pick(c, 50000)) * sfz_us_cycles;
	}
}

static uint64_t expiry_of(struct sfz *c, uint64_t now)
{
	switch (sfz_pick(c, 8)) {
	case 0: return 0;
	case 1: return now - sfz_pick(c, 1000);
	case 2: return now + 1;
	case 3: return ~0ull - sfz_pick(c, 2);
	case 4: return (uint64_t)sfz_rnd(c) << 32 | sfz_rnd(c);
	default: return now + (uint64_t)(50 + sfz_pick(c, 3000)) * sfz_us_cycles;
	}
}

static void set_alarm(struct sfz *c, uint32_t flags, uint64_t expiry, uint64_t period)
{
	if (sfz_chance(c, 30))
		sfz_rom(c, VMI_CALL_SetAlarm, flags, (uint32_t)expiry, expiry >> 32, (uint32_t)period, period >> 32);
	else
		sfz_hc(c, VMI_CALL_SetAlarm, flags, (uint32_t)expiry, expiry >> 32, (uint32_t)period, period >> 32);
	c->alarms++;
}

static void op_alarm(struct sfz *c)
{
	uint32_t which = sfz_pick(c, 2), periodic = sfz_chance(c, 40), lvtt = c->id || sfz_chance(c, 60);
	uint64_t period = period_of(c), expiry = expiry_of(c, sfz_counter(c, which));

	if (lvtt && !lvtt_allowed(c))
		return;
	if (periodic && !period)
		period = 1;			/* periodic with period 0 is a rule break */
	if (lvtt && sfz_chance(c, 30))
		sfz_hc(c, VMI_CALL_APICWrite, APIC_LVTT, (16 + sfz_pick(c, 240)) | (sfz_chance(c, 30) ? APIC_LVT_MASKED : 0),
		       0, 0, 0);
	set_alarm(c, which | (periodic ? VMI_ALARM_IS_PERIODIC : 0) | (lvtt ? VMI_ALARM_WIRED_LVTT : 0), expiry,
		  period);
	/* A period below 10 ms (1 cycle is raised to 100 us) only for a few
	 * calls: kept, its interrupts (a delivery, an EOI and an IRET, some
	 * 50 us an exit under MTTCG) would leave the vCPU no time to run. */
	if (periodic && period < 10000ull * sfz_us_cycles) {
		for (unsigned n = 1 + sfz_pick(c, 3); n--;)
			sfz_mmu_op(c);
		sfz_hc(c, VMI_CALL_CancelAlarm, which, 0, 0, 0, 0);
	}
}

/* VMI Halt, with a way to wake: an LVTT one-shot a little later, its
 * vector delivered (TPR 0, the APIC on); armed with interrupts off, so
 * that one that fires before the Halt waits for it (Halt enables them
 * and sleeps in one step) rather than coming in before and leaving the
 * Halt nothing to wake it. */
static void op_halt(struct sfz *c)
{
	uint64_t now;

	if (!lvtt_allowed(c))
		return;
	__asm__ volatile("cli");
	sfz_hc(c, VMI_CALL_APICWrite, APIC_TPR, 0, 0, 0, 0);
	sfz_hc(c, VMI_CALL_APICWrite, APIC_SVR, 0x1ff, 0, 0, 0);
	sfz_hc(c, VMI_CALL_APICWrite, APIC_LVTT, WAKE_VECTOR, 0, 0, 0);
	now = sfz_counter(c, VMI_CYCLES_REAL);
	set_alarm(c, VMI_CYCLES_REAL | VMI_ALARM_WIRED_LVTT, now + (uint64_t)(150 + sfz_pick(c, 2000)) * sfz_us_cycles, 0);
	sfz_hc(c, VMI_CALL_Halt, 0, 0, 0, 0, 0);
	c->halts++;
}

/* Interrupts masked around a few MMU calls; the mask read back. */
static void op_mask(struct sfz *c)
{
	uint32_t n = 1 + sfz_pick(c, 4), f;

	sfz_rom(c, VMI_CALL_DisableInterrupts, 0, 0, 0, 0, 0);
	f = sfz_chance(c, 50) ? (uint32_t)sfz_rom(c, VMI_CALL_GetInterruptMask, 0, 0, 0, 0, 0)
			      : sfz_hc(c, VMI_CALL_GetInterruptMask, 0, 0, 0, 0, 0);
	sfz_check(c, !(f & 0x200), "GetInterruptMask after DisableInterrupts", f, 0);
	while (n--)
		sfz_mmu_op(c);
	if (sfz_chance(c, 50))
		sfz_rom(c, VMI_CALL_EnableInterrupts, 0, 0, 0, 0, 0);
	else
		sfz_hc(c, VMI_CALL_EnableInterrupts, 0, 0, 0, 0, 0);
	f = sfz_hc(c, VMI_CALL_GetInterruptMask, 0, 0, 0, 0, 0);
	sfz_check(c, f & 0x200, "GetInterruptMask after EnableInterrupts", f, 0x200);
}


void sfz_idt_init(void)
{
	for (unsigned v = 16; v < 256; v++)
		set_gate(v, (uint32_t)sfz_stubs + (v - 16) * 16, 0x8e);
	set_gate(14, (uint32_t)sfz_pf_entry, 0x8f);
}

/* One operation of any kind, by weight (of 100). */
enum { OP_MMU, OP_APIC_READ, OP_APIC_WRITE, OP_IPI, OP_ALARM, OP_CANCEL, OP_COUNTER, OP_START, OP_HALT,
       OP_MASK, OP_KINDS };
static const uint8_t op_weight[OP_KINDS] = { 50, 6, 8, 8, 10, 4, 3, 6, 3, 2 };
const char *const sfz_op_names[OP_KINDS] = { "mmu", "apicread", "apicwrite", "ipi", "alarm", "cancel",
					     "counter", "start", "halt", "mask" };

void sfz_op(struct sfz *c)
{
	unsigned w = sfz_pick(c, 100), op = 0;

	while (w >= op_weight[op])
		w -= op_weight[op++];
	c->by_op[op]++;
	c->ops++;
	switch (op) {
	case OP_MMU: sfz_mmu_op(c); break;
	case OP_APIC_READ: op_apic_read(c); break;
	case OP_APIC_WRITE: op_apic_write(c); break;
	case OP_IPI: op_ipi(c); break;
	case OP_ALARM: op_alarm(c); break;
	case OP_CANCEL:
		sfz_check(c, sfz_hc(c, VMI_CALL_CancelAlarm, sfz_pick(c, 2), 0, 0, 0, 0) <= 1, "CancelAlarm answer", 0, 1);
		break;
	case OP_COUNTER: op_counter(c); break;
	case OP_START: sfz_op_start(c); break;
	case OP_HALT: op_halt(c); break;
	default: op_mask(c); break;
	}
}

/* Before a vCPU stops fuzzing: no alarm left, LVTT masked, and what
 * was requested taken (TPR 0, the APIC on, interrupts on a while). */
void sfz_quiesce(struct sfz *c)
{
	sfz_hc(c, VMI_CALL_CancelAlarm, VMI_CYCLES_REAL, 0, 0, 0, 0);
	sfz_hc(c, VMI_CALL_CancelAlarm, VMI_CYCLES_AVAILABLE, 0, 0, 0, 0);
	sfz_hc(c, VMI_CALL_APICWrite, APIC_LVTT, APIC_LVT_MASKED | WAKE_VECTOR, 0, 0, 0);
	sfz_hc(c, VMI_CALL_APICWrite, APIC_TPR, 0, 0, 0, 0);
	sfz_hc(c, VMI_CALL_APICWrite, APIC_SVR, 0x1ff, 0, 0, 0);
	sfz_hc(c, VMI_CALL_EnableInterrupts, 0, 0, 0, 0, 0);
	for (unsigned i = 0; i < 8; i++)
		sfz_hc(c, VMI_CALL_APICRead, APIC_ID, 0, 0, 0, 0);
}

/* tguest=alarmwrap: a periodic LVTT alarm whose period takes its next
 * expiry past 2^64 cycles (period 2^64-1, as the fuzzer's largest) must
 * fire once, at its first expiry, and never again: a wrapped sum would
 * make it due at every entry.  Counted over WRAP_MS with interrupts on;
 * then the same with LVTT masked (the hypervisor's end report counts
 * the alarms fired), and Shutdown. */
#define WRAP_MS 100
int alarm_wrap_main(const char *cmdline)
{
	struct sfz *c = &sfz_cpu[0];
	uint64_t now, end;

	if (!has_word(cmdline, "tguest=alarmwrap"))
		return 0;
	*c = (struct sfz){ .rng = 1 };
	sfz_us_cycles = vmi_call5(VMI_CALL_GetCycleFrequency, 0, 0, 0, 0, 0) / 1000000;
	sfz_idt_init();
	sfz_load_idt();
	sfz_hc(c, VMI_CALL_Init, 0, 0, 0, 0, 0);
	sfz_hc(c, VMI_CALL_APICWrite, APIC_SVR, 0x1ff, 0, 0, 0);
	for (int masked = 0; masked < 2; masked++) {
		uint32_t before = c->irqs;

		sfz_hc(c, VMI_CALL_APICWrite, APIC_LVTT, WAKE_VECTOR | (masked ? APIC_LVT_MASKED : 0), 0, 0, 0);
		now = hc64(c, VMI_CALL_GetCycleCounter, VMI_CYCLES_REAL);
		__asm__ volatile("sti");
		sfz_hc(c, VMI_CALL_SetAlarm, VMI_CYCLES_REAL | VMI_ALARM_IS_PERIODIC | VMI_ALARM_WIRED_LVTT,
		       (uint32_t)(now + 1000ull * sfz_us_cycles), (now + 1000ull * sfz_us_cycles) >> 32, ~0u, ~0u);
		end = now + (uint64_t)WRAP_MS * 1000 * sfz_us_cycles;
		while (hc64(c, VMI_CALL_GetCycleCounter, VMI_CYCLES_REAL) < end)
			;
		__asm__ volatile("cli");
		say_value("alarmwrap: ", masked ? "ticks while masked" : "ticks", c->irqs - before);
		sfz_hc(c, VMI_CALL_CancelAlarm, VMI_CYCLES_REAL, 0, 0, 0, 0);
	}
	__asm__ volatile("int $0x82" : : "D"(VMI_CALL_Shutdown) : "memory");
	return 1;
}
