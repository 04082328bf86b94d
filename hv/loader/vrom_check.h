/* vrom_check.h - sanity checks on an option-ROM image (pure logic). */
#ifndef VMI_HV_VROM_CHECK_H
#define VMI_HV_VROM_CHECK_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

struct vrom_info {
	uint32_t size;		/* romLength * 512 */
	uint8_t api_major, api_minor;
};

/* 0xAA55, romLength covering the image and fitting max_size, 'cVmi', a
 * zero byte sum.  false with a reason in why otherwise. */
bool vrom_check(const uint8_t *rom, size_t len, size_t max_size,
		struct vrom_info *info, char *why, size_t whylen);

/* Turn slot call of the image rom (len bytes, the checksum byte last)
 * into the unsupported form, as the ROM's own unsupported slots are made
 * (mov $call,%eax; jmp to their stub, int3 after), taking the stub's
 * address from the first of them; the byte sum stays zero.  For
 * vmi_refuse= (docs/VROM.md).  false with why if the image has no such
 * slot or no model to follow. */
bool vrom_refuse_call(uint8_t *rom, size_t len, unsigned call, char *why, size_t whylen);

#endif
