/*
 * stop.c - every way out of the hypervisor ends here, never in a reset,
 * with one exception: when the guest asked to reboot and no
 * isa-debug-exit device took us out, the machine is reset on purpose
 * (the keyboard controller's reset line), so that `reboot -f` in the guest
 * reboots a real machine and ends a `qemu -no-reboot` session (make run).
 */
#include "stop.h"
#include "console.h"
#include "io.h"

__attribute__((noreturn)) static void halt_forever(int code)
{
	irq_disable();
	/* QEMU's isa-debug-exit: exits with (code << 1) | 1.  Elsewhere the
	 * port is unused and the write does nothing. */
	outb(HV_DEBUG_EXIT_PORT, (uint8_t)code);
	if (code == HV_EXIT_GUEST_REBOOT) {
		kprintf("vmi-hv: resetting the machine for the guest's reboot\n");
		for (int i = 0; i < 100000 && (inb(0x64) & 0x02); i++)
			;	/* the controller's input buffer must be empty */
		outb(0x64, 0xfe);
	}
	for (;;)
		__asm__ volatile("hlt");
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
