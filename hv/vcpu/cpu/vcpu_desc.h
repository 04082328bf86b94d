/*
 * vcpu_desc.h - the guest's descriptor tables as the CPU gets them
 * (vcpu_desc.c) and its LDT (vcpu_ldt.c).
 */
#ifndef VMI_HV_VCPU_DESC_H
#define VMI_HV_VCPU_DESC_H

#include <stdint.h>
#include <stdbool.h>
#include "emulate.h"
#include "guest_desc.h"
#include "trap_frame.h"

struct vcpu;

/* Descriptor tables (vcpu_desc.c). */
enum emul_result vcpu_boot_gdt(struct vcpu *v, struct emul_outcome *out);
enum emul_result vcpu_load_gdt(struct vcpu *v, uint32_t base, uint16_t limit, struct emul_outcome *out);
enum { VCPU_GDTR = 0, VCPU_IDTR = 1 };	/* as struct emul_ops's load_dtr */
enum emul_result vcpu_load_dtr(struct vcpu *v, int which, uint32_t base, uint16_t limit,
			       struct emul_outcome *out);
/* VMI SetGDT/SetIDT and GetGDT/GetIDT: a pseudo-descriptor at lin. */
enum emul_result vcpu_set_dtr_from(struct vcpu *v, int which, uint32_t lin, struct emul_outcome *out);
void vcpu_store_dtr(struct vcpu *v, int which, uint32_t lin);
/* VMI Write{GDT,LDT,IDT}Entry: descriptor lo:hi into entry idx of the table at lin. */
void vcpu_write_desc(struct vcpu *v, bool gdt, uint32_t table, uint32_t idx, uint32_t lo, uint32_t hi);
enum emul_result vcpu_load_seg(struct vcpu *v, struct trap_frame *f, int seg, uint16_t sel, struct emul_outcome *out);
enum emul_result vcpu_load_tr(struct vcpu *v, uint16_t sel, struct emul_outcome *out);

/* The LDT (vcpu_ldt.c).  lldt and VMI SetLDT: */
enum emul_result vcpu_load_ldtr(struct vcpu *v, uint16_t sel, struct emul_outcome *out);
/* Converted entry idx of the loaded LDT, 0 beyond it (or with none). */
uint64_t vcpu_ldt_entry(const struct vcpu *v, unsigned idx);
/* Entry idx read again from guest memory, as the CPU does at a segment
 * load: EMUL_OK with *conv (0 beyond the LDT), or the #PF of the read. */
enum emul_result vcpu_ldt_reload(struct vcpu *v, unsigned idx, uint64_t *conv, struct emul_outcome *out);
/* VMI WriteLDTEntry wrote entry idx of the table at linear table. */
void vcpu_ldt_entry_written(struct vcpu *v, uint32_t table, uint32_t idx);
/* Is GDT slot idx the one the loaded LDT's selector names? */
bool vcpu_ldt_slot(const struct vcpu *v, unsigned idx);
struct pcpu;
/* Entering v on c: its LDT pages in the switcher, the LDT descriptor in
 * c's GDT, lldt (after pcpu_enter has copied the GDT). */
void vcpu_ldt_enter(struct pcpu *c, struct vcpu *v);
uint32_t vcpu_seg_base(struct vcpu *v, uint16_t sel);
/* Is eip inside the limit of code selector cs in our GDT?  Must hold for
 * every resume: the switcher's iret would raise #GP at CPL 0 otherwise. */
bool vcpu_eip_in_cs(const struct vcpu *v, uint16_t cs, uint32_t eip);
uint32_t vcpu_cs_limit(const struct vcpu *v, uint16_t cs);
/* The guest rewrote entry idx of its current GDT (VMI WriteGDTEntry). */
void vcpu_gdt_entry_changed(struct vcpu *v, unsigned idx);
/* Is sel usable in the CPU's GDT (or LDT) for `use` at privilege cpl? */
bool vcpu_selector_ok(const struct vcpu *v, uint16_t sel, enum seg_use use, unsigned cpl);
/* Before entering: every selector in the frame must load in our GDT;
 * false (with why) if one does not. */
bool vcpu_check_frame(struct vcpu *v, char *why, unsigned whylen);

#endif
