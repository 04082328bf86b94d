/*
 * log.h - the hypervisor's own messages: kprintf and leveled log lines.
 *
 * Every layer logs, so logging sits at the bottom (lib/) and knows no
 * device: the console (drivers/console.c) registers itself as the output
 * at start-up (log_set_output), as NOVA's console registers its drivers.
 * Before that, and on a machine with no output, messages go nowhere.
 */
#ifndef VMI_HV_LOG_H
#define VMI_HV_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

/* Where messages go.  enter/leave bracket one message (or a whole report)
 * so that it comes out whole with several CPUs printing; colour(level)
 * marks a log line's level (the VGA attribute), colour(-1) ends it. */
struct log_output {
	uint32_t (*enter)(void);
	void (*leave)(uint32_t token);
	void (*putc)(char c);
	void (*colour)(int level);
};

void log_set_output(const struct log_output *out);
void log_set_level(enum log_level level);
enum log_level log_level(void);

void kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void vkprintf(const char *fmt, va_list ap);

/* One line "vmi-hv: [level: ]<message>\n", if `level` is shown. */
void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
