/*
 * acpi_sleep.c - read the machine's ACPI tables for powering it off
 * (pure: tests/unit/test_acpi_sleep.c): the FADT's PM1 control blocks and
 * the \_S5 package's sleep types.
 *
 * The \_S5 object is AML, which we do not interpret: as most small kernels
 * do, we look for the name "_S5_" declared by NameOp (0x08, possibly with
 * the root prefix '\') and read the PackageOp (0x12) that follows:
 * PkgLength (1-4 bytes), NumElements, then the elements.  ACPI 6.4,
 * 4.8.5 (FADT), 7.4.2 (\_Sx), 20.2 (AML grammar).
 */
#include "acpi_sleep.h"

/* FADT offsets (ACPI 6.4, table 5.9). */
#define FADT_DSDT		40
#define FADT_SMI_CMD		48
#define FADT_ACPI_ENABLE	52
#define FADT_PM1A_CNT_BLK	64
#define FADT_PM1B_CNT_BLK	68
#define FADT_X_DSDT		140
#define FADT_X_PM1A_CNT_BLK	172	/* a 12-byte Generic Address Structure */
#define FADT_X_PM1B_CNT_BLK	184
#define GAS_SYSTEM_IO		1

static uint32_t rd32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* A 64-bit PM1 control block in I/O space below 64 KiB, else the 32-bit one. */
static uint16_t pm1_port(const uint8_t *fadt, uint32_t len, unsigned x_off, unsigned off)
{
	if (len >= x_off + 12 && fadt[x_off] == GAS_SYSTEM_IO) {
		uint64_t a = rd64(fadt + x_off + 4);

		if (a && a <= 0xffff)
			return (uint16_t)a;
	}
	return rd32(fadt + off) <= 0xffff ? (uint16_t)rd32(fadt + off) : 0;
}

bool acpi_fadt_power(const uint8_t *fadt, uint32_t len, struct acpi_fadt_power *out,
		     const char **why)
{
	if (len < FADT_PM1B_CNT_BLK + 4) {
		*why = "the FADT is too short for its PM1 control blocks";
		return false;
	}
	out->dsdt = len >= FADT_X_DSDT + 8 && rd64(fadt + FADT_X_DSDT) ? rd64(fadt + FADT_X_DSDT) :
		    rd32(fadt + FADT_DSDT);
	out->pm1a_cnt = pm1_port(fadt, len, FADT_X_PM1A_CNT_BLK, FADT_PM1A_CNT_BLK);
	out->pm1b_cnt = pm1_port(fadt, len, FADT_X_PM1B_CNT_BLK, FADT_PM1B_CNT_BLK);
	out->smi_cmd = rd32(fadt + FADT_SMI_CMD) <= 0xffff ? (uint16_t)rd32(fadt + FADT_SMI_CMD) : 0;
	out->acpi_enable = fadt[FADT_ACPI_ENABLE];
	if (!out->pm1a_cnt) {
		*why = "the FADT names no PM1a control block in I/O space";
		return false;
	}
	return true;
}

/* One integer element at p (end: the package's end): its value and length. */
static bool aml_integer(const uint8_t *p, const uint8_t *end, uint8_t *val, unsigned *n)
{
	if (p >= end)
		return false;
	switch (*p) {
	case 0x00: *val = 0; *n = 1; return true;		/* ZeroOp */
	case 0x01: *val = 1; *n = 1; return true;		/* OneOp */
	case 0xff: *val = 0xff; *n = 1; return true;		/* OnesOp */
	case 0x0a: *n = 2; break;				/* BytePrefix */
	case 0x0b: *n = 3; break;				/* WordPrefix */
	case 0x0c: *n = 5; break;				/* DWordPrefix */
	default: return false;
	}
	if (end - p < (long)*n)
		return false;
	*val = p[1];	/* sleep types are 3 bits: the low byte holds them */
	return true;
}

bool acpi_s5_sleep_types(const uint8_t *aml, uint32_t len, uint8_t *typa, uint8_t *typb)
{
	for (uint32_t i = 1; i + 4 < len; i++) {
		const uint8_t *p = aml + i, *end = aml + len, *pkg_end;
		unsigned lead, extra, n;
		uint32_t pkg_len;

		if (p[0] != '_' || p[1] != 'S' || p[2] != '5' || p[3] != '_')
			continue;
		if (!(p[-1] == 0x08 || (p[-1] == '\\' && i >= 2 && p[-2] == 0x08)))
			continue;
		p += 4;
		if (p >= end || *p++ != 0x12)			/* PackageOp */
			continue;
		if (p >= end)
			return false;
		lead = *p;
		extra = lead >> 6;
		if (end - p < (long)(extra + 2))
			return false;
		pkg_len = extra ? lead & 0x0f : lead & 0x3f;
		for (unsigned b = 0; b < extra; b++)
			pkg_len |= (uint32_t)p[1 + b] << (4 + 8 * b);
		if (pkg_len < extra + 2 || pkg_len > (uint32_t)(end - p))
			return false;
		pkg_end = p + pkg_len;
		p += 1 + extra;
		if (*p++ < 2)					/* NumElements */
			return false;
		if (!aml_integer(p, pkg_end, typa, &n))
			return false;
		p += n;
		if (!aml_integer(p, pkg_end, typb, &n))
			return false;
		return true;
	}
	return false;
}
