/*
 * The guest's MP table (mp_table.h): what a PC BIOS publishes so that an
 * operating system without ACPI counts its processors.  Linux scans the
 * first KiB, the last KiB of base memory and 0xF0000-0xFFFFF for the
 * floating pointer ("_MP_"), follows it to the configuration table
 * ("PCMP"), checks both checksums (every byte of each adds up to 0 mod
 * 256) and registers each enabled processor entry's APIC ID.
 */
#include "hvlib.h"
#include "mp_table.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

/* The byte that makes len bytes (the checksum byte counted as 0) sum to 0. */
static uint8_t checksum(const uint8_t *p, size_t len)
{
	uint8_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum = (uint8_t)(sum + p[i]);
	return (uint8_t)-sum;
}

size_t mp_table_build(uint8_t *buf, size_t len, uint32_t gpa, unsigned nr_cpus,
		      uint32_t cpu_signature, uint32_t cpu_features)
{
	const size_t size = mp_table_size(nr_cpus);
	const size_t config_len = size - MP_FLOATING_LEN;
	uint8_t *mpf = buf, *mpc = buf + MP_FLOATING_LEN, *e;

	if (nr_cpus == 0 || nr_cpus > MP_MAX_CPUS || gpa % 16 || size > len ||
	    gpa > UINT32_MAX - size)
		return 0;
	memset(buf, 0, size);

	/* Floating pointer: the configuration table follows it; feature
	 * byte 1 = 0 (a table, not a default configuration), feature byte 2
	 * bit 7 clear (no IMCR: virtual-wire mode, the 8259 through LINT0). */
	memcpy(mpf, "_MP_", 4);
	put32(mpf + 4, gpa + MP_FLOATING_LEN);
	mpf[8] = 1;			/* length in 16-byte units */
	mpf[9] = MP_SPEC_REV;

	memcpy(mpc, "PCMP", 4);
	put16(mpc + 4, (uint16_t)config_len);
	mpc[6] = MP_SPEC_REV;
	memcpy(mpc + 8, "VMI-HV  ", 8);		/* OEM ID */
	memcpy(mpc + 16, "VMI GUEST   ", 12);	/* product ID */
	put16(mpc + 34, (uint16_t)(nr_cpus + 1));	/* entries */
	put32(mpc + 36, MP_LAPIC_ADDR);

	e = mpc + MP_CONFIG_HEADER_LEN;
	for (unsigned i = 0; i < nr_cpus; i++, e += MP_PROCESSOR_ENTRY_LEN) {
		e[0] = MP_ENTRY_PROCESSOR;
		e[1] = (uint8_t)i;		/* APIC ID = vCPU index */
		e[2] = MP_LAPIC_VERSION;
		e[3] = MP_CPU_ENABLED | (i == 0 ? MP_CPU_BOOTSTRAP : 0);
		put32(e + 4, cpu_signature);
		put32(e + 8, cpu_features);
	}
	e[0] = MP_ENTRY_BUS;
	e[1] = 0;
	memcpy(e + 2, "ISA   ", 6);

	mpc[7] = checksum(mpc, config_len);
	mpf[10] = checksum(mpf, MP_FLOATING_LEN);
	return size;
}
