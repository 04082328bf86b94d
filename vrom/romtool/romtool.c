/*
 * romtool -- dump, verify and seal VMI ROM images.
 *
 *   romtool dump FILE         print header, PCI/PnP structures and every slot,
 *                             then verify (exit status as for verify)
 *   romtool verify FILE       exit 0 if FILE is a valid VMI 13.0 ROM, else
 *                             print the problem and exit 1
 *   romtool seal IN OUT       turn the linked blob IN into the ROM OUT
 *                             (lengths, PnP checksum, checksum byte)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "romcheck.h"
#include "vmi_abi.h"

static uint8_t image[ROMCHECK_MAX_IMAGE + 1];

static size_t load(const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f) {
		perror(path);
		exit(2);
	}
	n = fread(image, 1, sizeof(image), f);
	if (ferror(f)) {
		perror(path);
		exit(2);
	}
	fclose(f);
	if (n > ROMCHECK_MAX_IMAGE) {
		fprintf(stderr, "romtool: %s: larger than %d bytes, not an option ROM\n",
			path, ROMCHECK_MAX_IMAGE);
		exit(1);
	}
	return n;
}

static int verify(const char *path, size_t len)
{
	char err[ROMCHECK_ERRLEN];

	if (romcheck_verify(image, len, err, sizeof(err))) {
		fprintf(stderr, "romtool: %s: INVALID: %s\n", path, err);
		return 1;
	}
	printf("%s: OK: VMI %u.%u ROM, %zu bytes, %d slots verified\n", path,
	       VMI_API_REV_MAJOR, VMI_API_REV_MINOR, len, NUM_VMI_CALLS);
	return 0;
}

static void dump_header(size_t len)
{
	const VROMHeader *h = (const VROMHeader *)image;
	const uint8_t *p;

	if (len < sizeof(*h)) {
		printf("image of %zu bytes has no complete header\n", len);
		return;
	}
	printf("header:\n");
	printf("  romSignature     0x%04x\n", h->romSignature);
	printf("  romLength        %u (%u bytes; file has %zu)\n", (uint8_t)h->romLength,
	       (uint8_t)h->romLength * 512, len);
	printf("  romEntry         %02x %02x %02x %02x\n", h->romEntry[0], h->romEntry[1],
	       h->romEntry[2], h->romEntry[3]);
	printf("  vRomSignature    0x%08x (%.4s)\n", h->vRomSignature, (const char *)&h->vRomSignature);
	printf("  API version      %u.%u\n", h->APIVersionMajor, h->APIVersionMinor);
	printf("  reserved2        0x%08x (bytes the guest reserves at the top)\n", h->reserved2);
	printf("  reserved3        0x%08x (shared page%s)\n", h->reserved3,
	       h->reserved3 ? "" : ": none published");
	printf("  pciHeaderOffset  0x%04x", h->pciHeaderOffset);
	if (h->pciHeaderOffset && h->pciHeaderOffset + 0x18u <= len) {
		p = image + h->pciHeaderOffset;
		printf(" -> %.4s vendor %04x device %04x class %02x%02x%02x image %u x 512 "
		       "code type %u indicator 0x%02x", (const char *)p, p[4] | p[5] << 8,
		       p[6] | p[7] << 8, p[0x0f], p[0x0e], p[0x0d], p[0x10] | p[0x11] << 8,
		       p[0x14], p[0x15]);
	}
	printf("\n  pnpHeaderOffset  0x%04x", h->pnpHeaderOffset);
	if (h->pnpHeaderOffset && h->pnpHeaderOffset + 0x20u <= len) {
		unsigned int mfr, prod;

		p = image + h->pnpHeaderOffset;
		mfr = p[0x0e] | p[0x0f] << 8;
		prod = p[0x10] | p[0x11] << 8;
		printf(" -> %.4s rev %u, %u bytes, sum 0x%02x", (const char *)p, p[4], p[5] * 16,
		       romcheck_sum(p, (size_t)p[5] * 16));
		if (mfr < len && prod < len && memchr(image + mfr, 0, len - mfr) &&
		    memchr(image + prod, 0, len - prod))
			printf(", \"%s\" / \"%s\"", (const char *)image + mfr,
			       (const char *)image + prod);
	}
	printf("\n  checksum         byte sum 0x%02x (%s)\n", romcheck_sum(image, len),
	       romcheck_sum(image, len) ? "WRONG" : "ok");
}

static void dump_slots(size_t len)
{
	char err[ROMCHECK_ERRLEN];
	struct slot_info si;

	printf("slots (call, offset, class, code):\n");
	for (unsigned int n = 0; n < NUM_VMI_CALLS; n++) {
		printf("  %2u %-24s 0x%03x  ", n, vmi_call_name(n), n * VROM_CALL_LEN);
		if (romcheck_decode_slot(image, len, n, &si, err, sizeof(err)))
			printf("BAD: %s\n", err);
		else
			printf("%s: %s\n", romcheck_class_name(si.cls), si.text);
	}
}

static int seal(const char *in, const char *out)
{
	char err[ROMCHECK_ERRLEN];
	size_t len = load(in);
	FILE *f;

	if (romcheck_seal(image, sizeof(image) - 1, &len, err, sizeof(err))) {
		fprintf(stderr, "romtool: seal %s: %s\n", in, err);
		return 1;
	}
	if (romcheck_verify(image, len, err, sizeof(err))) {
		fprintf(stderr, "romtool: seal %s: result does not verify: %s\n", in, err);
		return 1;
	}
	f = fopen(out, "wb");
	if (!f || fwrite(image, 1, len, f) != len || fclose(f)) {
		perror(out);
		return 1;
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: romtool dump FILE | verify FILE | seal IN OUT\n");
	return 2;
}

int main(int argc, char **argv)
{
	size_t len;

	if (argc == 3 && !strcmp(argv[1], "verify")) {
		len = load(argv[2]);
		return verify(argv[2], len);
	}
	if (argc == 3 && !strcmp(argv[1], "dump")) {
		len = load(argv[2]);
		printf("%s: %zu bytes\n", argv[2], len);
		dump_header(len);
		dump_slots(len);
		return verify(argv[2], len);
	}
	if (argc == 4 && !strcmp(argv[1], "seal"))
		return seal(argv[2], argv[3]);
	return usage();
}
