/* kbd.h - the PS/2 keyboard on the machine's i8042 controller (hv/drivers/kbd.c):
 * console input from the VGA window's side, next to COM1. */
#ifndef VMI_HV_KBD_H
#define VMI_HV_KBD_H

#include <stdbool.h>

/* Why kbd_init() found no keyboard: a reason, and the controller's
 * answer byte when there was one (else -1). */
struct kbd_probe {
	const char *why;
	int answer;
};

/* Set the controller up and unmask IRQ 1 (kbd_irq must be its handler
 * by then).  False, with the reason in *p, when the machine has no
 * controller or no keyboard port: not an error, the serial console is
 * then the only input.  Needs the timer running. */
bool kbd_init(struct kbd_probe *p);

/* IRQ 1: the controller's bytes into the typed ring. */
void kbd_irq(void);

/* The next byte the keyboard typed, -1 if none is waiting. */
int kbd_getc(void);

#endif
