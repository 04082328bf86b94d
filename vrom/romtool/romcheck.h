/*
 * romcheck.h -- decode, verify and seal a VMI ROM image (host code).
 *
 * Used by the romtool command and linked directly into the unit tests, so
 * that the tests exercise exactly the checks the tool applies.
 */
#ifndef ROMCHECK_H
#define ROMCHECK_H

#include <stddef.h>
#include <stdint.h>

#define ROMCHECK_ERRLEN 256
#define ROMCHECK_MAX_IMAGE 0x8000	/* 32 KiB: option ROMs at 0xC0000-0xC7FFF */

/* What a slot turned out to contain. */
enum slot_class {
	SLOT_HEADER,		/* slot 0: the VROMHeader */
	SLOT_HYPERCALL,		/* inline: mov $n,%edi; int $vector; ...; ret */
	SLOT_NORETURN,		/* inline: push %edi; mov $n,%edi; int $vector; ud2 */
	SLOT_UNSUPPORTED,	/* mov $n,%eax; jmp <report and fail> */
	SLOT_JUMP,		/* jmp <ROM body> */
};

struct slot_info {
	unsigned int n;
	enum slot_class cls;
	unsigned int code_len;		/* bytes before the int3 padding */
	unsigned int stack_words;	/* mov disp8(%esp),reg loads */
	uint32_t jmp_target;		/* ROM offset, for jmp-ending slots */
	char text[160];			/* the decoded instructions */
};

/* Decode slot n.  Returns 0, or -1 with a message in err. */
int romcheck_decode_slot(const uint8_t *img, size_t len, unsigned int n,
			 struct slot_info *si, char *err, size_t errlen);

/* Check everything: header, checksum, PCI/PnP structures, every slot
 * against the ABI definition.  Returns 0, or -1 with the first problem in
 * err. */
int romcheck_verify(const uint8_t *img, size_t len, char *err, size_t errlen);

/* 8-bit sum of the image (0 for a valid ROM). */
uint8_t romcheck_sum(const uint8_t *img, size_t len);

/* Turn the linked blob in buf[0..*len) into a ROM: pad to 512-byte units
 * leaving the last byte for the checksum, fill romLength, the PCIR image
 * length, the PnP checksum and the checksum byte.  cap is buf's size.
 * Returns 0, or -1 with a message in err. */
int romcheck_seal(uint8_t *buf, size_t cap, size_t *len, char *err, size_t errlen);

/* Name of a slot class, for messages. */
const char *romcheck_class_name(enum slot_class c);

#endif
