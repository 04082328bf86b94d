/* pic.h - the two 8259A interrupt controllers. */
#ifndef VMI_HV_PIC_H
#define VMI_HV_PIC_H

#include <stdbool.h>

void pic_init(void);
void pic_mask(unsigned irq);
void pic_unmask(unsigned irq);
void pic_eoi(unsigned irq);
bool pic_is_spurious(unsigned irq);

#endif
