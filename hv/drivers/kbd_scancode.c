/*
 * kbd_scancode.c - PS/2 scancode set 1 to terminal bytes, US layout.
 *
 * Set 1 is what a PC's i8042 delivers with translation on (hv/drivers/kbd.c turns
 * it on): one byte per key event, the key's "make" code on press and the
 * same code with bit 7 set ("break") on release; holding a key repeats its
 * make code.  Keys added after the XT keyboard (the grey cursor block,
 * right Ctrl and Alt, keypad Enter and /) send 0xE0 first.  Pause sends
 * E1 1D 45 E1 9D C5 and nothing on release.
 *
 * What a key types is what a terminal on the serial console would send
 * for it, so the guest's shell cannot tell the two apart: Enter is CR
 * (the tty turns it into LF), Backspace is DEL, Ctrl with @ A-Z [ \ ] ^ _
 * gives the control code 0x00-0x1f (so Ctrl-] is the hypervisor's escape),
 * Alt sends ESC before the character (as Linux's own console does), and
 * the cursor keys send the ANSI/VT100 sequences ESC [ A/B/C/D.
 * The keypad always types digits (as with Num Lock on).
 *
 * Pure: no I/O, no globals; compiled into the hypervisor and on the host
 * for tests/unit/test_kbd_scancode.c.
 */
#include "kbd_scancode.h"

#define BREAK       0x80	/* set in the code of a key's release */
#define PREFIX_E0   0xe0
#define PREFIX_E1   0xe1
#define ESC         0x1b

/* Make codes with a meaning of their own. */
#define KEY_LCTRL   0x1d	/* right Ctrl: E0 1D */
#define KEY_LSHIFT  0x2a
#define KEY_RSHIFT  0x36
#define KEY_LALT    0x38	/* right Alt (AltGr): E0 38 */
#define KEY_CAPS    0x3a

/*
 * What each key types, by make code, without and with Shift.  Row by row
 * as on the keyboard; a 0 types nothing (modifiers, unmapped keys).
 * Separate literals keep "\x1b" from eating the digits after it.
 */
#define MAIN_KEYS 0x3a		/* 0x00 .. 0x39 (space) */
static const char unshifted[MAIN_KEYS] =
	"\0" "\x1b" "1234567890-=" "\x7f" "\t"	/* 0x00-0x0f: Esc .. Backspace, Tab */
	"qwertyuiop[]" "\r" "\0"		/* 0x10-0x1d: .. Enter, left Ctrl */
	"asdfghjkl;'`" "\0" "\\"		/* 0x1e-0x2b: .. left Shift, \ */
	"zxcvbnm,./" "\0" "*" "\0" " ";		/* 0x2c-0x39: .. right Shift, keypad *, left Alt, space */
static const char shifted[MAIN_KEYS] =
	"\0" "\x1b" "!@#$%^&*()_+" "\x7f" "\t"
	"QWERTYUIOP{}" "\r" "\0"
	"ASDFGHJKL:\"~" "\0" "|"
	"ZXCVBNM<>?" "\0" "*" "\0" " ";

/* The keypad, 0x47-0x53: digits and operators whatever Shift says. */
#define KEYPAD_FIRST 0x47
static const char keypad[] = "789-456+1230.";

/* The grey keys after 0xE0 that type something. */
static const struct {
	uint8_t code;
	const char *bytes;
} extended_keys[] = {
	{ 0x1c, "\r" },		/* keypad Enter */
	{ 0x35, "/" },		/* keypad / */
	{ 0x48, "\x1b[A" },	/* up */
	{ 0x50, "\x1b[B" },	/* down */
	{ 0x4d, "\x1b[C" },	/* right */
	{ 0x4b, "\x1b[D" },	/* left */
	{ 0x47, "\x1b[H" },	/* Home */
	{ 0x4f, "\x1b[F" },	/* End */
	{ 0x52, "\x1b[2~" },	/* Insert */
	{ 0x53, "\x1b[3~" },	/* Delete */
	{ 0x49, "\x1b[5~" },	/* Page Up */
	{ 0x51, "\x1b[6~" },	/* Page Down */
};

void kbd_state_init(struct kbd_state *s)
{
	s->held = 0;
	s->caps_lock = false;
	s->extended = false;
	s->pause_left = 0;
}

/* The modifier bit of a key, 0 if it is not a modifier. */
static unsigned modifier(uint8_t key, bool extended)
{
	switch (key) {
	case KEY_LSHIFT: return extended ? 0 : KBD_HELD_LSHIFT;	/* E0 2A: a "fake" shift */
	case KEY_RSHIFT: return extended ? 0 : KBD_HELD_RSHIFT;
	case KEY_LCTRL:  return extended ? KBD_HELD_RCTRL : KBD_HELD_LCTRL;
	case KEY_LALT:   return extended ? KBD_HELD_RALT : KBD_HELD_LALT;
	case KEY_CAPS:   return extended ? 0 : KBD_HELD_CAPS_KEY;
	}
	return 0;
}

static unsigned copy(const char *bytes, uint8_t out[KBD_MAX_BYTES])
{
	unsigned n = 0;

	while (bytes[n] && n < KBD_MAX_BYTES) {
		out[n] = (uint8_t)bytes[n];
		n++;
	}
	return n;
}

static unsigned extended_key(uint8_t key, uint8_t out[KBD_MAX_BYTES])
{
	for (unsigned i = 0; i < sizeof(extended_keys) / sizeof(extended_keys[0]); i++)
		if (extended_keys[i].code == key)
			return copy(extended_keys[i].bytes, out);
	return 0;	/* Print Screen, the Windows keys, multimedia keys... */
}

/* The character a main-block or keypad key types with these modifiers;
 * 0 for none. */
static char character(const struct kbd_state *s, uint8_t key)
{
	bool shift = s->held & (KBD_HELD_LSHIFT | KBD_HELD_RSHIFT);
	char c;

	if (key >= KEYPAD_FIRST && key < KEYPAD_FIRST + sizeof(keypad) - 1)
		return keypad[key - KEYPAD_FIRST];
	if (key >= MAIN_KEYS)
		return 0;	/* F1-F12, Num Lock, Scroll Lock... */
	c = unshifted[key];
	/* Caps Lock is a shift for letters only; with Shift it undoes it. */
	if (c >= 'a' && c <= 'z' && s->caps_lock)
		shift = !shift;
	return shift ? shifted[key] : c;
}

/* Ctrl turns @ A-Z [ \ ] ^ _ (and a-z) into 0x00-0x1f, and space into NUL,
 * as a terminal does; other keys type themselves. */
static char with_ctrl(char c)
{
	if (c == ' ')
		return 0;
	if (c >= '@' && c <= '~' && c != '`')
		return (char)(c & 0x1f);
	return c;
}

unsigned kbd_scancode(struct kbd_state *s, uint8_t code, uint8_t out[KBD_MAX_BYTES])
{
	bool extended = s->extended, released = code & BREAK;
	uint8_t key = code & ~BREAK;
	unsigned mod;
	char c;

	if (s->pause_left) {
		s->pause_left--;
		return 0;
	}
	if (code == PREFIX_E1) {
		s->pause_left = 2;	/* 1D 45, then E1 9D C5 the same way */
		return 0;
	}
	if (code == PREFIX_E0) {
		s->extended = true;
		return 0;
	}
	s->extended = false;

	mod = modifier(key, extended);
	if (mod) {
		if (released) {
			s->held &= ~mod;
		} else {
			if (mod == KBD_HELD_CAPS_KEY && !(s->held & KBD_HELD_CAPS_KEY))
				s->caps_lock = !s->caps_lock;
			s->held |= mod;
		}
		return 0;
	}
	if (released)
		return 0;
	if (extended)
		return extended_key(key, out);

	c = character(s, key);
	if (!c)
		return 0;
	if (s->held & (KBD_HELD_LCTRL | KBD_HELD_RCTRL))
		c = with_ctrl(c);	/* may be NUL: Ctrl-space, Ctrl-@ */
	if (s->held & (KBD_HELD_LALT | KBD_HELD_RALT)) {
		out[0] = ESC;
		out[1] = (uint8_t)c;
		return 2;
	}
	out[0] = (uint8_t)c;
	return 1;
}
