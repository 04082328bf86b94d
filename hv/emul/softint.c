/*
 * softint.c - the length of a software interrupt instruction (pure).
 *
 * An int n from ring 3 through a gate of DPL 0 in our IDT (all of them)
 * arrives as #GP with the IDT bit set and the vector in the error code;
 * the hypervisor then delivers vector n through the guest's IDT, and
 * the return address it pushes is the instruction's end.  The CPU ignores
 * legacy prefixes on int (66 cd 80 is a system call like cd 80), so the
 * length counts them: resuming after the first byte would run "cd 80"
 * a second time (docs/HV.md, "What the guest can reach").
 */
#include "emulate.h"

static bool legacy_prefix(uint8_t b)
{
	switch (b) {
	case 0x66: case 0x67: case 0xf0: case 0xf2: case 0xf3:
	case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64: case 0x65:
		return true;
	}
	return false;
}

unsigned emul_soft_int_length(const uint8_t *b, unsigned n)
{
	unsigned i = 0;

	if (n > 15)
		n = 15;
	while (i < n && legacy_prefix(b[i]))
		i++;
	if (i >= n)
		return 0;
	switch (b[i]) {
	case 0xcd: return i + 2 <= 15 ? i + 2 : 0;	/* int imm8 */
	case 0xcc: case 0xce: return i + 1;		/* int3, into */
	}
	return 0;
}
