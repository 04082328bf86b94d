/* string.c - memcpy and friends; gcc emits calls to the mem* ones itself.
 *
 * memcpy moves 32-bit words, 32 bytes a turn, and memset stores words
 * with rep stosl: the hypervisor zeroes every guest frame and shadow page
 * it hands out and copies guest images, and under TCG each guest
 * instruction costs several host ones, so a byte loop made zeroing a 128
 * MiB guest take about a third of a second, and each new shadow page
 * about 16,000 instructions.  Even the unrolled word loop took 0.24-0.41 s
 * for the 128 MiB at load (make compare's boot phases); rep stosl, which
 * QEMU runs as one instruction, 0.06-0.14 s, and it is as fast as any
 * loop on hardware.  The direction flag is clear: every entry into the
 * hypervisor clears it (switcher.S, boot.S).  The optimize attribute
 * keeps gcc from turning the loops back into calls to the functions
 * themselves. */
#include <stdint.h>
#include "hvlib.h"

#define NO_LIBCALLS __attribute__((optimize("no-tree-loop-distribute-patterns")))

typedef uint32_t __attribute__((may_alias)) word;

NO_LIBCALLS void *memcpy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if ((((uintptr_t)d ^ (uintptr_t)s) & 3) == 0) {
		word *dw;
		const word *sw;

		for (; n && ((uintptr_t)d & 3); n--)
			*d++ = *s++;
		dw = (word *)d;
		sw = (const word *)s;
		for (; n >= 32; n -= 32, dw += 8, sw += 8) {
			dw[0] = sw[0]; dw[1] = sw[1]; dw[2] = sw[2]; dw[3] = sw[3];
			dw[4] = sw[4]; dw[5] = sw[5]; dw[6] = sw[6]; dw[7] = sw[7];
		}
		for (; n >= 4; n -= 4)
			*dw++ = *sw++;
		d = (unsigned char *)dw;
		s = (const unsigned char *)sw;
	}
	while (n--)
		*d++ = *s++;
	return dst;
}

NO_LIBCALLS void *memset(void *dst, int c, size_t n)
{
	unsigned char *d = dst;
	uint32_t w = (unsigned char)c * 0x01010101u;
	size_t words;
	word *dw;

	for (; n && ((uintptr_t)d & 3); n--)
		*d++ = (unsigned char)c;
	dw = (word *)d;
	words = n / 4;
	n %= 4;
	__asm__ volatile("rep stosl" : "+D"(dw), "+c"(words) : "a"(w) : "memory");
	d = (unsigned char *)dw;
	while (n--)
		*d++ = (unsigned char)c;
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;

	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (; n; n--, a++, b++) {
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		if (!*a)
			return 0;
	}
	return 0;
}

int strcmp(const char *a, const char *b)
{
	return strncmp(a, b, (size_t)-1);
}
