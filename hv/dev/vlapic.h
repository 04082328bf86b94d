/*
 * vlapic.h - a vCPU's virtual local APIC, as the guest reaches it through
 * APICRead/APICWrite (vlapic.c, pure, tests/unit/test_vlapic.c): the
 * registers a paravirtual Linux uses (ID, version, TPR, EOI, spurious
 * vector, ICR) and the fixed interrupts other vCPUs of its guest send it.
 * Register numbers are the xAPIC's MMIO offsets.  The LVT timer entry
 * holds the vector and mask an alarm wired to it (SetAlarm with
 * VMI_ALARM_WIRED_LVTT) delivers; the timer's counts stay refused: the
 * alarm sets the timing (docs/SMP.md, "A guest of several vCPUs").
 */
#ifndef VMI_HV_VLAPIC_H
#define VMI_HV_VLAPIC_H

#include <stdint.h>
#include <stdbool.h>

#define VLAPIC_ID	0x20
#define VLAPIC_VERSION	0x30
#define VLAPIC_TPR	0x80
#define VLAPIC_PPR	0xa0
#define VLAPIC_EOI	0xb0
#define VLAPIC_LDR	0xd0
#define VLAPIC_DFR	0xe0
#define VLAPIC_SVR	0xf0
#define VLAPIC_ISR	0x100		/* 8 registers, 0x10 apart */
#define VLAPIC_IRR	0x200
#define VLAPIC_ESR	0x280
#define VLAPIC_ICR_LO	0x300
#define VLAPIC_ICR_HI	0x310
#define VLAPIC_LVTT	0x320

/* LVTT: the vector, the mask, the timer mode (kept, not used: the alarm
 * is periodic or one-shot by its own flags). */
#define VLAPIC_LVT_VECTOR	0x000000ffu
#define VLAPIC_LVT_MASKED	0x00010000u
#define VLAPIC_LVTT_MODE	0x00060000u

/* Version 0x14 (an integrated APIC), 6 LVT entries as a P6's. */
#define VLAPIC_VERSION_VALUE 0x00050014u
#define VLAPIC_SVR_ENABLE 0x100u

struct vlapic {
	uint32_t id;			/* its vCPU's index */
	uint32_t tpr, svr, ldr, dfr, icr_hi, lvtt;
	uint32_t irr[8], isr[8];	/* vector v: bit v % 32 of word v / 32 */
};

enum ipi_mode { IPI_FIXED, IPI_NMI, IPI_INIT, IPI_STARTUP, IPI_OTHER };

/* An ICR write decoded: what, to which vCPUs (bit i: APIC ID i). */
struct ipi {
	enum ipi_mode mode;
	uint8_t vector;
	uint32_t targets;
};

/* Why a write was refused, or what it asks of the caller. */
enum vlapic_write_result { VLAPIC_OK, VLAPIC_REFUSED, VLAPIC_SEND };

void vlapic_reset(struct vlapic *l, uint32_t id);
/* false: no such register (or write-only). */
bool vlapic_read(const struct vlapic *l, uint32_t reg, uint32_t *val);
/* VLAPIC_SEND: a valid ICR low write; *ipi says what to send.  nr: the
 * guest's vCPUs (APIC IDs 0..nr-1). */
enum vlapic_write_result vlapic_write(struct vlapic *l, uint32_t reg, uint32_t val, unsigned nr,
				      struct ipi *ipi);
/* Decode ICR low (with ICR high's destination) sent by APIC ID self;
 * false for a mode, vector or destination the vCPU may not send. */
bool vlapic_decode_icr(uint32_t lo, uint32_t hi, uint32_t self, unsigned nr, struct ipi *ipi);
/* A fixed interrupt for it (vector 16-255). */
void vlapic_accept(struct vlapic *l, uint8_t vector);
/* The vector to deliver now (above TPR and the in-service class), or -1. */
int vlapic_pending(const struct vlapic *l);
/* That vector moves from requested to in service. */
void vlapic_ack(struct vlapic *l, uint8_t vector);
/* An alarm wired to the LVT timer expired: its vector requested unless
 * LVTT is masked; false when masked (nothing delivered). */
bool vlapic_timer_fire(struct vlapic *l);
/* Is the LVT timer's vector requested and not yet taken?  (Another
 * expiry would change nothing then.)  Inline, as the next: the alarms
 * ask several times an exit. */
static inline bool vlapic_timer_requested(const struct vlapic *l)
{
	uint32_t v = l->lvtt & VLAPIC_LVT_VECTOR;

	return !(l->lvtt & VLAPIC_LVT_MASKED) && (l->irr[v / 32] >> (v % 32) & 1);
}
/* Would an expiry of the LVT timer change nothing: LVTT masked (nothing
 * is delivered) or its vector still requested?  Its alarms then cost no
 * timer interrupt (dev/valarm.c, latched()). */
static inline bool vlapic_timer_latched(const struct vlapic *l)
{
	return (l->lvtt & VLAPIC_LVT_MASKED) || vlapic_timer_requested(l);
}
/* The highest vector requested (IRR) and in service (ISR), -1 for none:
 * what Ctrl-] s shows of a vCPU that does not wake. */
int vlapic_highest_requested(const struct vlapic *l);
int vlapic_highest_in_service(const struct vlapic *l);

#endif
