/* Unit tests for the guest console filter (hv/drivers/guest_text.c): what
 * reaches COM1 of a guest's bytes; nothing the guest sends can move the
 * cursor left of its own text on the row or onto another row. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "guest_text.h"

static char got[512];
static unsigned n;

static void out(char c, void *ctx)
{
	(void)ctx;
	if (n < sizeof(got) - 1)
		got[n++] = c;
	got[n] = 0;
}

static const char *run(const char *in, const char *label)
{
	struct guest_text t = { 0 };

	n = 0;
	got[0] = 0;
	for (; *in; in++)
		guest_text_put(&t, *in, label, out, 0);
	guest_text_pause(&t, out, 0);
	return got;
}

static void plain_text_and_crlf_pass(void **state)
{
	assert_string_equal(run("hello\r\nworld\n\tx\a", "g1"), "hello\r\nworld\n\tx\a");
	assert_string_equal(run("a\r\r\nb", "g1"), "a\r\nb");
}

static void bare_cr_writes_the_label_again(void **state)
{
	assert_string_equal(run("x\r[g2] y", "g1"), "x\r[g1] [g2] y");
	assert_string_equal(run("x\ry", 0), "x\ry");
}

static void cursor_moves_are_shown(void **state)
{
	assert_string_equal(run("\x1b[1A\x1b[2K\x1b[H\x1b[10;1f", "g"), "^[[1A^[[2K^[[H^[[10;1f");
	assert_string_equal(run("\x1b" "c\x1b" "7\x1b]0;t\a", "g"), "^[c^[7^[]0;t\a");
	assert_string_equal(run("\f\v\x7f", "g"), "^L^K^?");
}

static void colours_kept_and_reset(void **state)
{
	assert_string_equal(run("\x1b[1;31mred", "g"), "\x1b[1;31mred\x1b[0m");
	assert_string_equal(run("\x1b[0mx", "g"), "\x1b[0mx");
	assert_string_equal(run("\x1b[?25lx", "g"), "^[[?25lx");
}

/* A line ends with its colours reset: the next row, which another guest
 * or the hypervisor may write, starts with its label, not an SGR. */
static void colours_reset_before_the_line_ends(void **state)
{
	assert_string_equal(run("\x1b[31mred\nnext", "g"), "\x1b[31mred\x1b[0m\nnext");
	assert_string_equal(run("\x1b[31mred\r\nnext", "g"), "\x1b[31mred\x1b[0m\r\nnext");
	assert_string_equal(run("\x1b[0mplain\n", "g"), "\x1b[0mplain\n");
}

static void position_query_dropped(void **state)
{
	assert_string_equal(run("# \x1b[6nls", "g"), "# ls");
}

static void backspace_stops_at_the_guest_text(void **state)
{
	assert_string_equal(run("ab\b\b\bc", "g"), "ab\b\b^Hc");
	assert_string_equal(run("\b", "g"), "^H");
	/* UTF-8 counts no column: "é" then BS shows. */
	assert_string_equal(run("\xc3\xa9\b", "g"), "\xc3\xa9^H");
	/* A tab counts one column, wherever its stop is. */
	assert_string_equal(run("\t\b\b", "g"), "\t\b^H");
}

static void line_editing_on_the_row(void **state)
{
	/* busybox: CR, erase to the end, cursor back and forward */
	assert_string_equal(run("# ls\r\x1b[K# ls -l\x1b[3D\x1b[2C", "g"), "# ls\r[g] \x1b[K# ls -l\x1b[3D\x1b[2C");
	assert_string_equal(run("ab\x1b[3D", "g"), "ab^[[3D");
	assert_string_equal(run("ab\x1b[99C\x1b[3D", "g"), "ab\x1b[99C^[[3D");
	assert_string_equal(run("x\x1b[1K\x1b[2K\x1b[2P\x1b[4@\x1b[X", "g"), "x^[[1K^[[2K\x1b[2P\x1b[4@\x1b[X");
	assert_string_equal(run("\x1b[s\x1b[u", "g"), "^[[s^[[u");
}

static void unfinished_sequences(void **state)
{
	assert_string_equal(run("\x1b[12\nx", "g"), "^[[12\nx");
	assert_string_equal(run("\x1b[11111111111111111111m", "g"), "^[[11111111111111111111m");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(plain_text_and_crlf_pass),
		cmocka_unit_test(bare_cr_writes_the_label_again),
		cmocka_unit_test(cursor_moves_are_shown),
		cmocka_unit_test(colours_kept_and_reset),
		cmocka_unit_test(colours_reset_before_the_line_ends),
		cmocka_unit_test(position_query_dropped),
		cmocka_unit_test(backspace_stops_at_the_guest_text),
		cmocka_unit_test(unfinished_sequences),
		cmocka_unit_test(line_editing_on_the_row),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
