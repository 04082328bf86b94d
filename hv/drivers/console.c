/*
 * console.c - fan kprintf out to COM1 and VGA; log levels and prefixes;
 * the guest's console output to both as well (console_guest_putc);
 * console input from COM1 and the keyboard.
 */
#include "console.h"
#include "log.h"
#include "kbd.h"
#include "io.h"
#include "hvlib.h"
#include "tsc.h"
#include "spinlock.h"
#include "x86.h"

static bool guest_output_last;	/* the guest's bytes were the last on VGA */
/* Whose line COM1's cursor is in (0: none, at the start of a line), so
 * that each line carries one guest's name (with several) and the
 * hypervisor's lines start on their own (guest_text.h). */
static struct guest_console *guest_line_owner;
/* A hypervisor line is open on COM1: printed in pieces (a report's
 * "name: a=1 b=2" from several kprintf calls), it stays whole, so a
 * guest's line waits in its buffer until it ends (guest_flush). */
static bool hv_line_open;
static uint64_t hv_line_opened;	/* rdtsc() when it opened */

/* One CPU's output at a time: a kprintf call, a guest's byte or line, or
 * a whole report (console_enter in console.h; a line printed in pieces by
 * several kprintf calls is whole only inside one).  Its holder may print
 * again inside (a report inside a report, a panic inside a print):
 * console_enter() then takes nothing. */
static struct spinlock console_lock = SPINLOCK_INIT("console_lock", LOCK_RANK_CONSOLE);

struct console_hold console_enter(void)
{
	struct console_hold h = { false, read_eflags() };

	if (spin_held(&console_lock))
		return h;
	irq_disable();
	spin_lock(&console_lock);
	h.taken = true;
	return h;
}

void console_leave(struct console_hold h)
{
	if (h.taken)
		spin_unlock(&console_lock);
	if (h.eflags & X86_EFLAGS_IF)
		irq_enable();
}

static void serial_out(char c, void *ctx)
{
	(void)ctx;
	serial_putc_raw(c);
}

/* End the open guest line on COM1, its colours reset, before other text;
 * the guest shows the row again when it writes next (row_show_again). */
static void end_guest_line(void)
{
	guest_text_pause(&guest_line_owner->text, serial_out, 0);
	serial_putc_raw('\r');
	serial_putc_raw('\n');
	guest_line_owner->row_cut = true;
	guest_line_owner = 0;
}

/* One byte of the guest's output to COM1, kept until its row ends. */
static void row_put(struct guest_console *gc, char c)
{
	guest_text_put(&gc->text, c, gc->label, serial_out, 0);
	if (c == '\n')
		gc->row_len = 0;
	else if (gc->row_len < GUEST_ROW_MAX)
		gc->row[gc->row_len++] = c;
	else
		gc->row_len = GUEST_ROW_MAX + 1;
}

/*
 * The row a cut ended, written again from its start (after the label):
 * the filter starts afresh at the row's start and takes the same bytes,
 * so it ends in the state the cut left (colours, an open escape, the
 * column BS may go back to).
 */
static void row_show_again(struct guest_console *gc)
{
	gc->row_cut = false;
	if (gc->row_len > GUEST_ROW_MAX)
		return;
	gc->text = (struct guest_text){ 0 };
	for (unsigned i = 0; i < gc->row_len; i++)
		guest_text_put(&gc->text, gc->row[i], gc->label, serial_out, 0);
}

/* How long a guest's partial line waits before it is shown anyway. */
static uint64_t line_hold_cycles(void)
{
	return udiv64(tsc_hz() * CONSOLE_LINE_HOLD_US, 1000000);
}

/* The log's output (lib/log.h): a message is whole under console_lock,
 * its level coloured on VGA. */
static uint32_t output_enter(void)
{
	struct console_hold h = console_enter();

	return h.eflags | (h.taken ? CONSOLE_TAKEN : 0);
}

static void output_leave(uint32_t token)
{
	console_leave((struct console_hold){ token & CONSOLE_TAKEN, token & ~CONSOLE_TAKEN });
}

static void output_colour(int level)
{
	static const unsigned char colour[] = {
		[LOG_ERROR] = 0x0c, [LOG_WARN] = 0x0e,
		[LOG_INFO] = VGA_ATTR_HV, [LOG_DEBUG] = 0x08,
	};

	vga_set_attr(level >= 0 && level <= LOG_DEBUG ? colour[level] : VGA_ATTR_HV);
}

static const struct log_output console_output = {
	.enter = output_enter,
	.leave = output_leave,
	.putc = console_putc,
	.colour = output_colour,
};

void console_init(void)
{
	serial_init();
	vga_init();
	log_set_output(&console_output);
}

void console_putc(char c)
{
	if (guest_line_owner)	/* our lines start their own */
		end_guest_line();
	if (!hv_line_open && c != '\n')
		hv_line_opened = rdtsc();
	hv_line_open = c != '\n';
	serial_putc(c);
	if (guest_output_last) {	/* on VGA, our messages start their own line */
		guest_output_last = false;
		vga_fresh_line();
	}
	vga_putc(c);
}

/*
 * A guest's output takes console_lock like the hypervisor's lines: guests
 * on different CPUs write at once, and COM1's cursor and whose line it is
 * in (guest_line_owner) are everyone's.
 */
void console_guest_putc(char c)
{
	struct console_hold h = console_enter();

	serial_putc_raw(c);
	vga_guest_putc(c);
	guest_output_last = true;
	console_leave(h);
}

void console_show(struct vga_screen *s)
{
	struct console_hold h = console_enter();

	vga_show(s);
	console_leave(h);
}

/* A guest's byte on VGA: on its own screen when it has one. */
static void guest_vga(struct vga_screen *screen, char c)
{
	if (!screen) {
		vga_guest_putc(c);
		guest_output_last = true;
		return;
	}
	vga_guest_putc_on(screen, c);
	if (vga_shown(screen))
		guest_output_last = true;
}

static void guest_flush(struct guest_console *gc)
{
	if (!gc->len)
		return;
	if (hv_line_open) {
		/* Another CPU is printing a hypervisor line in pieces: the
		 * guest's line waits (console_guest_flush_due() tries again
		 * after a short hold), unless its buffer is full or the
		 * hypervisor's line has been open for a hold already (a
		 * prompt): then that line ends first. */
		uint64_t hold = line_hold_cycles(), now = rdtsc();

		if (gc->len < GUEST_LINE_MAX && now - hv_line_opened < hold) {
			gc->flush_at = now + hold / 8;
			return;
		}
		serial_putc_raw('\r');
		serial_putc_raw('\n');
		hv_line_open = false;
	}
	if (guest_line_owner && guest_line_owner != gc)
		end_guest_line();	/* another guest's line is still open */
	/* The buffer may hold more than one line (a line that waited for
	 * the hypervisor's, then the next one): each starts with the label,
	 * the colours of the one before reset at its newline. */
	for (unsigned i = 0; i < gc->len; i++) {
		if (!guest_line_owner) {
			serial_putc_raw('[');
			for (const char *p = gc->label; *p; p++)
				serial_putc_raw(*p);
			serial_putc_raw(']');
			serial_putc_raw(' ');
			guest_line_owner = gc;
			if (gc->row_cut)
				row_show_again(gc);
		}
		row_put(gc, gc->line[i]);
		if (gc->line[i] == '\n')
			guest_line_owner = 0;
	}
	guest_text_pause(&gc->text, serial_out, 0);
	gc->len = 0;
}

void console_guest_flush(struct guest_console *gc)
{
	struct console_hold h;

	if (!gc->len)
		return;
	h = console_enter();
	guest_flush(gc);
	console_leave(h);
}

uint64_t console_guest_flush_at(const struct guest_console *gc)
{
	return gc->len ? gc->flush_at : UINT64_MAX;
}

void console_guest_flush_due(struct guest_console *gc, uint64_t now)
{
	if (now >= console_guest_flush_at(gc))
		console_guest_flush(gc);
}

static void guest_write(void *ctx, char c)
{
	struct guest_console *gc = ctx;
	struct console_hold h = console_enter();

	if (!gc->label) {
		if (gc->row_cut)
			row_show_again(gc);
		row_put(gc, c);
		guest_line_owner = c == '\n' ? 0 : gc;
		guest_vga(gc->screen, c);
		console_leave(h);
		return;
	}
	guest_vga(gc->screen, c);
	if (!gc->len)
		gc->flush_at = rdtsc() + line_hold_cycles();
	gc->line[gc->len++] = c;
	if (c == '\n' || gc->len == GUEST_LINE_MAX)
		guest_flush(gc);
	console_leave(h);
}

void console_guest_write(struct guest_console *gc, char c)
{
	guest_mark_putc(&gc->mark, c, guest_write, gc);
}

int console_getc(void)
{
	int c = serial_getc();

	return c >= 0 ? c : kbd_getc();
}

int console_wait_char(int (*source)(void))
{
	for (;;) {
		int c;

		irq_disable();
		c = source();
		if (c >= 0) {
			irq_enable();
			return c;
		}
		/* sti;hlt: the CPU enables interrupts after hlt begins, so an
		 * IRQ cannot slip in between the check and the halt. */
		__asm__ volatile("sti; hlt");
	}
}

