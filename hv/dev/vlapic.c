/*
 * vlapic.c - a vCPU's virtual local APIC (vlapic.h).  Priorities as the
 * xAPIC's: a requested vector is delivered when its class (vector / 16)
 * is above both the TPR's class and the highest in-service class; EOI
 * ends the highest in service.  IPIs go only to the vCPUs of the sender's
 * guest, by physical APIC ID or shorthand; INIT and STARTUP are refused
 * (a VMI guest starts its vCPUs with SetInitialAPState, as the seed's
 * Linux does), and so are NMI (for now), lowest-priority, SMI, logical
 * destinations and vectors below 16.  LVTT takes a vector (16-255 unless
 * masked), the mask and the timer mode; the timer's counts are refused
 * (the alarm is the timer: SetAlarm wired to LVTT, dev/valarm.c).
 */
#include "vlapic.h"

#define ICR_VECTOR	0x000000ffu
#define ICR_MODE	0x00000700u
#define ICR_LOGICAL	0x00000800u
#define ICR_SHORTHAND	0x000c0000u
#define ICR_DEST_SHIFT	24

static int highest(const uint32_t bits[8])
{
	for (int w = 7; w >= 0; w--)
		if (bits[w])
			return w * 32 + 31 - __builtin_clz(bits[w]);
	return -1;
}

void vlapic_reset(struct vlapic *l, uint32_t id)
{
	*l = (struct vlapic){ .id = id, .svr = 0xff, .dfr = 0xffffffffu, .lvtt = VLAPIC_LVT_MASKED };
}

static uint32_t ppr(const struct vlapic *l)
{
	int isr = highest(l->isr);
	uint32_t isr_class = isr < 0 ? 0 : (uint32_t)isr & 0xf0;

	return (l->tpr & 0xf0) >= isr_class ? l->tpr & 0xff : isr_class;
}

bool vlapic_read(const struct vlapic *l, uint32_t reg, uint32_t *val)
{
	if (reg >= VLAPIC_ISR && reg < VLAPIC_ISR + 0x80 && !(reg & 0xf)) {
		*val = l->isr[(reg - VLAPIC_ISR) >> 4];
		return true;
	}
	if (reg >= VLAPIC_IRR && reg < VLAPIC_IRR + 0x80 && !(reg & 0xf)) {
		*val = l->irr[(reg - VLAPIC_IRR) >> 4];
		return true;
	}
	switch (reg) {
	case VLAPIC_ID:		*val = l->id << 24; return true;
	case VLAPIC_VERSION:	*val = VLAPIC_VERSION_VALUE; return true;
	case VLAPIC_TPR:	*val = l->tpr; return true;
	case VLAPIC_PPR:	*val = ppr(l); return true;
	case VLAPIC_LDR:	*val = l->ldr; return true;
	case VLAPIC_DFR:	*val = l->dfr; return true;
	case VLAPIC_SVR:	*val = l->svr; return true;
	case VLAPIC_ESR:	*val = 0; return true;
	case VLAPIC_ICR_LO:	*val = 0; return true;	/* delivered at once: never pending */
	case VLAPIC_ICR_HI:	*val = l->icr_hi; return true;
	case VLAPIC_LVTT:	*val = l->lvtt; return true;
	}
	return false;
}

bool vlapic_decode_icr(uint32_t lo, uint32_t hi, uint32_t self, unsigned nr, struct ipi *ipi)
{
	uint32_t all = nr >= 32 ? 0xffffffffu : (1u << nr) - 1, dest = hi >> ICR_DEST_SHIFT;

	*ipi = (struct ipi){ .vector = (uint8_t)(lo & ICR_VECTOR) };
	switch ((lo & ICR_MODE) >> 8) {
	case 0: ipi->mode = IPI_FIXED; break;
	case 4: ipi->mode = IPI_NMI; return false;	/* not yet: docs/HV.md */
	case 5: ipi->mode = IPI_INIT; return false;
	case 6: ipi->mode = IPI_STARTUP; return false;
	default: ipi->mode = IPI_OTHER; return false;
	}
	if (ipi->mode == IPI_FIXED && ipi->vector < 16)
		return false;
	switch ((lo & ICR_SHORTHAND) >> 18) {
	case 0:
		if (lo & ICR_LOGICAL)
			return false;
		if (dest == 0xff) {
			ipi->targets = all;		/* physical broadcast */
			return true;
		}
		if (dest >= nr)
			return false;
		ipi->targets = 1u << dest;
		return true;
	case 1: ipi->targets = 1u << self; return true;
	case 2: ipi->targets = all; return true;
	default: ipi->targets = all & ~(1u << self); return true;
	}
}

enum vlapic_write_result vlapic_write(struct vlapic *l, uint32_t reg, uint32_t val, unsigned nr,
				      struct ipi *ipi)
{
	int v;

	switch (reg) {
	case VLAPIC_TPR:	l->tpr = val & 0xff; return VLAPIC_OK;
	case VLAPIC_EOI:
		if ((v = highest(l->isr)) >= 0)
			l->isr[v / 32] &= ~(1u << (v % 32));
		return VLAPIC_OK;
	case VLAPIC_LDR:	l->ldr = val & 0xff000000u; return VLAPIC_OK;
	case VLAPIC_DFR:	l->dfr = val | 0x0fffffffu; return VLAPIC_OK;
	case VLAPIC_SVR:	l->svr = val & 0x1ff; return VLAPIC_OK;
	case VLAPIC_ESR:	return VLAPIC_OK;
	case VLAPIC_ICR_HI:	l->icr_hi = val & 0xff000000u; return VLAPIC_OK;
	case VLAPIC_ICR_LO:
		return vlapic_decode_icr(val, l->icr_hi, l->id, nr, ipi) ? VLAPIC_SEND : VLAPIC_REFUSED;
	case VLAPIC_LVTT:
		/* No other bit (delivery status is read-only); mode 3 is
		 * reserved; an unmasked vector below 16 is illegal. */
		if (val & ~(VLAPIC_LVT_VECTOR | VLAPIC_LVT_MASKED | VLAPIC_LVTT_MODE) ||
		    (val & VLAPIC_LVTT_MODE) == VLAPIC_LVTT_MODE ||
		    (!(val & VLAPIC_LVT_MASKED) && (val & VLAPIC_LVT_VECTOR) < 16))
			return VLAPIC_REFUSED;
		l->lvtt = val;
		return VLAPIC_OK;
	}
	return VLAPIC_REFUSED;
}

void vlapic_accept(struct vlapic *l, uint8_t vector)
{
	if (vector >= 16)
		l->irr[vector / 32] |= 1u << (vector % 32);
}

int vlapic_pending(const struct vlapic *l)
{
	int v = highest(l->irr);

	if (v < 0 || !(l->svr & VLAPIC_SVR_ENABLE))
		return -1;
	if ((uint32_t)(v & 0xf0) <= (ppr(l) & 0xf0))
		return -1;
	return v;
}

void vlapic_ack(struct vlapic *l, uint8_t vector)
{
	l->irr[vector / 32] &= ~(1u << (vector % 32));
	l->isr[vector / 32] |= 1u << (vector % 32);
}

bool vlapic_timer_fire(struct vlapic *l)
{
	if (l->lvtt & VLAPIC_LVT_MASKED)
		return false;
	vlapic_accept(l, (uint8_t)(l->lvtt & VLAPIC_LVT_VECTOR));
	return true;
}

int vlapic_highest_requested(const struct vlapic *l)
{
	return highest(l->irr);
}

int vlapic_highest_in_service(const struct vlapic *l)
{
	return highest(l->isr);
}

