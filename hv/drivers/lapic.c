/*
 * lapic.c - the machine's local APIC, for its timer.
 *
 * Why: the PIT's one shot lasts at most 54.9 ms, so an idle machine would
 * still take about 18 timer interrupts a second just to wait.  The local
 * APIC timer counts 32 bits (at 1/16 of its bus clock here: over a minute
 * at QEMU's 1 GHz), so the hypervisor's timer fires only for the events
 * the run loop asks for.
 *
 * The 8259 pair stays the interrupt controller of every other device: it
 * reaches the CPU through LINT0 in ExtINT mode, which we set explicitly,
 * since software-enabling the local APIC makes its LVT entries count.
 *
 * The registers are mapped at their machine address inside the
 * hypervisor's reserved top of the address space (never in a guest's),
 * uncached.
 */
#include "lapic.h"
#include "address_space.h"
#include "layout.h"
#include "segments.h"
#include "traps.h"
#include "io.h"
#include "tsc.h"
#include "hvlib.h"
#include "pcpu.h"

#define MSR_APIC_BASE      0x1b
#define APIC_BASE_ENABLE   (1u << 11)
#define APIC_BASE_MASK     0xfffff000u
#define CPUID_EDX_APIC     (1u << 9)

#define REG_TPR        0x080
#define REG_EOI        0x0b0
#define REG_SVR        0x0f0
#define REG_LVT_TIMER  0x320
#define REG_LVT_LINT0  0x350
#define REG_LVT_LINT1  0x360
#define REG_TIMER_INIT 0x380
#define REG_TIMER_CUR  0x390
#define REG_TIMER_DIV  0x3e0

#define SVR_ENABLE     (1u << 8)
#define LVT_MASKED     (1u << 16)
#define LVT_EXTINT     (7u << 8)
#define LVT_NMI        (4u << 8)
#define TIMER_DIV_16   0x3

static volatile uint32_t *regs;

static uint32_t rd(uint32_t reg)
{
	return regs[reg / 4];
}

static void wr(uint32_t reg, uint32_t val)
{
	regs[reg / 4] = val;
}

static void spurious(void)
{
	/* No EOI for the spurious vector. */
}

/* Another CPU's "look at the run queue": the interrupt itself brought
 * this CPU out of its guest or its halt; the run loop looks. */
static void ipi(void)
{
	this_pcpu()->ipis++;
	lapic_eoi();
}

bool lapic_init(const char **why)
{
	uint32_t a, b, c, d, base;
	uint64_t msr;

	cpuid(1, 0, &a, &b, &c, &d);
	if (!(d & CPUID_EDX_APIC)) {
		*why = "the CPU has no local APIC";
		return false;
	}
	msr = read_msr(MSR_APIC_BASE);
	base = (uint32_t)msr & APIC_BASE_MASK;
	if ((msr >> 32) || base < HV_TOP_RESERVED_BASE || base >= HV_SWITCHER_BASE) {
		*why = "the local APIC is not where the hypervisor can map it";
		return false;
	}
	if (!(msr & APIC_BASE_ENABLE))
		write_msr(MSR_APIC_BASE, msr | APIC_BASE_ENABLE);
	regs = (volatile uint32_t *)address_space_map_mmio(base);
	local_vector_set_handler(HV_LOCAL_SPURIOUS_VECTOR, spurious);
	local_vector_set_handler(HV_LOCAL_IPI_VECTOR, ipi);
	wr(REG_TPR, 0);
	wr(REG_LVT_LINT0, LVT_EXTINT);		/* the 8259's INTR */
	wr(REG_LVT_LINT1, LVT_NMI);
	wr(REG_LVT_TIMER, LVT_MASKED | HV_LOCAL_TIMER_VECTOR);
	wr(REG_TIMER_DIV, TIMER_DIV_16);
	wr(REG_SVR, SVR_ENABLE | HV_LOCAL_SPURIOUS_VECTOR);
	return true;
}

bool lapic_timer_calibrate(uint64_t *hz, const char **why)
{
	const uint32_t window_us = 5000;	/* 300,000 counts at 62.5 MHz: plenty for arming shots */
	uint64_t c0, c1, window = udiv64(tsc_hz() * window_us, 1000000);
	uint32_t left;

	wr(REG_LVT_TIMER, LVT_MASKED | HV_LOCAL_TIMER_VECTOR);
	wr(REG_TIMER_INIT, UINT32_MAX);
	c0 = rdtsc();
	while ((c1 = rdtsc()) - c0 < window)
		cpu_relax();
	left = rd(REG_TIMER_CUR);
	wr(REG_TIMER_INIT, 0);
	if (left == 0 || left == UINT32_MAX) {
		*why = "the local APIC timer does not count";
		return false;
	}
	*hz = udiv64((uint64_t)(UINT32_MAX - left) * 1000000, (uint32_t)tsc_to_us(c1 - c0));
	if (*hz < 1000000) {
		*why = "the local APIC timer counts slower than 1 MHz";
		return false;
	}
	wr(REG_LVT_TIMER, HV_LOCAL_TIMER_VECTOR);	/* one-shot, unmasked */
	return true;
}

void lapic_timer_oneshot(uint32_t count)
{
	wr(REG_TIMER_INIT, count);
}

void lapic_eoi(void)
{
	wr(REG_EOI, 0);
}

#define REG_ID         0x020
#define REG_ICR_LOW    0x300
#define REG_ICR_HIGH   0x310
#define ICR_INIT       (5u << 8)
#define ICR_STARTUP    (6u << 8)
#define ICR_FIXED      (0u << 8)
#define ICR_PENDING    (1u << 12)
#define ICR_ASSERT     (1u << 14)
#define ICR_LEVEL      (1u << 15)

uint8_t lapic_id(void)
{
	return (uint8_t)(rd(REG_ID) >> 24);
}

/* The previous IPI has left the local APIC (delivery status idle); on
 * QEMU at once, on hardware within microseconds.  false after 10 ms. */
static bool icr_idle(void)
{
	uint64_t end = rdtsc() + udiv64(tsc_hz(), 100);

	while (rd(REG_ICR_LOW) & ICR_PENDING)
		if (rdtsc() > end)
			return false;
	return true;
}

static bool send_ipi(uint8_t apic_id, uint32_t low)
{
	if (!icr_idle())
		return false;
	wr(REG_ICR_HIGH, (uint32_t)apic_id << 24);
	wr(REG_ICR_LOW, low);
	return icr_idle();
}

bool lapic_send_init(uint8_t apic_id)
{
	return send_ipi(apic_id, ICR_INIT | ICR_ASSERT | ICR_LEVEL);
}

bool lapic_send_startup(uint8_t apic_id, uint32_t page)
{
	return send_ipi(apic_id, ICR_STARTUP | (page >> 12));
}

bool lapic_send_fixed(uint8_t apic_id, uint8_t vector)
{
	return send_ipi(apic_id, ICR_FIXED | ICR_ASSERT | vector);
}

void lapic_init_secondary(void)
{
	/* Enabled first: while software-disabled, LVT writes cannot unmask. */
	wr(REG_SVR, SVR_ENABLE | HV_LOCAL_SPURIOUS_VECTOR);
	wr(REG_TPR, 0);
	wr(REG_LVT_LINT0, LVT_MASKED);		/* the 8259 talks to the boot CPU only */
	wr(REG_LVT_LINT1, LVT_NMI);
	wr(REG_LVT_TIMER, HV_LOCAL_TIMER_VECTOR);	/* one-shot, unmasked, stopped */
	wr(REG_TIMER_DIV, TIMER_DIV_16);
	wr(REG_TIMER_INIT, 0);
}
