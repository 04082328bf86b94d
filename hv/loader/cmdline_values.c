/*
 * cmdline_values.c - the numbers the hypervisor's options take: sizes,
 * counts and CPU lists, read from the command line's text (pure; the
 * option tables that use them are cmdline.c).
 */
#include "cmdline.h"
#include "cmdline_values.h"
#include "layout.h"

bool parse_size(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (!len)
		return false;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v > 0xffffffffull)
			return false;
	}
	if (i == 0)
		return false;
	if (i < len) {
		unsigned shift;

		switch (s[i]) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		default: return false;
		}
		if (i + 1 != len)
			return false;
		v <<= shift;
		if (v > 0xffffffffull)
			return false;
	}
	*out = v;
	return true;
}

bool parse_uint(const char *s, size_t len, unsigned max, unsigned *out)
{
	unsigned v = 0;

	if (!len || len > 9)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > max)
		return false;
	*out = v;
	return true;
}

/* "0", "1-3", "0,2-3": CPU numbers (0 the boot CPU) as taskset's -c
 * list and Xen's cpus=; ranges ascending, each CPU below HV_MAX_CPUS. */
bool parse_cpu_list(const char *s, size_t len, uint32_t *mask)
{
	size_t i = 0;

	*mask = 0;
	while (i < len) {
		unsigned lo = 0, hi;
		size_t start = i;

		while (i < len && s[i] >= '0' && s[i] <= '9' && i - start < 2)
			lo = lo * 10 + (unsigned)(s[i++] - '0');
		if (i == start)
			return false;
		hi = lo;
		if (i < len && s[i] == '-') {
			start = ++i;
			hi = 0;
			while (i < len && s[i] >= '0' && s[i] <= '9' && i - start < 2)
				hi = hi * 10 + (unsigned)(s[i++] - '0');
			if (i == start)
				return false;
		}
		if (hi < lo || hi >= HV_MAX_CPUS)
			return false;
		for (unsigned c = lo; c <= hi; c++)
			*mask |= 1u << c;
		if (i < len && s[i++] != ',')
			return false;
		if (i == len && s[len - 1] == ',')
			return false;
	}
	return *mask != 0;
}

/* A decimal count from 1 to 2^32-1, no suffix. */
bool parse_count(const char *s, size_t len, uint32_t *out)
{
	uint64_t v = 0;

	if (!len || len > 10)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (!v || v > 0xffffffffull)
		return false;
	*out = (uint32_t)v;
	return true;
}
