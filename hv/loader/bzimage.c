/* bzimage.c - check a bzImage against the boot protocol; see bzimage.h. */
#include "bzimage.h"
#include "hvlib.h"

static bool fail(char *why, size_t whylen, const char *fmt, uint32_t a,
		 uint32_t b)
{
	fmt_snprintf(why, whylen, fmt, a, b);
	return false;
}

/* The file's outer shape: not empty, not an ELF, long enough, the boot
 * sector's signature and a 2.06+ setup header. */
static bool check_signatures(const uint8_t *img, size_t len, struct bzimage_info *bi,
			     char *why, size_t whylen)
{
	if (len == 0)
		return fail(why, whylen, "the module is empty (0 bytes), not a bzImage", 0, 0);
	if (len >= 4 && !memcmp(img, "\177ELF", 4))
		return fail(why, whylen,
			    "the module is an ELF file (vmlinux?), not a bzImage", 0, 0);
	if (len < 0x400)
		return fail(why, whylen,
			    "the module is too small to be a bzImage (%u bytes)",
			    (uint32_t)len, 0);
	if (le16(img + HDR_BOOT_FLAG) != BOOT_FLAG_MAGIC)
		return fail(why, whylen,
			    "not a bzImage: no boot-sector signature 0xAA55 at offset 0x1FE (found 0x%04X)",
			    le16(img + HDR_BOOT_FLAG), 0);
	if (le32(img + HDR_HEADER) != HDRS_MAGIC)
		return fail(why, whylen,
			    "not a bzImage: no \"HdrS\" setup header at offset 0x202 (boot protocol before 2.00?)",
			    0, 0);
	bi->protocol = (uint16_t)le16(img + HDR_VERSION);
	if (bi->protocol < BZ_MIN_PROTOCOL)
		return fail(why, whylen,
			    "boot protocol %u.%02u is too old: vmi-hv needs 2.06 or later",
			    bi->protocol >> 8, bi->protocol & 0xff);
	return true;
}

/* The setup header's fields, as they are. */
static void read_header(const uint8_t *img, struct bzimage_info *bi)
{
	bi->setup_sects = img[HDR_SETUP_SECTS];
	bi->setup_size = ((bi->setup_sects ? bi->setup_sects : 4) + 1) * 512u;
	bi->header_end = 0x202 + img[HDR_JUMP + 1];
	bi->loadflags = img[HDR_LOADFLAGS];
	bi->code32_start = le32(img + HDR_CODE32_START);
	bi->initrd_addr_max = le32(img + HDR_INITRD_ADDR_MAX);
	bi->kernel_alignment = le32(img + HDR_KERNEL_ALIGNMENT);
	bi->relocatable = img[HDR_RELOCATABLE_KERNEL] != 0;
	bi->cmdline_size = le32(img + HDR_CMDLINE_SIZE);
	if (bi->protocol >= 0x020a) {
		bi->pref_address = le64(img + HDR_PREF_ADDRESS);
		bi->init_size = le32(img + HDR_INIT_SIZE);
	} else {
		bi->pref_address = BZ_DEFAULT_LOAD_ADDR;
	}
}

/* What the header says, against the file and against how vmi-hv loads. */
static bool check_header(const uint8_t *img, size_t len, struct bzimage_info *bi,
			 char *why, size_t whylen)
{
	uint32_t syssize;

	if (!(bi->loadflags & LOADFLAG_LOADED_HIGH))
		return fail(why, whylen,
			    "a zImage (loadflags 0x%02X lack LOADED_HIGH): only bzImage kernels load at 1 MiB",
			    bi->loadflags, 0);
	if (bi->header_end > 0x400 || bi->header_end < HDR_CMDLINE_SIZE + 4)
		return fail(why, whylen,
			    "setup header end 0x%X is not plausible for protocol 2.06+",
			    bi->header_end, 0);
	if (bi->setup_size >= len)
		return fail(why, whylen,
			    "truncated bzImage: %u setup bytes but the file has only %u",
			    bi->setup_size, (uint32_t)len);
	bi->pm_offset = bi->setup_size;
	bi->pm_size = (uint32_t)len - bi->setup_size;
	syssize = le32(img + HDR_SYSSIZE);
	if ((uint64_t)syssize * 16 > bi->pm_size)
		return fail(why, whylen,
			    "truncated bzImage: the header says %u bytes of protected-mode kernel, the file has %u",
			    syssize * 16, bi->pm_size);
	if (bi->code32_start != BZ_DEFAULT_LOAD_ADDR)
		return fail(why, whylen,
			    "code32_start is 0x%X: vmi-hv loads and enters the kernel at 1 MiB (0x100000)",
			    bi->code32_start, 0);
	if (bi->relocatable &&
	    (!bi->kernel_alignment ||
	     (bi->kernel_alignment & (bi->kernel_alignment - 1))))
		return fail(why, whylen,
			    "kernel_alignment 0x%X is not a power of two", bi->kernel_alignment, 0);
	if (bi->cmdline_size == 0)
		return fail(why, whylen, "cmdline_size is 0 in a protocol 2.06+ header", 0, 0);
	return true;
}

/* kernel_version points to a NUL-terminated string at value + 0x200,
 * inside the setup code; unprintable bytes show as '?'. */
static void read_version(const uint8_t *img, struct bzimage_info *bi)
{
	uint32_t kv = le16(img + HDR_KERNEL_VERSION);
	size_t i;

	if (!kv || kv + 0x200 >= bi->setup_size)
		return;
	for (i = 0; i < sizeof(bi->version) - 1 && kv + 0x200 + i < bi->setup_size; i++) {
		char c = (char)img[kv + 0x200 + i];

		if (c == '\0')
			break;
		bi->version[i] = (c >= 0x20 && c < 0x7f) ? c : '?';
	}
	bi->version[i] = '\0';
}

bool bzimage_parse(const uint8_t *img, size_t len, struct bzimage_info *bi,
		   char *why, size_t whylen)
{
	memset(bi, 0, sizeof(*bi));
	if (!check_signatures(img, len, bi, why, whylen))
		return false;
	read_header(img, bi);
	if (!check_header(img, len, bi, why, whylen))
		return false;
	read_version(img, bi);
	return true;
}

uint64_t bzimage_footprint_end(const struct bzimage_info *bi, uint32_t load_addr)
{
	uint64_t end = (uint64_t)load_addr + bi->pm_size;
	uint64_t run = load_addr;

	if (bi->relocatable) {
		run = ((uint64_t)load_addr + bi->kernel_alignment - 1) &
		      ~(uint64_t)(bi->kernel_alignment - 1);
		if (run < bi->pref_address)
			run = bi->pref_address;
	} else {
		run = bi->pref_address;
	}
	if (bi->init_size && run + bi->init_size > end)
		end = run + bi->init_size;
	return end;
}
