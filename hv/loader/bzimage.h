/*
 * bzimage.h - the Linux x86 boot protocol (Documentation/x86/boot.rst):
 * header offsets and the checks we make on a bzImage.  Pure logic, shared
 * by the loader and tests/unit/test_bzimage.c.
 */
#ifndef VMI_HV_BZIMAGE_H
#define VMI_HV_BZIMAGE_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include "hvlib.h"

/* Offsets in the image file and in boot_params (the same numbers). */
#define BP_SCREEN_INFO          0x000
#define BP_EXT_RAMDISK_IMAGE    0x0c0
#define BP_EXT_RAMDISK_SIZE     0x0c4
#define BP_EXT_CMD_LINE_PTR     0x0c8
#define BP_ALT_MEM_K            0x1e0
#define BP_E820_ENTRIES         0x1e8
#define BP_SENTINEL             0x1ef
#define BP_HDR                  0x1f1
#define BP_E820_TABLE           0x2d0
#define BP_E820_MAX             128
#define BP_SIZE                 0x1000

#define HDR_SETUP_SECTS         0x1f1
#define HDR_SYSSIZE             0x1f4
#define HDR_VID_MODE            0x1fa
#define HDR_BOOT_FLAG           0x1fe
#define HDR_JUMP                0x200
#define HDR_HEADER              0x202
#define HDR_VERSION             0x206
#define HDR_KERNEL_VERSION      0x20e
#define HDR_TYPE_OF_LOADER      0x210
#define HDR_LOADFLAGS           0x211
#define HDR_CODE32_START        0x214
#define HDR_RAMDISK_IMAGE       0x218
#define HDR_RAMDISK_SIZE        0x21c
#define HDR_HEAP_END_PTR        0x224
#define HDR_CMD_LINE_PTR        0x228
#define HDR_INITRD_ADDR_MAX     0x22c
#define HDR_KERNEL_ALIGNMENT    0x230
#define HDR_RELOCATABLE_KERNEL  0x234
#define HDR_XLOADFLAGS          0x236
#define HDR_CMDLINE_SIZE        0x238
#define HDR_PREF_ADDRESS        0x258
#define HDR_INIT_SIZE           0x260

#define BOOT_FLAG_MAGIC         0xaa55
#define HDRS_MAGIC              0x53726448	/* "HdrS" */
#define BZ_MIN_PROTOCOL         0x0206
#define LOADFLAG_LOADED_HIGH    0x01
#define LOADFLAG_KEEP_SEGMENTS  0x40
#define LOADFLAG_CAN_USE_HEAP   0x80
#define BZ_DEFAULT_LOAD_ADDR    0x100000

struct bzimage_info {
	uint16_t protocol;		/* e.g. 0x020f */
	uint8_t setup_sects;		/* as found (0 means 4) */
	uint32_t setup_size;		/* (setup_sects + 1) * 512 */
	uint32_t header_end;		/* 0x202 + byte at 0x201 */
	uint32_t pm_offset;		/* protected-mode kernel in the file */
	uint32_t pm_size;
	uint8_t loadflags;
	uint32_t code32_start;
	uint32_t initrd_addr_max;
	uint32_t kernel_alignment;
	bool relocatable;
	uint32_t cmdline_size;		/* max command line length */
	uint64_t pref_address;		/* 2.10+, else 0x100000 */
	uint32_t init_size;		/* 2.10+, else 0 */
	char version[64];		/* kernel version string, if any */
};

/* Validate a bzImage.  On failure return false and write a one-line
 * reason (no prefix, no newline) into why. */
bool bzimage_parse(const uint8_t *img, size_t len, struct bzimage_info *bi,
		   char *why, size_t whylen);

/* The guest-physical memory a kernel loaded at load_addr needs up to its
 * end, decompression included (boot.rst: init_size counts from the
 * address the kernel runs at, which a relocatable kernel picks as
 * load_addr aligned to kernel_alignment, never below pref_address). */
uint64_t bzimage_footprint_end(const struct bzimage_info *bi, uint32_t load_addr);

/* Little-endian stores for the boot protocol's structures (le16/le32/le64,
 * the loads, are in hvlib.h). */
static inline void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void put32(uint8_t *p, uint32_t v)
{
	put16(p, v & 0xffff);
	put16(p + 2, v >> 16);
}
static inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

#endif
