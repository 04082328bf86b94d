/*
 * stop.c - every way out of the hypervisor ends here, never in a reset.
 * The code goes to QEMU's isa-debug-exit device (the test harness's).
 * Without one, a clean end (the last guest powered off, 'q' typed on the
 * console) powers the machine off (through ACPI: main.c registers it), and
 * anything else, or a machine that cannot be powered off, halts with
 * interrupts off, its last lines on the screen (docs/HV.md, "Power-off and reboot").
 */
#include "stop.h"
#include "log.h"
#include "io.h"

/* How the machine goes off (drivers/acpi_poweroff.c), registered by
 * main.c at start-up: the way out knows no driver. */
static void (*power_off)(void);

void stop_set_power_off(void (*fn)(void))
{
	power_off = fn;
}

/* The ends a user asked for, or the guests did: the machine goes off. */
static bool powers_off(int code)
{
	return code == HV_EXIT_GUEST_SHUTDOWN || code == HV_EXIT_GUEST_STOPPED || code == HV_EXIT_DONE;
}

__attribute__((noreturn)) static void halt_forever(int code)
{
	irq_disable();
	/* QEMU's isa-debug-exit: exits with (code << 1) | 1.  Elsewhere the
	 * port is unused and the write does nothing. */
	outb(HV_DEBUG_EXIT_PORT, (uint8_t)code);
	if (powers_off(code) && power_off)
		power_off();
	for (;;)
		__asm__ volatile("hlt");
}

/*
 * QEMU's isa-debug-exit reads as 0; a port no device decodes reads as all
 * ones (QEMU's unassigned I/O, and an ISA bus's floating lines).
 */
bool hv_debug_exit_present(void)
{
	return inb(HV_DEBUG_EXIT_PORT) == 0;
}

/* One line: what the caller printed already, then fmt, then the newline. */
static void rest_of_line(const char *fmt, va_list ap)
{
	vkprintf(fmt, ap);
	kprintf("\n");
}

void hv_stop(int code, const char *why, ...)
{
	va_list ap;

	irq_disable();
	kprintf("vmi-hv: stopped (exit code %d): ", code);
	va_start(ap, why);
	rest_of_line(why, ap);
	va_end(ap);
	halt_forever(code);
}

void hv_fail(const char *fmt, ...)
{
	va_list ap;

	irq_disable();
	kprintf("vmi-hv: error: ");
	va_start(ap, fmt);
	rest_of_line(fmt, ap);
	va_end(ap);
	hv_stop(HV_EXIT_BAD_INPUT, "bad input");
}

void hv_panic(const char *fmt, ...)
{
	va_list ap;

	irq_disable();
	kprintf("vmi-hv: PANIC: ");
	va_start(ap, fmt);
	rest_of_line(fmt, ap);
	va_end(ap);
	hv_stop(HV_EXIT_PANIC, "internal error");
}
