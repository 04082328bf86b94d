/*
 * vcpu_mem.h - guest-linear memory as the vCPU sees it (vcpu_mem.c): reads
 * and writes through the guest's current paging, for the emulator and
 * for VMI calls' pointer arguments.  A leaf: the rest of vcpu/ builds on it.
 */
#ifndef VMI_HV_VCPU_MEM_H
#define VMI_HV_VCPU_MEM_H

#include <stdint.h>
#include <stdbool.h>

struct vcpu;

/* Guest-linear memory access with the guest's current paging; false with
 * *pf_error on a #PF the guest should see; v->brk noted if the guest
 * broke the rules instead. */
bool vcpu_read_lin(struct vcpu *v, uint32_t lin, void *buf, unsigned len, unsigned cpl, uint32_t *pf_error);
bool vcpu_write_lin(struct vcpu *v, uint32_t lin, const void *buf, unsigned len, unsigned cpl, uint32_t *pf_error);
/* The same at CPL 1 for a VMI call's pointer argument: a call cannot
 * return a fault, so one stops the guest ("what" names the object). */
void vcpu_call_read(struct vcpu *v, uint32_t lin, void *buf, unsigned len, const char *what);
void vcpu_call_write(struct vcpu *v, uint32_t lin, const void *buf, unsigned len, const char *what);
/* A VMI call's page-table entry at lin, translated once with the access
 * the call makes (A, and D for a write, set as the CPU would): true with
 * its guest-physical address; a fault or a rule broken stops the guest as
 * for any pointer argument.  False, touching nothing, when the four bytes
 * cross a page (the caller takes the long way, vcpu_call_read/write). */
bool vcpu_call_entry(struct vcpu *v, uint32_t lin, bool write, uint32_t *gpa);
/* The entry at gpa that vcpu_call_entry() gave, read or written. */
uint32_t vcpu_entry_read(struct vcpu *v, uint32_t gpa);
void vcpu_entry_write(struct vcpu *v, uint32_t gpa, uint32_t e);
/* Do the two linear addresses reach the same guest-physical byte? */
bool vcpu_same_guest_byte(struct vcpu *v, uint32_t lin_a, uint32_t lin_b);
/* The offset in the ROM (at GUEST_ROM_GPA) of guest-linear lin, through
 * the guest's own page tables; false if that is not the ROM's copy. */
bool vcpu_rom_offset(struct vcpu *v, uint32_t lin, uint32_t *rom_off);

#endif
