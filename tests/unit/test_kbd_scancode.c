/* test_kbd_scancode.c - PS/2 scancode set 1 to terminal bytes
 * (hv/drivers/kbd_scancode.c): what the keyboard types must be what a terminal on
 * the serial console would send for the same keys. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>
#include "kbd_scancode.h"

/* Make codes (set 1) used below; a release is the code | 0x80. */
#define ESC_KEY   0x01
#define KEY_1     0x02
#define KEY_MINUS 0x0c
#define BACKSPACE 0x0e
#define TAB       0x0f
#define KEY_Q     0x10
#define KEY_RBRACKET 0x1b
#define ENTER     0x1c
#define CTRL      0x1d
#define KEY_A     0x1e
#define KEY_S     0x1f
#define KEY_QUOTE 0x28
#define KEY_BACKTICK 0x29
#define LSHIFT    0x2a
#define KEY_BACKSLASH 0x2b
#define KEY_C     0x2e
#define KEY_B     0x30
#define KEY_SLASH 0x35
#define RSHIFT    0x36
#define ALT       0x38
#define SPACE     0x39
#define CAPS      0x3a
#define F1        0x3b
#define KEYPAD_8  0x48		/* also "up" after E0 */
#define R(code)   ((code) | 0x80)
#define E0        0xe0
#define E1        0xe1

static struct kbd_state st;
static uint8_t typed[256];
static size_t ntyped;

static int setup(void **state)
{
	(void)state;
	kbd_state_init(&st);
	ntyped = 0;
	return 0;
}

/* Feed codes, collecting everything they type. */
static void keys(size_t n, const uint8_t *codes)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t out[KBD_MAX_BYTES + 8];
		unsigned len;

		memset(out, 0xcc, sizeof(out));
		len = kbd_scancode(&st, codes[i], out);
		assert_true(len <= KBD_MAX_BYTES);
		assert_int_equal(out[len], 0xcc);	/* nothing written beyond */
		memcpy(typed + ntyped, out, len);
		ntyped += len;
	}
}
#define KEYS(...) keys(sizeof((uint8_t[]){ __VA_ARGS__ }), (uint8_t[]){ __VA_ARGS__ })

/* What was typed since the last check, as a C string (bytes may be 0). */
static void expect(const char *want, size_t len)
{
	assert_int_equal(ntyped, len);
	assert_memory_equal(typed, want, len);
	ntyped = 0;
}
#define EXPECT(lit) expect(lit, sizeof(lit) - 1)

static void test_plain_keys_and_releases(void **state)
{
	(void)state;
	KEYS(KEY_A, R(KEY_A), KEY_S, R(KEY_S), KEY_1, R(KEY_1), SPACE, R(SPACE));
	EXPECT("as1 ");
	/* Auto-repeat: the make code again, no release in between. */
	KEYS(KEY_Q, KEY_Q, KEY_Q, R(KEY_Q));
	EXPECT("qqq");
	/* Releases alone type nothing. */
	KEYS(R(KEY_A), R(KEY_1), R(ENTER));
	EXPECT("");
	/* US punctuation. */
	KEYS(KEY_MINUS, KEY_BACKTICK, KEY_BACKSLASH, KEY_QUOTE, KEY_SLASH, KEY_RBRACKET);
	EXPECT("-`\\'/]");
}

static void test_enter_backspace_tab_escape(void **state)
{
	(void)state;
	KEYS(ENTER, R(ENTER), BACKSPACE, R(BACKSPACE), TAB, R(TAB), ESC_KEY, R(ESC_KEY));
	EXPECT("\r\x7f\t\x1b");
	/* Keypad Enter (E0 1C) is Enter too. */
	KEYS(E0, ENTER, E0, R(ENTER));
	EXPECT("\r");
}

static void test_shift(void **state)
{
	(void)state;
	KEYS(LSHIFT, KEY_A, KEY_1, KEY_MINUS, KEY_QUOTE, KEY_BACKSLASH, KEY_SLASH, R(LSHIFT), KEY_A);
	EXPECT("A!_\"|?a");
	KEYS(RSHIFT, KEY_B, R(RSHIFT), KEY_B);
	EXPECT("Bb");
	/* Both held, one released: still shifted. */
	KEYS(LSHIFT, RSHIFT, R(LSHIFT), KEY_A, R(RSHIFT), KEY_A);
	EXPECT("Aa");
	/* Shift with a key it does not change. */
	KEYS(LSHIFT, SPACE, TAB, R(LSHIFT));
	EXPECT(" \t");
}

static void test_caps_lock(void **state)
{
	(void)state;
	KEYS(CAPS, R(CAPS), KEY_A, KEY_1, KEY_MINUS);
	EXPECT("A1-");		/* letters only */
	KEYS(LSHIFT, KEY_A, KEY_1, R(LSHIFT));
	EXPECT("a!");		/* Shift undoes it for letters */
	/* Held down, the key repeats its make code: one toggle only. */
	KEYS(CAPS, CAPS, CAPS, R(CAPS), KEY_A);
	EXPECT("a");
	KEYS(CAPS, R(CAPS), KEY_B);
	EXPECT("B");
}

static void test_ctrl(void **state)
{
	(void)state;
	KEYS(CTRL, KEY_C, KEY_A, KEY_RBRACKET, R(CTRL), KEY_C);
	EXPECT("\x03\x01\x1d" "c");
	/* Right Ctrl is E0 1D; its release E0 9D. */
	KEYS(E0, CTRL, KEY_S, E0, R(CTRL), KEY_S);
	EXPECT("\x13s");
	/* With Shift and with Caps Lock: still the control code. */
	KEYS(CTRL, LSHIFT, KEY_A, R(LSHIFT), CAPS, R(CAPS), KEY_B, CAPS, R(CAPS), R(CTRL));
	EXPECT("\x01\x02");
	/* Ctrl-space and Ctrl-@ type a NUL; Ctrl with a key that types
	 * nothing still types nothing; Ctrl-1 types 1. */
	KEYS(CTRL, SPACE, LSHIFT, 0x03 /* 2 -> @ */, R(LSHIFT), F1, KEY_1, R(CTRL));
	expect("\0\0" "1", 3);
}

static void test_alt_sends_escape_prefix(void **state)
{
	(void)state;
	KEYS(ALT, KEY_B, R(KEY_B), R(ALT), KEY_B);
	EXPECT("\x1b" "b" "b");
	/* Right Alt (E0 38) the same. */
	KEYS(E0, ALT, KEY_A, E0, R(ALT), KEY_A);
	EXPECT("\x1b" "a" "a");
}

static void test_arrows_and_the_e0_prefix(void **state)
{
	(void)state;
	KEYS(E0, 0x48, E0, R(0x48), E0, 0x50, E0, R(0x50),
	     E0, 0x4d, E0, R(0x4d), E0, 0x4b, E0, R(0x4b));
	EXPECT("\x1b[A\x1b[B\x1b[C\x1b[D");
	/* Without E0 the same code is the keypad's 8: the prefix matters,
	 * and it applies to the next byte only. */
	KEYS(KEYPAD_8, R(KEYPAD_8), E0, KEYPAD_8, KEYPAD_8);
	EXPECT("8\x1b[A" "8");
	/* Home, End, Delete, Page Up; keypad / */
	KEYS(E0, 0x47, E0, 0x4f, E0, 0x53, E0, 0x49, E0, KEY_SLASH);
	EXPECT("\x1b[H\x1b[F\x1b[3~\x1b[5~/");
	/* Arrows repeat when held. */
	KEYS(E0, 0x48, E0, 0x48, E0, R(0x48));
	EXPECT("\x1b[A\x1b[A");
}

static void test_fake_shifts_and_pause(void **state)
{
	(void)state;
	/* Some keyboards wrap the grey keys in E0 2A ... E0 AA (a "fake"
	 * left Shift): it must not shift what follows. */
	KEYS(E0, LSHIFT, E0, 0x48, E0, R(0x48), E0, R(LSHIFT), KEY_A);
	EXPECT("\x1b[A" "a");
	/* ...nor may its release cancel a real Shift that is held. */
	KEYS(LSHIFT, E0, R(LSHIFT), KEY_A, R(LSHIFT));
	EXPECT("A");
	/* Pause: E1 1D 45 E1 9D C5 types nothing and leaves no Ctrl held. */
	KEYS(E1, CTRL, 0x45, E1, R(CTRL), R(0x45), KEY_C);
	EXPECT("c");
	/* Unmapped keys: F1, F12, Num Lock, the Windows key (E0 5B). */
	KEYS(F1, R(F1), 0x58, 0x45, E0, 0x5b, E0, R(0x5b));
	EXPECT("");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_plain_keys_and_releases, setup),
		cmocka_unit_test_setup(test_enter_backspace_tab_escape, setup),
		cmocka_unit_test_setup(test_shift, setup),
		cmocka_unit_test_setup(test_caps_lock, setup),
		cmocka_unit_test_setup(test_ctrl, setup),
		cmocka_unit_test_setup(test_alt_sends_escape_prefix, setup),
		cmocka_unit_test_setup(test_arrows_and_the_e0_prefix, setup),
		cmocka_unit_test_setup(test_fake_shifts_and_pause, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
