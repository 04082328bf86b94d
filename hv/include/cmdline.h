/*
 * cmdline.h - the hypervisor's own command line (pure logic, unit-tested).
 *
 *   guest_mem=SIZE        guest RAM; SIZE is bytes or with K, M or G suffix,
 *                         a multiple of 4 KiB, at least GUEST_MEM_MIN
 *   loglevel=LEVEL        error, warn, info (default) or debug, or 0-3
 *   after_load=WHAT       stop (default): stop once the guest is loaded and
 *                         checked; idle: stay up, serving serial input
 *   selftest_fault=KIND   deliberately fault after start-up, for the tests
 *                         of the exception dump: page, invalid-opcode,
 *                         divide, double
 *
 * Anything else is an error.  The first word is the image's own path when
 * it contains a '/' or is not of the form name=value (GRUB and QEMU both
 * put the kernel path first).
 */
#ifndef VMI_HV_CMDLINE_H
#define VMI_HV_CMDLINE_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

enum selftest_fault {
	FAULT_NONE, FAULT_PAGE, FAULT_INVALID_OPCODE, FAULT_DIVIDE, FAULT_DOUBLE
};

struct hv_options {
	uint64_t guest_mem;		/* bytes */
	bool guest_mem_given;
	int loglevel;			/* enum log_level */
	bool idle_after_load;
	enum selftest_fault fault;
};

/* Parse "123", "64K", "128M", "1G" (case-insensitive suffix).  false on
 * anything else, including overflow past 4 GiB. */
bool parse_size(const char *s, size_t len, uint64_t *out);

/* Returns true on success; else writes one line (no prefix, no newline)
 * saying what is wrong into err. */
bool hv_parse_cmdline(const char *cmdline, struct hv_options *o,
		      char *err, size_t errlen);

/* Where the arguments start in a module or kernel string: past the
 * leading path, if the loader put one there. */
const char *skip_image_path(const char *s);

#endif
