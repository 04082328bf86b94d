/* A synthetic bzImage header for the loader's unit tests. */
#ifndef BZIMAGE_FIXTURE_H
#define BZIMAGE_FIXTURE_H

#include <stdint.h>
#include <string.h>
#include "bzimage.h"

#define FIX_SETUP_SECTS 4
#define FIX_PM_SIZE     (64 * 1024)
#define FIX_LEN         ((FIX_SETUP_SECTS + 1) * 512 + FIX_PM_SIZE)

static inline void fixture_bzimage(uint8_t *img)
{
	memset(img, 0, FIX_LEN);
	img[HDR_SETUP_SECTS] = FIX_SETUP_SECTS;
	put32(img + HDR_SYSSIZE, FIX_PM_SIZE / 16);
	put16(img + HDR_BOOT_FLAG, 0xaa55);
	img[HDR_JUMP] = 0xeb;
	img[HDR_JUMP + 1] = 0x6a;		/* header ends at 0x26c */
	memcpy(img + HDR_HEADER, "HdrS", 4);
	put16(img + HDR_VERSION, 0x020f);
	put16(img + HDR_KERNEL_VERSION, 0x100);
	memcpy(img + 0x300, "6.1.0-test #1", 14);
	img[HDR_LOADFLAGS] = LOADFLAG_LOADED_HIGH;
	put32(img + HDR_CODE32_START, 0x100000);
	put32(img + HDR_INITRD_ADDR_MAX, 0x37ffffff);
	put32(img + HDR_KERNEL_ALIGNMENT, 0x1000000);
	img[HDR_RELOCATABLE_KERNEL] = 1;
	put32(img + HDR_CMDLINE_SIZE, 2047);
	put64(img + HDR_PREF_ADDRESS, 0x1000000);
	put32(img + HDR_INIT_SIZE, 0x800000);
}

#endif
