/*
 * cmdline_values.h - the number parsers of cmdline_values.c that the
 * option tables (cmdline.c) use; parse_size is cmdline.h's.  Private to
 * hv/loader/.
 */
#ifndef VMI_HV_CMDLINE_VALUES_H
#define VMI_HV_CMDLINE_VALUES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A decimal from 0 to max, at most 9 digits, no suffix. */
bool parse_uint(const char *s, size_t len, unsigned max, unsigned *out);
/* "0", "1-3", "0,2-3": a mask of CPU numbers (0 the boot CPU). */
bool parse_cpu_list(const char *s, size_t len, uint32_t *mask);
/* A decimal count from 1 to 2^32-1, no suffix. */
bool parse_count(const char *s, size_t len, uint32_t *out);

#endif
