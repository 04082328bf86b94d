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

/* The first slot the definition makes unsupported: the model. */
static unsigned model_slot(void)
{
	for (unsigned n = 0; n < NUM_VMI_CALLS; n++)
		if (vmi_call_kind(n) == VMI_KIND_UNSUPPORTED)
			return n;
	return 0;
}

bool vrom_refuse_call(uint8_t *rom, size_t len, unsigned call, char *why, size_t whylen)
{
	const unsigned model = model_slot();
	const uint8_t *m = rom + model * VROM_CALL_LEN;
	uint8_t *slot = rom + call * VROM_CALL_LEN;
	uint32_t stub, at;
	uint8_t old_sum = 0, new_sum = 0;

	if (!model || call < 1 || call >= NUM_VMI_CALLS || (call + 1) * VROM_CALL_LEN > len ||
	    (model + 1) * VROM_CALL_LEN > len) {
		fmt_snprintf(why, whylen, "VMI ROM: no slot %u to refuse in %u bytes", call, (unsigned)len);
		return false;
	}
	/* mov $model,%eax (b8 imm32); jmp rel32 (e9) or rel8 (eb). */
	at = model * VROM_CALL_LEN;
	if (m[0] != 0xb8 || le32(m + 1) != model || (m[5] != 0xe9 && m[5] != 0xeb)) {
		fmt_snprintf(why, whylen, "VMI ROM: slot %u (%s) is not mov $%u,%%eax; jmp: no model for a refused call",
			     model, vmi_call_name(model), model);
		return false;
	}
	stub = m[5] == 0xe9 ? at + 10 + le32(m + 6) : at + 7 + (uint32_t)(int32_t)(int8_t)m[6];
	if (stub >= len) {
		fmt_snprintf(why, whylen, "VMI ROM: slot %u jumps to 0x%x, outside the image", model, stub);
		return false;
	}
	for (unsigned i = 0; i < VROM_CALL_LEN; i++)
		old_sum = (uint8_t)(old_sum + slot[i]);
	slot[0] = 0xb8;
	put_le32(slot + 1, call);
	slot[5] = 0xe9;
	put_le32(slot + 6, stub - (call * VROM_CALL_LEN + 10));
	for (unsigned i = 10; i < VROM_CALL_LEN; i++)
		slot[i] = 0xcc;
	for (unsigned i = 0; i < VROM_CALL_LEN; i++)
		new_sum = (uint8_t)(new_sum + slot[i]);
	rom[len - 1] = (uint8_t)(rom[len - 1] + old_sum - new_sum);
	return true;
}
