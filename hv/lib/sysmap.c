/*
 * sysmap.c - symbol+offset from the guest's System.map (sysmap.h).
 *
 * Only reports use it, a handful of times per guest at most, so it reads
 * the text as it is: one pass over every line, keeping the nearest text
 * symbol (t or T) at or below the address.  Nothing is built or kept.
 */
#include "sysmap.h"
#include "hvlib.h"

#define SYSMAP_MAX_DISTANCE 0x10000u

bool sysmap_module_is(const char *string)
{
	const char *end = string;
	static const char name[] = "System.map";
	size_t n = sizeof(name) - 1;

	while (*end && *end != ' ')
		end++;
	return (size_t)(end - string) >= n && !memcmp(end - n, name, n) &&
	       (end - string == (ptrdiff_t)n || end[-(ptrdiff_t)n - 1] == '/');
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void sysmap_describe(const struct sysmap *m, uint32_t addr, char *buf, size_t len)
{
	const char *p = m->text, *end = m->text + m->len, *best = 0;
	uint32_t best_addr = 0;
	size_t best_len = 0;

	buf[0] = 0;
	while (p < end) {
		const char *line = p, *name;
		uint32_t a = 0;
		int d, digits = 0;

		while (p < end && *p != '\n')
			p++;
		for (name = line; name < p && (d = hex_digit(*name)) >= 0 && digits < 8; name++, digits++)
			a = a << 4 | (uint32_t)d;
		/* "ADDR T NAME": a text symbol at or below addr, nearer than any so far. */
		if (digits == 8 && p - name > 3 && name[0] == ' ' && (name[1] == 't' || name[1] == 'T') &&
		    name[2] == ' ' && a <= addr && (!best || a >= best_addr)) {
			best = name + 3;
			best_len = (size_t)(p - best);
			best_addr = a;
		}
		p++;
	}
	if (best && addr - best_addr <= SYSMAP_MAX_DISTANCE)
		fmt_snprintf(buf, len, " (%.*s+0x%x)", (int)best_len, best, addr - best_addr);
}
