/* kbd.h - the PS/2 keyboard on the machine's i8042 controller (hv/drivers/kbd.c):
 * console input from the VGA window's side, next to COM1. */
#ifndef VMI_HV_KBD_H
#define VMI_HV_KBD_H

#include <stdbool.h>

/* Set the controller up and take IRQ 1.  False, said once on the console,
 * when the machine has no controller or no keyboard port: not an error,
 * the serial console is then the only input.  Needs the timer running. */
bool kbd_init(void);

/* The next byte the keyboard typed, -1 if none is waiting. */
int kbd_getc(void);

#endif
