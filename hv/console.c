/* console.c - fan kprintf out to COM1 and VGA; log levels and prefixes. */
#include "console.h"
#include "hvlib.h"

static enum log_level level = LOG_INFO;

void console_init(void)
{
	serial_init();
	vga_init();
}

void console_set_level(enum log_level l)
{
	level = l;
}

enum log_level console_level(void)
{
	return level;
}

void console_putc(char c)
{
	serial_putc(c);
	vga_putc(c);
}

static void putc_cb(char c, void *ctx)
{
	(void)ctx;
	console_putc(c);
}

void vkprintf(const char *fmt, va_list ap)
{
	fmt_format(putc_cb, NULL, fmt, ap);
}

void kprintf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vkprintf(fmt, ap);
	va_end(ap);
}

void log_msg(enum log_level l, const char *fmt, ...)
{
	static const char *const prefix[] = {
		[LOG_ERROR] = "vmi-hv: error: ",
		[LOG_WARN] = "vmi-hv: warning: ",
		[LOG_INFO] = "vmi-hv: ",
		[LOG_DEBUG] = "vmi-hv: debug: ",
	};
	static const unsigned char colour[] = {
		[LOG_ERROR] = 0x0c, [LOG_WARN] = 0x0e,
		[LOG_INFO] = 0x07, [LOG_DEBUG] = 0x08,
	};
	va_list ap;

	if (l > level)
		return;
	vga_set_attr(colour[l]);
	kprintf("%s", prefix[l]);
	va_start(ap, fmt);
	vkprintf(fmt, ap);
	va_end(ap);
	console_putc('\n');
	vga_set_attr(0x07);
}
