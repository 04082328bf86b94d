/*
 * hvlib.h - the few C library functions the hypervisor provides itself.
 *
 * The prototypes are the standard ones, so the pure-logic files that use
 * them compile unchanged against the host's libc for the cmocka unit tests.
 */
#ifndef VMI_HV_HVLIB_H
#define VMI_HV_HVLIB_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdbool.h>

/* 64-by-32 division, n / d with d < 2^32 (lib/div64.c). */
uint64_t udiv64(uint64_t n, uint32_t d);

void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strncmp(const char *a, const char *b, size_t n);
int strcmp(const char *a, const char *b);

/* Little-endian words in a byte buffer: instruction bytes, operands and
 * pseudo-descriptors from guest memory, boot-protocol headers. */
static inline uint32_t le16(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8; }
static inline uint32_t le32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t le64(const uint8_t *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* printf-style formatting into a buffer (hv/lib/format.c).  Supports
 * %d %i %u %x %X %o %c %s %p %%, the flags '-' '0', a width, a precision
 * for %s, and the length modifiers hh h l ll z.  Always NUL-terminates
 * (when size > 0) and returns the length the full output would have. */
int fmt_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int fmt_snprintf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The same engine, emitting character by character through a callback. */
typedef void (*fmt_putc_fn)(char c, void *ctx);
int fmt_format(fmt_putc_fn putc, void *ctx, const char *fmt, va_list ap);

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define ALIGN_UP(x, a)   (((x) + ((a) - 1)) & ~((__typeof__(x))(a) - 1))
#define ALIGN_DOWN(x, a) ((x) & ~((__typeof__(x))(a) - 1))

#endif
