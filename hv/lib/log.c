/*
 * log.c - kprintf and log lines, formatted here and handed byte by byte to
 * the output the console registered (log.h).
 */
#include "log.h"
#include "hvlib.h"

/* Set once at start-up, before the other CPUs run, and read after. */
static const struct log_output *output;
static enum log_level shown = LOG_INFO;

void log_set_output(const struct log_output *out)
{
	output = out;
}

void log_set_level(enum log_level level)
{
	shown = level;
}

enum log_level log_level(void)
{
	return shown;
}

static void putc_cb(char c, void *ctx)
{
	(void)ctx;
	output->putc(c);
}

void vkprintf(const char *fmt, va_list ap)
{
	if (output)
		fmt_format(putc_cb, NULL, fmt, ap);
}

void kprintf(const char *fmt, ...)
{
	uint32_t token;
	va_list ap;

	if (!output)
		return;
	token = output->enter();
	va_start(ap, fmt);
	vkprintf(fmt, ap);
	va_end(ap);
	output->leave(token);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const prefix[] = {
		[LOG_ERROR] = "vmi-hv: error: ",
		[LOG_WARN] = "vmi-hv: warning: ",
		[LOG_INFO] = "vmi-hv: ",
		[LOG_DEBUG] = "vmi-hv: debug: ",
	};
	uint32_t token;
	va_list ap;

	if (level > shown || !output)
		return;
	token = output->enter();
	output->colour(level);
	kprintf("%s", prefix[level]);
	va_start(ap, fmt);
	vkprintf(fmt, ap);
	va_end(ap);
	output->putc('\n');
	output->colour(-1);
	output->leave(token);
}
