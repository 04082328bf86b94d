/* vrom_check.c - see vrom_check.h.  Offsets from the seed's VROMHeader. */
#include "vrom_check.h"
#include "bzimage.h"	/* le16/le32 */
#include "hvlib.h"

#define VROM_SIG_OFFSET      0x00
#define VROM_LENGTH_OFFSET   0x02
#define VROM_VMI_SIG_OFFSET  0x08
#define VROM_MINOR_OFFSET    0x0c
#define VROM_MAJOR_OFFSET    0x0d
#define VMI_SIGNATURE_CVMI   0x696d5663u

bool vrom_check(const uint8_t *rom, size_t len, size_t max_size,
		struct vrom_info *info, char *why, size_t whylen)
{
	uint8_t sum = 0;
	uint32_t size;

	if (len < 0x80) {
		fmt_snprintf(why, whylen, "VMI ROM is %u bytes, shorter than its header",
			     (unsigned)len);
		return false;
	}
	if (le16(rom + VROM_SIG_OFFSET) != 0xaa55) {
		fmt_snprintf(why, whylen, "VMI ROM lacks the 0xAA55 option-ROM signature");
		return false;
	}
	size = rom[VROM_LENGTH_OFFSET] * 512u;
	if (size == 0 || size > len || size > max_size) {
		fmt_snprintf(why, whylen,
			     "VMI ROM length %u bytes does not fit the image (%u) or the ROM area (%u)",
			     size, (unsigned)len, (unsigned)max_size);
		return false;
	}
	if (le32(rom + VROM_VMI_SIG_OFFSET) != VMI_SIGNATURE_CVMI) {
		fmt_snprintf(why, whylen, "VMI ROM lacks the 'cVmi' signature at 0x08");
		return false;
	}
	for (uint32_t i = 0; i < size; i++)
		sum = (uint8_t)(sum + rom[i]);
	if (sum) {
		fmt_snprintf(why, whylen, "VMI ROM checksum is wrong (byte sum 0x%02x)", sum);
		return false;
	}
	info->size = size;
	info->api_major = rom[VROM_MAJOR_OFFSET];
	info->api_minor = rom[VROM_MINOR_OFFSET];
	return true;
}
