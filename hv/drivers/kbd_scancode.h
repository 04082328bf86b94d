/*
 * kbd_scancode.h - PS/2 scancode set 1 to the bytes a terminal would send
 * (hv/drivers/kbd_scancode.c, pure: unit-tested on the host).
 *
 * The keyboard driver (hv/drivers/kbd.c) feeds every byte the controller hands it,
 * makes and breaks alike; the translator keeps the modifier state and
 * answers with 0 to KBD_MAX_BYTES bytes for the guest's console: ASCII
 * (US layout), CR for Enter, DEL for Backspace, Ctrl-letter as its control
 * code, Alt as an ESC prefix, and the ANSI sequences of the cursor keys.
 */
#ifndef VMI_HV_KBD_SCANCODE_H
#define VMI_HV_KBD_SCANCODE_H

#include <stdbool.h>
#include <stdint.h>

#define KBD_MAX_BYTES 4		/* the longest: Delete, "ESC [ 3 ~" */

struct kbd_state {
	unsigned held;		/* KBD_HELD_* bits: modifier keys down now */
	bool caps_lock;		/* toggled on each press of Caps Lock */
	bool extended;		/* the previous byte was the 0xE0 prefix */
	unsigned pause_left;	/* bytes of the Pause key's E1 sequence still to come */
};

#define KBD_HELD_LSHIFT    0x01
#define KBD_HELD_RSHIFT    0x02
#define KBD_HELD_LCTRL     0x04
#define KBD_HELD_RCTRL     0x08
#define KBD_HELD_LALT      0x10
#define KBD_HELD_RALT      0x20
#define KBD_HELD_CAPS_KEY  0x40	/* so that the key's auto-repeat toggles once */

void kbd_state_init(struct kbd_state *s);

/* One byte from the controller in; the bytes it types out.  Returns how
 * many (0 for releases, modifiers, prefixes and keys we do not map). */
unsigned kbd_scancode(struct kbd_state *s, uint8_t code, uint8_t out[KBD_MAX_BYTES]);

#endif
