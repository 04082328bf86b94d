/* vcpu_switcher.h - a CPU takes up and puts down a vCPU (vcpu_switcher.c). */
#ifndef VMI_HV_VCPU_SWITCHER_H
#define VMI_HV_VCPU_SWITCHER_H

struct pcpu;
struct vcpu;

/* Before entering v on CPU c: its GDT entries into c's GDT, c's tables
 * page into v's switcher view (and the last CPU's out of it), its FPU
 * registers loaded (vcpu_switcher.c). */
void pcpu_enter(struct pcpu *c, struct vcpu *v);
/* c stops running its current vCPU (another CPU may take it next): the
 * FPU registers saved into it, nothing of it left loaded on c. */
void pcpu_leave(struct pcpu *c);

#endif
