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

#endif
