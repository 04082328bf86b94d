/*
 * romcheck.c -- decode, verify and seal a VMI ROM image.
 *
 * The slot decoder knows only the handful of instructions vmi.S puts in
 * slots.  Anything else is reported as unknown: if we cannot decode a slot
 * we cannot prove it stays inside its 32 bytes, so it does not verify.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "romcheck.h"
#include "vmi_abi.h"

static const char *const reg32[8] = {
	"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi"
};
enum { EAX = 0, EDI = 7 };

/* Expected slot contents, straight from the ABI definition. */
struct call_def {
	const char *name;
	int kind;
	unsigned int stack_words;
};
#define V(num, name, kind, ret, words, sw) \
	[num] = { #name, VMI_KIND_##kind, sw },
static const struct call_def defs[NUM_VMI_CALLS] = { VMI_CALL_LIST(V) };
#undef V

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static void append(char *buf, size_t size, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used + 1 >= size)
		return;
	if (used) {
		snprintf(buf + used, size - used, "; ");
		used = strlen(buf);
	}
	va_start(ap, fmt);
	vsnprintf(buf + used, size - used, fmt, ap);
	va_end(ap);
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

const char *romcheck_class_name(enum slot_class c)
{
	switch (c) {
	case SLOT_HEADER: return "header";
	case SLOT_HYPERCALL: return "inline hypercall";
	case SLOT_NORETURN: return "inline no-return hypercall";
	case SLOT_UNSUPPORTED: return "unsupported (report, return error)";
	case SLOT_JUMP: return "jump into ROM body";
	}
	return "?";
}

uint8_t romcheck_sum(const uint8_t *img, size_t len)
{
	uint8_t s = 0;

	for (size_t i = 0; i < len; i++)
		s = (uint8_t)(s + img[i]);
	return s;
}

/*
 * Decode the instructions of slot n up to its terminator (ret, jmp, ud2),
 * then insist that the rest of the slot is int3 padding.
 */
/* One slot's decoding as it goes. */
struct slot_decoder {
	const uint8_t *img;
	size_t base, end, pc;
	unsigned int n;
	const char *name;
	int edi_imm, eax_imm, saw_int;
	struct slot_info *si;
	char *err;
	size_t errlen;
};

/* Decodes the instruction at d->pc and steps over it: -1 on an error
 * (in err), 1 when it was the slot's last (ret, ud2, jmp), else 0. */
static int decode_insn(struct slot_decoder *d)
{
	const uint8_t *img = d->img;
	struct slot_info *si = d->si;
	size_t pc = d->pc, at = pc;
	uint8_t op;

	if (pc >= d->end)
		return fail(d->err, d->errlen, "slot %u (%s) at 0x%zx falls through into slot %u "
			    "(no ret/jmp/ud2 within 32 bytes)", d->n, d->name, d->base, d->n + 1);
	op = img[pc];
#define NEED(k) do { if (pc + (k) > d->end) \
	return fail(d->err, d->errlen, "slot %u (%s): instruction at 0x%zx runs past the slot end", \
		    d->n, d->name, at); } while (0)
	if (op >= 0x50 && op <= 0x57) {
		append(si->text, sizeof(si->text), "push %%%s", reg32[op - 0x50]);
		d->pc += 1;
	} else if (op >= 0x58 && op <= 0x5f) {
		append(si->text, sizeof(si->text), "pop %%%s", reg32[op - 0x58]);
		d->pc += 1;
	} else if (op >= 0xb8 && op <= 0xbf) {
		uint32_t imm;

		NEED(5);
		imm = rd32(img + pc + 1);
		append(si->text, sizeof(si->text), "mov $0x%x,%%%s", imm, reg32[op - 0xb8]);
		if (op - 0xb8 == EDI)
			d->edi_imm = (int)imm;
		if (op - 0xb8 == EAX)
			d->eax_imm = (int)imm;
		d->pc += 5;
	} else if (op == 0x8b) {
		/* only mov disp8(%esp),reg: modrm mod=01 rm=100, sib 0x24 */
		NEED(4);
		if ((img[pc + 1] & 0xc7) != 0x44 || img[pc + 2] != 0x24)
			return fail(d->err, d->errlen, "slot %u (%s): unexpected mov form 8b %02x %02x at 0x%zx",
				    d->n, d->name, img[pc + 1], img[pc + 2], at);
		append(si->text, sizeof(si->text), "mov %d(%%esp),%%%s",
		       (int8_t)img[pc + 3], reg32[(img[pc + 1] >> 3) & 7]);
		si->stack_words++;
		d->pc += 4;
	} else if (op == 0xcd) {
		NEED(2);
		append(si->text, sizeof(si->text), "int $0x%x", img[pc + 1]);
		if (img[pc + 1] != VMI_HYPERCALL_VECTOR)
			return fail(d->err, d->errlen, "slot %u (%s): int $0x%x at 0x%zx, the hypercall vector is 0x%x",
				    d->n, d->name, img[pc + 1], at, VMI_HYPERCALL_VECTOR);
		d->saw_int = 1;
		d->pc += 2;
	} else if (op == 0xc3) {
		append(si->text, sizeof(si->text), "ret");
		d->pc += 1;
		si->cls = SLOT_HYPERCALL;
		return 1;
	} else if (op == 0x0f && pc + 1 < d->end && img[pc + 1] == 0x0b) {
		append(si->text, sizeof(si->text), "ud2");
		d->pc += 2;
		si->cls = SLOT_NORETURN;
		return 1;
	} else if (op == 0xe9 || op == 0xeb) {
		int32_t rel;

		NEED(op == 0xe9 ? 5 : 2);
		rel = op == 0xe9 ? (int32_t)rd32(img + pc + 1) : (int8_t)img[pc + 1];
		d->pc += op == 0xe9 ? 5 : 2;
		si->jmp_target = (uint32_t)((int64_t)d->pc + rel);
		append(si->text, sizeof(si->text), "jmp 0x%x", si->jmp_target);
		si->cls = d->eax_imm >= 0 ? SLOT_UNSUPPORTED : SLOT_JUMP;
		return 1;
	} else {
		return fail(d->err, d->errlen, "slot %u (%s): unknown opcode 0x%02x at 0x%zx; "
			    "cannot prove the slot stays in its 32 bytes", d->n, d->name, op, at);
	}
#undef NEED
	return 0;
}

/* After the last instruction: int3 padding, the call number the slot
 * passes, and where it jumps. */
static int check_decoded(const struct slot_decoder *d, size_t len)
{
	const struct slot_info *si = d->si;

	for (size_t pc = d->pc; pc < d->end; pc++)
		if (d->img[pc] != 0xcc)
			return fail(d->err, d->errlen, "slot %u (%s): byte 0x%02x at 0x%zx after the last "
				    "instruction; padding must be int3 (0xcc)", d->n, d->name, d->img[pc], pc);
	/* The call number handed to the hypervisor must be this slot's. */
	if ((si->cls == SLOT_HYPERCALL || si->cls == SLOT_NORETURN) &&
	    (!d->saw_int || d->edi_imm != (int)d->n))
		return fail(d->err, d->errlen, "slot %u (%s): passes call number %d in edi%s",
			    d->n, d->name, d->edi_imm, d->saw_int ? "" : " and makes no hypercall");
	if (si->cls == SLOT_UNSUPPORTED && d->eax_imm != (int)d->n)
		return fail(d->err, d->errlen, "slot %u (%s): reports slot %d as unsupported",
			    d->n, d->name, d->eax_imm);
	if ((si->cls == SLOT_UNSUPPORTED || si->cls == SLOT_JUMP) &&
	    (si->jmp_target < (uint32_t)NUM_VMI_CALLS * VROM_CALL_LEN || si->jmp_target >= len))
		return fail(d->err, d->errlen, "slot %u (%s): jumps to 0x%x, outside the ROM body "
			    "0x%x-0x%zx", d->n, d->name, si->jmp_target,
			    NUM_VMI_CALLS * VROM_CALL_LEN, len);
	return 0;
}

int romcheck_decode_slot(const uint8_t *img, size_t len, unsigned int n,
			 struct slot_info *si, char *err, size_t errlen)
{
	struct slot_decoder d = {
		.img = img, .base = (size_t)n * VROM_CALL_LEN, .n = n,
		.name = n < NUM_VMI_CALLS ? defs[n].name : "?",
		.edi_imm = -1, .eax_imm = -1, .si = si, .err = err, .errlen = errlen,
	};
	int r;

	d.end = d.base + VROM_CALL_LEN;
	d.pc = d.base;
	memset(si, 0, sizeof(*si));
	si->n = n;
	if (n == 0) {
		si->cls = SLOT_HEADER;
		snprintf(si->text, sizeof(si->text), "VROMHeader fields");
		return 0;
	}
	if (d.end > len)
		return fail(err, errlen, "slot %u (%s) at 0x%zx lies beyond the %zu-byte image",
			    n, d.name, d.base, len);
	while (!(r = decode_insn(&d)))
		;
	if (r < 0)
		return -1;
	si->code_len = (unsigned int)(d.pc - d.base);
	return check_decoded(&d, len);
}

/* The class each definition kind must produce. */
static enum slot_class expected_class(int kind)
{
	switch (kind) {
	case VMI_KIND_HEADER: return SLOT_HEADER;
	case VMI_KIND_RESERVED:
	case VMI_KIND_UNSUPPORTED: return SLOT_UNSUPPORTED;
	case VMI_KIND_FAST:
	case VMI_KIND_FASTNORETURN: return SLOT_JUMP;
	case VMI_KIND_NORETURN: return SLOT_NORETURN;
	default: return SLOT_HYPERCALL;	/* hc, native */
	}
}

static int verify_pcir(const uint8_t *img, size_t len, char *err, size_t errlen)
{
	const VROMHeader *h = (const VROMHeader *)img;
	size_t off = h->pciHeaderOffset;
	const uint8_t *p = img + off;

	if (off == 0 || off % 4 || off + 0x18 > len)
		return fail(err, errlen, "pciHeaderOffset 0x%zx is not a 4-aligned offset inside "
			    "the %zu-byte image", off, len);
	if (memcmp(p, "PCIR", 4))
		return fail(err, errlen, "no 'PCIR' signature at pciHeaderOffset 0x%zx", off);
	if (rd16(p + 0x0a) < 0x18 || off + rd16(p + 0x0a) > len)
		return fail(err, errlen, "PCIR structure length 0x%x invalid", rd16(p + 0x0a));
	if (rd16(p + 0x10) != (uint8_t)h->romLength)
		return fail(err, errlen, "PCIR image length %u differs from romLength %u",
			    rd16(p + 0x10), (uint8_t)h->romLength);
	if (p[0x14] != 0)
		return fail(err, errlen, "PCIR code type %u, expected 0 (x86 PC-AT)", p[0x14]);
	if (!(p[0x15] & 0x80))
		return fail(err, errlen, "PCIR indicator 0x%02x lacks the last-image bit", p[0x15]);
	return 0;
}

static int string_ok(const uint8_t *img, size_t len, unsigned int off)
{
	if (off == 0 || off >= len)
		return 0;
	return memchr(img + off, 0, len - off) != NULL;
}

static int verify_pnp(const uint8_t *img, size_t len, char *err, size_t errlen)
{
	const VROMHeader *h = (const VROMHeader *)img;
	size_t off = h->pnpHeaderOffset, size;
	const uint8_t *p = img + off;

	if (off == 0 || off % 16 || off + 0x20 > len)
		return fail(err, errlen, "pnpHeaderOffset 0x%zx is not a 16-aligned offset inside "
			    "the %zu-byte image", off, len);
	if (memcmp(p, "$PnP", 4))
		return fail(err, errlen, "no '$PnP' signature at pnpHeaderOffset 0x%zx", off);
	if (p[4] != 1)
		return fail(err, errlen, "$PnP structure revision %u, expected 1", p[4]);
	size = (size_t)p[5] * 16;
	if (size < 0x20 || off + size > len)
		return fail(err, errlen, "$PnP length %zu bytes invalid", size);
	if (romcheck_sum(p, size))
		return fail(err, errlen, "$PnP header checksum wrong (sum 0x%02x, must be 0)",
			    romcheck_sum(p, size));
	if (!string_ok(img, len, rd16(p + 0x0e)) || !string_ok(img, len, rd16(p + 0x10)))
		return fail(err, errlen, "$PnP manufacturer/product string pointers invalid");
	return 0;
}

int romcheck_verify(const uint8_t *img, size_t len, char *err, size_t errlen)
{
	const VROMHeader *h = (const VROMHeader *)img;
	size_t table = (size_t)NUM_VMI_CALLS * VROM_CALL_LEN;
	struct slot_info si;

	if (len < table + 1)
		return fail(err, errlen, "image is %zu bytes, too small for the header and %d slots",
			    len, NUM_VMI_CALLS);
	if (len % 512 || len > ROMCHECK_MAX_IMAGE)
		return fail(err, errlen, "image size %zu is not a multiple of 512 up to %d",
			    len, ROMCHECK_MAX_IMAGE);
	if (h->romSignature != VROM_SIGNATURE)
		return fail(err, errlen, "bad option ROM signature 0x%04x, expected 0x%04x",
			    h->romSignature, VROM_SIGNATURE);
	if ((size_t)(uint8_t)h->romLength * 512 != len)
		return fail(err, errlen, "romLength %u (x512 = %u bytes) does not match the %zu-byte image",
			    (uint8_t)h->romLength, (uint8_t)h->romLength * 512, len);
	if (h->vRomSignature != VMI_SIGNATURE)
		return fail(err, errlen, "bad VMI signature 0x%08x, expected 0x%08x ('cVmi')",
			    h->vRomSignature, VMI_SIGNATURE);
	if (h->APIVersionMajor != VMI_API_REV_MAJOR || h->APIVersionMinor != VMI_API_REV_MINOR)
		return fail(err, errlen, "API version %u.%u, expected %u.%u", h->APIVersionMajor,
			    h->APIVersionMinor, VMI_API_REV_MAJOR, VMI_API_REV_MINOR);
	if (romcheck_sum(img, len))
		return fail(err, errlen, "checksum wrong: bytes sum to 0x%02x, must be 0x00",
			    romcheck_sum(img, len));
	if (verify_pcir(img, len, err, errlen) || verify_pnp(img, len, err, errlen))
		return -1;
	if (h->pciHeaderOffset < table || h->pnpHeaderOffset < table)
		return fail(err, errlen, "PCI/PnP headers overlap the slot table (ends 0x%zx)", table);

	for (unsigned int n = 0; n < NUM_VMI_CALLS; n++) {
		if (romcheck_decode_slot(img, len, n, &si, err, errlen))
			return -1;
		if (si.cls != expected_class(defs[n].kind))
			return fail(err, errlen, "slot %u (%s) is a %s, the ABI definition wants a %s",
				    n, defs[n].name, romcheck_class_name(si.cls),
				    romcheck_class_name(expected_class(defs[n].kind)));
		if (si.cls == SLOT_HYPERCALL && si.stack_words != defs[n].stack_words)
			return fail(err, errlen, "slot %u (%s) passes %u stack words, the definition says %u",
				    n, defs[n].name, si.stack_words, defs[n].stack_words);
	}
	return 0;
}

int romcheck_seal(uint8_t *buf, size_t cap, size_t *len, char *err, size_t errlen)
{
	VROMHeader *h = (VROMHeader *)buf;
	size_t size = (*len / 512 + 1) * 512;	/* always room for the checksum byte */
	uint8_t *pcir, *pnp;

	if (*len < sizeof(VROMHeader))
		return fail(err, errlen, "linked blob of %zu bytes has no header", *len);
	if (size > cap || size > ROMCHECK_MAX_IMAGE)
		return fail(err, errlen, "sealed image would be %zu bytes, limit %d",
			    size, ROMCHECK_MAX_IMAGE);
	memset(buf + *len, 0, size - *len);
	if (h->pciHeaderOffset + 0x18u > size || h->pnpHeaderOffset + 0x20u > size)
		return fail(err, errlen, "PCI/PnP header offsets point outside the image");
	h->romLength = (int8_t)(size / 512);
	pcir = buf + h->pciHeaderOffset;
	pcir[0x10] = (uint8_t)(size / 512);
	pcir[0x11] = (uint8_t)(size / 512 >> 8);
	pnp = buf + h->pnpHeaderOffset;
	pnp[9] = 0;
	pnp[9] = (uint8_t)-romcheck_sum(pnp, (size_t)pnp[5] * 16);
	buf[size - 1] = 0;
	buf[size - 1] = (uint8_t)-romcheck_sum(buf, size);
	*len = size;
	return 0;
}
