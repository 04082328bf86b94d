/* stop.h - the ways the hypervisor ends: cleanly, with a reason. */
#ifndef VMI_HV_STOP_H
#define VMI_HV_STOP_H

#include <stdbool.h>
#include "exit_codes.h"

/* The machine has QEMU's isa-debug-exit at HV_DEBUG_EXIT_PORT (tests run
 * with it; a plain QEMU or a real machine has none). */
bool hv_debug_exit_present(void);

/* What powers the machine off after a clean end (main.c registers ACPI's). */
void stop_set_power_off(void (*power_off)(void));

/* Print "vmi-hv: stopped: <why>", exit QEMU through isa-debug-exit with
 * `code` if the device is there, else halt with interrupts off forever. */
__attribute__((noreturn, format(printf, 2, 3)))
void hv_stop(int code, const char *why, ...);

/* Bad input: one "vmi-hv: error: ..." line, then hv_stop(HV_EXIT_BAD_INPUT). */
__attribute__((noreturn, format(printf, 1, 2)))
void hv_fail(const char *fmt, ...);

/* A bug in the hypervisor itself. */
__attribute__((noreturn, format(printf, 1, 2)))
void hv_panic(const char *fmt, ...);

#define HV_ASSERT(cond) \
	do { if (!(cond)) hv_panic("assertion failed: %s (%s:%d)", \
				   #cond, __FILE__, __LINE__); } while (0)

#endif
