/* vrom_check.c - see vrom_check.h.  Offsets and signature come from the
 * ABI definition (vrom/abi/vmi-13.0.def, generated vmi_abi.h). */
#include "vrom_check.h"
#include "hvlib.h"
#include "vmi_abi.h"

bool vrom_check(const uint8_t *rom, size_t len, size_t max_size,
		struct vrom_info *info, char *why, size_t whylen)
{
	uint8_t sum = 0;
	uint32_t size;

	if (len < sizeof(VROMHeader)) {
		fmt_snprintf(why, whylen, "VMI ROM is %u bytes, shorter than its header",
			     (unsigned)len);
		return false;
	}
	if (le16(rom + VMI_OFF_VROMHeader_romSignature) != 0xaa55) {
		fmt_snprintf(why, whylen, "VMI ROM lacks the 0xAA55 option-ROM signature");
		return false;
	}
	size = rom[VMI_OFF_VROMHeader_romLength] * 512u;
	if (size == 0 || size > len || size > max_size) {
		fmt_snprintf(why, whylen,
			     "VMI ROM length %u bytes does not fit the image (%u) or the ROM area (%u)",
			     size, (unsigned)len, (unsigned)max_size);
		return false;
	}
	if (le32(rom + VMI_OFF_VROMHeader_vRomSignature) != VMI_SIGNATURE) {
		fmt_snprintf(why, whylen, "VMI ROM lacks the 'cVmi' signature at 0x%x",
			     VMI_OFF_VROMHeader_vRomSignature);
		return false;
	}
	for (uint32_t i = 0; i < size; i++)
		sum = (uint8_t)(sum + rom[i]);
	if (sum) {
		fmt_snprintf(why, whylen, "VMI ROM checksum is wrong (byte sum 0x%02x)", sum);
		return false;
	}
	info->size = size;
	info->api_major = rom[VMI_OFF_VROMHeader_APIVersionMajor];
	info->api_minor = rom[VMI_OFF_VROMHeader_APIVersionMinor];
	return true;
}
