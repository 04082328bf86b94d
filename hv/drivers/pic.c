/*
 * pic.c - remap the 8259A pair away from the CPU exception vectors
 * (IRQ 0-7 -> 0x20-0x27, 8-15 -> 0x28-0x2F) and mask everything; drivers
 * unmask the lines they own.
 */
#include "pic.h"
#include "io.h"
#include "segments.h"

#define PIC1_CMD  0x20
#define PIC1_DATA 0x21
#define PIC2_CMD  0xa0
#define PIC2_DATA 0xa1
#define PIC_EOI   0x20
#define PIC_READ_ISR 0x0b

static uint16_t mask = 0xffff;

static void write_mask(void)
{
	outb(PIC1_DATA, mask & 0xff);
	outb(PIC2_DATA, mask >> 8);
}

void pic_init(void)
{
	outb(PIC1_CMD, 0x11);		/* ICW1: edge, cascade, ICW4 follows */
	io_delay();
	outb(PIC2_CMD, 0x11);
	io_delay();
	outb(PIC1_DATA, HV_IRQ_BASE);	/* ICW2: vector base */
	io_delay();
	outb(PIC2_DATA, HV_IRQ_SLAVE_BASE);
	io_delay();
	outb(PIC1_DATA, 0x04);		/* ICW3: slave on IRQ2 */
	io_delay();
	outb(PIC2_DATA, 0x02);		/* ICW3: slave identity 2 */
	io_delay();
	outb(PIC1_DATA, 0x01);		/* ICW4: 8086 mode */
	io_delay();
	outb(PIC2_DATA, 0x01);
	io_delay();
	mask = 0xffff & ~(1u << 2);	/* cascade line stays open */
	write_mask();
}

void pic_mask(unsigned irq)
{
	mask |= (uint16_t)(1u << irq);
	write_mask();
}

void pic_unmask(unsigned irq)
{
	mask &= (uint16_t)~(1u << irq);
	write_mask();
}

void pic_eoi(unsigned irq)
{
	if (irq >= 8)
		outb(PIC2_CMD, PIC_EOI);
	outb(PIC1_CMD, PIC_EOI);
}

/* IRQ 7 and 15 can fire without a request (a glitch); the in-service
 * register tells.  A spurious IRQ 15 still needs an EOI on the master. */
bool pic_is_spurious(unsigned irq)
{
	uint16_t port = irq == 7 ? PIC1_CMD : PIC2_CMD;

	if (irq != 7 && irq != 15)
		return false;
	outb(port, PIC_READ_ISR);
	if (inb(port) & 0x80)
		return false;
	if (irq == 15)
		outb(PIC1_CMD, PIC_EOI);
	return true;
}
