/*
 * guest_desc.c - the rules for a guest's segment descriptors (pure).
 */
#include "guest_desc.h"
#include "segments.h"

bool guest_desc_hv_slot(unsigned idx)
{
	return idx == HV_GDT_CS_INDEX || idx == HV_GDT_DS_INDEX ||
	       idx == HV_GDT_TSS_INDEX || idx == HV_GDT_DFTSS_INDEX;
}

uint64_t guest_desc_convert(uint64_t d)
{
	unsigned dpl = DESC_DPL(d);

	/* System descriptors (TSS, LDT, call/task/interrupt gates) would
	 * let the guest switch tasks or enter ring 0: never copied. */
	if (!(d & DESC_S) || dpl == 1 || dpl == 2)
		return 0;
	if (dpl == 0)
		d |= 1ull << 45;	/* DPL 1: the guest kernel's ring */
	return d | ((uint64_t)DESC_TYPE_ACCESSED << 40);
}

uint32_t guest_desc_base(uint64_t d)
{
	return (uint32_t)((d >> 16) & 0xffffff) | (uint32_t)((d >> 56) << 24);
}

uint32_t guest_desc_limit(uint64_t d)
{
	uint32_t raw = (uint32_t)(d & 0xffff) | (uint32_t)((d >> 32) & 0xf0000);

	return (d & (1ull << 55)) ? (raw << 12) | 0xfff : raw;
}

bool guest_desc_usable(uint64_t d, uint16_t sel, enum seg_use use, unsigned cpl)
{
	unsigned type = DESC_TYPE(d), dpl = DESC_DPL(d), rpl = sel & 3u;

	if (!(d & DESC_P) || !(d & DESC_S))
		return false;
	switch (use) {
	case SEG_USE_CODE:
		/* iret to a non-conforming code segment: DPL == RPL == new CPL. */
		return (type & DESC_TYPE_CODE) && dpl == rpl && rpl == cpl;
	case SEG_USE_STACK:
		return !(type & DESC_TYPE_CODE) && (type & DESC_TYPE_RW) &&
		       dpl == rpl && rpl == cpl;
	case SEG_USE_DATA:
		if ((type & DESC_TYPE_CODE) && !(type & DESC_TYPE_RW))
			return false;	/* execute-only code */
		if ((type & (DESC_TYPE_CODE | DESC_TYPE_CONFORMING)) ==
		    (DESC_TYPE_CODE | DESC_TYPE_CONFORMING))
			return true;	/* conforming code: no privilege check */
		return dpl >= cpl && dpl >= rpl;
	}
	return false;
}

/* RPL 0 is the guest kernel's ring 0, which runs in ring 1. */
static unsigned level(unsigned rpl)
{
	return rpl <= 1 ? 1 : rpl;
}

unsigned guest_desc_load_check(uint64_t d, uint16_t sel, enum seg_load how, unsigned cpl,
			       uint16_t *loaded)
{
	unsigned type = DESC_TYPE(d), dpl = DESC_DPL(d), rpl = level(sel & 3u);
	bool code = type & DESC_TYPE_CODE;
	bool conforming = code && (type & DESC_TYPE_CONFORMING);
	unsigned to = cpl;	/* the level the loaded CS or SS runs at */

	if (!d)
		return 13;
	switch (how) {
	case SEG_LOAD_CS_TRANSFER:
		if (!code || (conforming ? dpl > cpl : dpl != cpl || rpl > cpl))
			return 13;
		break;
	case SEG_LOAD_CS_RETURN:
		to = rpl;
		if (!code || rpl < cpl || (conforming ? dpl > rpl : dpl != rpl))
			return 13;
		break;
	case SEG_LOAD_SS:
		if (code || !(type & DESC_TYPE_RW) || rpl != cpl || dpl != cpl)
			return 13;
		if (!(d & DESC_P))
			return 12;
		*loaded = (uint16_t)((sel & ~3u) | to);
		return 0;
	case SEG_LOAD_DATA:
		if (code && !(type & DESC_TYPE_RW))
			return 13;
		if (!conforming && (dpl < cpl || dpl < rpl))
			return 13;
		if (!(d & DESC_P))
			return 11;
		*loaded = sel;
		return 0;
	}
	if (!(d & DESC_P))
		return 11;
	*loaded = (uint16_t)((sel & ~3u) | to);
	return 0;
}

unsigned guest_desc_ldt(uint64_t d, uint32_t *base, unsigned *count)
{
	uint32_t limit = guest_desc_limit(d);

	if ((d & DESC_S) || DESC_TYPE(d) != 0x2)
		return 13;
	if (!(d & DESC_P))
		return 11;
	*base = guest_desc_base(d);
	*count = limit >= GUEST_LDT_MAX * 8 - 1 ? GUEST_LDT_MAX : (limit + 1) / 8;
	return 0;
}

uint64_t guest_desc_make_ldt(uint32_t base, unsigned count)
{
	uint32_t limit = count * 8 - 1;

	return (uint64_t)(limit & 0xffff) | ((uint64_t)(base & 0xffffff) << 16) |
	       (0x2ull << 40) | DESC_P | ((uint64_t)((limit >> 16) & 0xf) << 48) |
	       ((uint64_t)(base >> 24) << 56);
}
