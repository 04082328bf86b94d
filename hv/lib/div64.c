/* div64.c - 64-bit division helpers (the hypervisor links no libgcc division). */
#include "hvlib.h"

/* 64-by-32 division without libgcc: n / d, d < 2^32. */
uint64_t udiv64(uint64_t n, uint32_t d)
{
	uint32_t hi = (uint32_t)(n >> 32), lo = (uint32_t)n, q_hi, r;
	uint32_t q_lo;

	q_hi = hi / d;
	r = hi % d;
	__asm__("divl %4" : "=a"(q_lo), "=d"(r) : "a"(lo), "d"(r), "rm"(d));
	return ((uint64_t)q_hi << 32) | q_lo;
}
