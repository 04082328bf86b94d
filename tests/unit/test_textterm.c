/* test_textterm.c - the terminal emulator behind the VGA screen (hv/drivers/textterm.c),
 * on a fake 80x25 cell buffer: what a Linux boot and busybox's shell send
 * to their console must look as it would on a terminal. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>
#include "textterm.h"

#define COLS 80
#define ROWS 25
#define GREY 0x07
#define HV   0x0b

static uint16_t cells[COLS * ROWS];
static struct textterm t;

static int setup(void **state)
{
	(void)state;
	memset(cells, 0xAA, sizeof(cells));	/* init must clear it */
	textterm_init(&t, cells, COLS, ROWS, GREY);
	return 0;
}

static void feed(const char *s)
{
	while (*s)
		textterm_putc(&t, (uint8_t)*s++);
}

static void hv_print(const char *s)
{
	while (*s)
		textterm_plain(&t, *s++, HV);
}

/* Row r as text, trailing blanks dropped. */
static const char *row(unsigned r)
{
	static char buf[COLS + 1];
	int n = 0;

	for (unsigned c = 0; c < COLS; c++)
		buf[c] = (char)(cells[r * COLS + c] & 0xff);
	buf[COLS] = 0;
	for (n = COLS; n > 0 && buf[n - 1] == ' '; n--)
		;
	buf[n] = 0;
	return buf;
}

static uint8_t attr_at(unsigned r, unsigned c)
{
	return (uint8_t)(cells[r * COLS + c] >> 8);
}

static void assert_cursor(unsigned r, unsigned c)
{
	assert_int_equal(t.row, r);
	assert_int_equal(t.col, c);
	assert_int_equal(textterm_cursor(&t), r * COLS + c);
}

static void test_init_clears(void **state)
{
	(void)state;
	for (unsigned i = 0; i < COLS * ROWS; i++)
		assert_int_equal(cells[i], GREY << 8 | ' ');
	assert_cursor(0, 0);
}

static void test_text_and_newlines(void **state)
{
	(void)state;
	feed("hello\r\nworld");
	assert_string_equal(row(0), "hello");
	assert_string_equal(row(1), "world");
	assert_cursor(1, 5);
	assert_int_equal(attr_at(0, 0), GREY);
	/* A bare line feed keeps the column, as on a terminal. */
	feed("\nX");
	assert_string_equal(row(2), "     X");
	feed("\rY");
	assert_string_equal(row(2), "Y    X");
}

static void test_backspace(void **state)
{
	(void)state;
	feed("abc\b\bX");
	assert_string_equal(row(0), "aXc");
	assert_cursor(0, 2);
	/* The tty's erase of one character: BS, space, BS. */
	feed("\b \b");
	assert_string_equal(row(0), "a c");
	assert_cursor(0, 1);
	feed("\b\b\b");			/* stops at column 0 */
	assert_cursor(0, 0);
}

static void test_tab(void **state)
{
	(void)state;
	feed("a\tb\tc");
	assert_int_equal(cells[8] & 0xff, 'b');
	assert_int_equal(cells[16] & 0xff, 'c');
	feed("\033[1;79H\t");		/* the last tab stop is the last column */
	assert_cursor(0, 79);
}

static void test_line_wrap(void **state)
{
	char line[COLS + 1];

	(void)state;
	memset(line, 'x', COLS);
	line[COLS] = 0;
	/* Exactly 80 characters then CR LF: one row, not a blank one after it. */
	feed(line);
	assert_cursor(0, 79);
	feed("\r\ny");
	assert_string_equal(row(0), line);
	assert_string_equal(row(1), "y");
	/* The 81st character wraps. */
	feed("\r\n");
	feed(line);
	feed("z");
	assert_string_equal(row(2), line);
	assert_string_equal(row(3), "z");
	assert_cursor(3, 1);
	/* Backspace from the pending wrap stays on the line. */
	feed("\r");
	feed(line);
	feed("\bQ");
	assert_int_equal(cells[3 * COLS + 78] & 0xff, 'Q');
	assert_int_equal(t.row, 3);
}

static void test_scrolling(void **state)
{
	char buf[32];

	(void)state;
	for (int i = 0; i < 30; i++) {
		snprintf(buf, sizeof(buf), "line %d\r\n", i);
		feed(buf);
	}
	/* 30 lines and a new empty one: lines 6..29 on rows 0..23. */
	assert_string_equal(row(0), "line 6");
	assert_string_equal(row(23), "line 29");
	assert_string_equal(row(24), "");
	assert_cursor(24, 0);
	assert_int_equal(attr_at(24, 0), GREY);
	/* A line longer than the screen is wide wraps and scrolls too. */
	for (int i = 0; i < COLS + 5; i++)
		feed("w");
	assert_string_equal(row(24), "wwwww");
	assert_string_equal(row(22), "line 29");
}

static void test_erase_and_cursor_moves(void **state)
{
	(void)state;
	feed("first\r\nsecond\r\nthird");
	feed("\033[2J");			/* clear: cursor stays */
	for (unsigned r = 0; r < ROWS; r++)
		assert_string_equal(row(r), "");
	assert_cursor(2, 5);
	feed("\033[H");				/* home */
	assert_cursor(0, 0);
	feed("\033[5;10Hx");			/* row 5, column 10, 1-based */
	assert_int_equal(cells[4 * COLS + 9] & 0xff, 'x');
	feed("\033[99;99H");			/* clamped */
	assert_cursor(24, 79);
	feed("\033[H0123456789\033[4D\033[K");	/* back 4, erase to end of line */
	assert_string_equal(row(0), "012345");
	feed("\033[2C\033[1K");			/* forward 2, erase to start of line */
	assert_string_equal(row(0), "");
	feed("\033[H\r\nabc\033[Adef\033[Bghi"); /* up and down keep the column */
	assert_string_equal(row(0), "   def");
	assert_string_equal(row(1), "abc   ghi");
	feed("\033[20Gz\033[3d*");		/* column 20, then row 3 */
	assert_int_equal(cells[COLS + 19] & 0xff, 'z');
	assert_int_equal(cells[2 * COLS + 20] & 0xff, '*');
	feed("\033[D\033[J");			/* erase below, from the cursor */
	assert_string_equal(row(1), "abc   ghi          z");
	assert_string_equal(row(2), "");
	feed("\033[2;4H\033[1J");		/* erase above, to the cursor */
	assert_string_equal(row(0), "");
	assert_string_equal(row(1), "      ghi          z");
}

/* What busybox's line editing sends: a cursor position query (only the
 * real terminal can answer it), bracketed paste on, the prompt, and on
 * history recall "\r", the prompt again and "ESC [ J". */
static void test_busybox_line_editing(void **state)
{
	(void)state;
	feed("\033[6n\033[?2004hvmi-guest# ls");
	assert_string_equal(row(0), "vmi-guest# ls");
	feed("\r\033[Jvmi-guest# echo hi\033[2D\033[P\033[2C\r\n");
	assert_string_equal(row(0), "vmi-guest# echo i");
	assert_cursor(1, 0);
	for (unsigned i = 0; i < COLS * ROWS; i++)
		assert_int_not_equal(cells[i] & 0xff, 0x1b);
}

static void test_colours(void **state)
{
	(void)state;
	feed("a\033[1;31mb\033[0mc\033[32;44md\033[mE\033[7mF\033[m\033[94mG\033[39mH");
	assert_string_equal(row(0), "abcdEFGH");
	assert_int_equal(attr_at(0, 0), GREY);
	assert_int_equal(attr_at(0, 1), 0x0c);	/* bright red */
	assert_int_equal(attr_at(0, 2), GREY);
	assert_int_equal(attr_at(0, 3), 0x12);	/* green on blue */
	assert_int_equal(attr_at(0, 4), GREY);
	assert_int_equal(attr_at(0, 5), 0x70);	/* reverse */
	assert_int_equal(attr_at(0, 6), 0x09);	/* bright blue */
	assert_int_equal(attr_at(0, 7), 0x0f);	/* default colour, still bright */
	feed("\033[0;38;5;196mI\033[m");	/* 256 colours: not ours, skipped whole */
	assert_int_equal(attr_at(0, 8), GREY);
}

static void test_insert_delete_chars(void **state)
{
	(void)state;
	feed("abcdef\033[4G\033[2P");		/* delete "de" */
	assert_string_equal(row(0), "abcf");
	feed("\033[2@");			/* insert two blanks */
	assert_string_equal(row(0), "abc  f");
	feed("\033[1G\033[2X");			/* erase two characters */
	assert_string_equal(row(0), "  c  f");
	assert_cursor(0, 0);
}

static void test_other_escapes(void **state)
{
	(void)state;
	feed("\033]0;window title\007ok");		/* OSC ended by BEL */
	feed("\033]2;t\033\\!");			/* OSC ended by ESC \ */
	feed("\033(B\033)0.");				/* charsets: two-byte escapes */
	feed("\033[?25l\033[?25h\033[1;24r\033[ q");	/* modes, region, cursor style */
	feed("\a\x01\x7f");				/* BEL, SOH, DEL: nothing */
	assert_string_equal(row(0), "ok!.");
	feed("\0337\033[10;10H#\0338@");		/* save / restore cursor */
	assert_string_equal(row(0), "ok!.@");
	assert_int_equal(cells[9 * COLS + 9] & 0xff, '#');
	feed("\033M");					/* reverse index at the top: scroll down */
	assert_string_equal(row(0), "");
	assert_string_equal(row(1), "ok!.@");
	feed("\033c");					/* reset */
	assert_string_equal(row(1), "");
	assert_cursor(0, 0);
	feed("\033[12;\033[Hz");			/* ESC inside CSI restarts */
	assert_string_equal(row(0), "z");
	feed("\033[5\030y");				/* CAN aborts the sequence */
	assert_string_equal(row(0), "zy");
}

static void test_utf8(void **state)
{
	(void)state;
	feed("caf\xc3\xa9 \xe2\x82\xac" "1 \xf0\x9f\x98\x80!");
	assert_string_equal(row(0), "caf? ?1 ?!");
	feed("\r\n\xa9x");				/* a stray continuation byte */
	assert_string_equal(row(1), "?x");
}

/* The hypervisor's messages: \n is CR LF, its own colour, and a guest
 * escape sequence cut in two by one stays intact on both sides. */
static void test_hypervisor_plain(void **state)
{
	(void)state;
	feed("guest\r\n");
	hv_print("vmi-hv: one\nvmi-hv: two\n");
	assert_string_equal(row(1), "vmi-hv: one");
	assert_string_equal(row(2), "vmi-hv: two");
	assert_int_equal(attr_at(1, 0), HV);
	assert_cursor(3, 0);
	feed("\033[");
	hv_print("vmi-hv: [1m stays text\n");
	feed("31mR");
	assert_string_equal(row(3), "vmi-hv: [1m stays text");
	assert_string_equal(row(4), "R");
	assert_int_equal(attr_at(4, 0), 0x04);	/* red */
	assert_int_equal(attr_at(3, 0), HV);
}

static void test_fresh_line(void **state)
{
	(void)state;
	textterm_fresh_line(&t);			/* at a line's start: nothing */
	assert_cursor(0, 0);
	feed("vmi-guest# ");
	textterm_fresh_line(&t);
	hv_print("vmi-hv: statistics\n");
	assert_string_equal(row(0), "vmi-guest#");
	assert_string_equal(row(1), "vmi-hv: statistics");
	assert_cursor(2, 0);
	for (int i = 0; i < COLS; i++)		/* a full row: the pending wrap counts */
		feed("x");
	textterm_fresh_line(&t);
	assert_cursor(3, 0);
}

/* The hypervisor's lines stay: guest output cannot move above the row
 * after them, erase them, scroll them down or reset them away; the floor
 * moves up as the screen scrolls. */
static void test_hypervisor_lines_kept(void **state)
{
	(void)state;
	feed("guest line\r\n");
	hv_print("vmi-hv: one\n");
	feed("\033[1A\033[2Kforged\r\n");		/* up, erase line */
	assert_string_equal(row(1), "vmi-hv: one");
	assert_string_equal(row(2), "forged");
	feed("\033[H\033[1JX");			/* home (row 2), erase above */
	assert_string_equal(row(0), "guest line");
	assert_string_equal(row(1), "vmi-hv: one");
	assert_string_equal(row(2), "Xorged");
	feed("\033[2J\0337\033[1;1H\0338\033M\033MY");	/* clear, save/restore, reverse index */
	assert_string_equal(row(1), "vmi-hv: one");
	assert_string_equal(row(2), " Y");
	assert_cursor(2, 2);
	feed("\033c");
	assert_string_equal(row(1), "vmi-hv: one");
	assert_cursor(2, 0);
	for (int i = 0; i < ROWS; i++)			/* scroll hv's line off the top */
		feed("line\r\n");
	feed("\033[H");
	assert_cursor(0, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_init_clears, setup),
		cmocka_unit_test_setup(test_text_and_newlines, setup),
		cmocka_unit_test_setup(test_backspace, setup),
		cmocka_unit_test_setup(test_tab, setup),
		cmocka_unit_test_setup(test_line_wrap, setup),
		cmocka_unit_test_setup(test_scrolling, setup),
		cmocka_unit_test_setup(test_erase_and_cursor_moves, setup),
		cmocka_unit_test_setup(test_busybox_line_editing, setup),
		cmocka_unit_test_setup(test_colours, setup),
		cmocka_unit_test_setup(test_insert_delete_chars, setup),
		cmocka_unit_test_setup(test_other_escapes, setup),
		cmocka_unit_test_setup(test_utf8, setup),
		cmocka_unit_test_setup(test_hypervisor_plain, setup),
		cmocka_unit_test_setup(test_fresh_line, setup),
		cmocka_unit_test_setup(test_hypervisor_lines_kept, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
