/*
 * vcpu_mem.c - guest-linear memory through the guest's current paging (or
 * 1:1 with paging off), as the CPU would reach it, setting A/D like the
 * CPU.  A fault the guest would take is returned; a rule broken marks
 * v->brk.  The VMI calls' pointer arguments, which cannot return a
 * fault, stop the guest instead.
 */
#include "vcpu_state.h"
#include "guest_stop.h"
#include "vcpu_mem.h"
#include "hvlib.h"
#include "layout.h"
#include "vrom_syms.h"

/* Copy between guest-linear memory and buf, page by page, through the
 * guest's page tables (or 1:1 with paging off), setting A/D like the CPU. */
static bool access_lin(struct vcpu *v, uint32_t lin, void *buf, unsigned len, bool write,
		       unsigned cpl, uint32_t *pf_error)
{
	uint8_t *p = buf;

	*pf_error = 0;
	while (len) {
		unsigned chunk = page_chunk(lin, len);
		struct vtlb_outcome out;
		uint32_t gpa;

		switch (vtlb_translate(&v->vtlb, &v->paging, lin, write, cpl, &gpa, &out)) {
		case VTLB_FILLED:
			break;
		case VTLB_GUEST_FAULT:
			*pf_error = out.guest_error;
			v->last_fault_lin = out.cr2;
			return false;
		case VTLB_VIOLATION:
			rule_break_note(&v->brk, "%s of linear %08x: %s", write ? "write" : "read", lin, out.brk.why);
			return false;
		}
		/* Inside guest memory (vtlb_translate promises it) and
		 * inside one page. */
		guest_mem_copy(&v->guest->mem, gpa, p, chunk, write);
		lin += chunk;
		p += chunk;
		len -= chunk;
	}
	return true;
}

bool vcpu_read_lin(struct vcpu *v, uint32_t lin, void *buf, unsigned len, unsigned cpl, uint32_t *pf_error)
{
	return access_lin(v, lin, buf, len, false, cpl, pf_error);
}

bool vcpu_write_lin(struct vcpu *v, uint32_t lin, const void *buf, unsigned len, unsigned cpl, uint32_t *pf_error)
{
	return access_lin(v, lin, (void *)buf, len, true, cpl, pf_error);
}

/* The stop of a VMI call whose pointer argument faulted or broke a rule. */
__attribute__((noreturn))
static void call_fault(struct vcpu *v, uint32_t lin, bool write, const char *what)
{
	vcpu_stop(v, "VMI call: cannot %s %s at %08x (%s)", write ? "write" : "read", what, lin,
		  rule_broken(&v->brk) ? v->brk.why : "page fault");
}

/* A VMI call's pointer argument: the call has no way to return a fault,
 * so one the guest would take here, or a rule broken, stops it. */
static void call_access(struct vcpu *v, uint32_t lin, void *buf, unsigned len, bool write,
			const char *what)
{
	uint32_t pf;

	if (!access_lin(v, lin, buf, len, write, 1, &pf))
		call_fault(v, lin, write, what);
}


void vcpu_call_read(struct vcpu *v, uint32_t lin, void *buf, unsigned len, const char *what)
{
	call_access(v, lin, buf, len, false, what);
}

void vcpu_call_write(struct vcpu *v, uint32_t lin, const void *buf, unsigned len, const char *what)
{
	call_access(v, lin, (void *)buf, len, true, what);
}

/* Linux writes its GDT through the per-CPU mapping and loads a read-only
 * fixmap alias of it: the same guest-physical bytes at two linear
 * addresses.  True if lin_a and lin_b reach the same guest-physical byte. */
bool vcpu_same_guest_byte(struct vcpu *v, uint32_t lin_a, uint32_t lin_b)
{
	struct vtlb_outcome out;
	uint32_t pa, pb;

	if (lin_a == lin_b)
		return true;
	if (vtlb_translate(&v->vtlb, &v->paging, lin_a, false, 1, &pa, &out) != VTLB_FILLED ||
	    vtlb_translate(&v->vtlb, &v->paging, lin_b, false, 1, &pb, &out) != VTLB_FILLED)
		return false;
	return pa == pb;
}

bool vcpu_rom_offset(struct vcpu *v, uint32_t lin, uint32_t *rom_off)
{
	uint32_t gpa;
	struct vtlb_outcome out;

	if (vtlb_translate(&v->vtlb, &v->paging, lin, false, 1, &gpa, &out) != VTLB_FILLED)
		return false;
	if (gpa < GUEST_ROM_GPA || gpa >= GUEST_ROM_GPA + VROM_OFF_end)
		return false;
	*rom_off = gpa - GUEST_ROM_GPA;
	return true;
}

bool vcpu_call_entry(struct vcpu *v, uint32_t lin, bool write, uint32_t *gpa)
{
	struct vtlb_outcome out;

	if (page_offset(lin) > HV_PAGE_SIZE - sizeof(uint32_t))
		return false;
	switch (vtlb_translate(&v->vtlb, &v->paging, lin, write, 1, gpa, &out)) {
	case VTLB_FILLED:
		return true;
	case VTLB_GUEST_FAULT:
		v->last_fault_lin = out.cr2;
		break;
	case VTLB_VIOLATION:
		rule_break_note(&v->brk, "%s of linear %08x: %s", write ? "write" : "read", lin, out.brk.why);
		break;
	}
	call_fault(v, lin, write, "a page-table entry");
}

uint32_t vcpu_entry_read(struct vcpu *v, uint32_t gpa)
{
	uint32_t e;

	guest_mem_copy(&v->guest->mem, gpa, &e, sizeof(e), false);
	return e;
}

void vcpu_entry_write(struct vcpu *v, uint32_t gpa, uint32_t e)
{
	guest_mem_copy(&v->guest->mem, gpa, &e, sizeof(e), true);
}
