/*
 * sysmap.h - the guest kernel's System.map, given to the hypervisor as a
 * multiboot module, for naming guest EIPs in reports (strict_pt, the
 * shadow audit) as symbol+offset.
 */
#ifndef VMI_HV_SYSMAP_H
#define VMI_HV_SYSMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The text of a System.map ("ADDR TYPE NAME" lines), in hypervisor
 * memory; len 0 = none given. */
struct sysmap {
	const char *text;
	uint32_t len;
};

/* Is a multiboot module string (path first, then arguments) a System.map? */
bool sysmap_module_is(const char *string);

/*
 * " (name+0xoff)" for the kernel text symbol at or below addr, into buf;
 * "" when there is no map, no text symbol below addr, or addr is more
 * than 64 KiB past it (no function is that long: it is not in the kernel).
 */
void sysmap_describe(const struct sysmap *m, uint32_t addr, char *buf, size_t len);

#endif
