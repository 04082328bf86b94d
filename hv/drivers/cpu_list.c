/*
 * cpu_list.c - the machine's processors, from the ACPI MADT or, where
 * there is none, the Intel MP table (MultiProcessor Specification 1.4).
 * SeaBIOS provides both.  The parsers take the table's bytes and length
 * and trust nothing in them: every entry must fit in what is left.
 */
#include "cpu_list.h"
#include "acpi.h"
#include "hvlib.h"

#define MADT_ENTRIES_AT   44	/* header 36, local APIC address 4, flags 4 */
#define MADT_LOCAL_APIC   0
#define MADT_LOCAL_X2APIC 9
#define MADT_ENABLED      1u
#define MADT_ONLINE_CAPABLE 2u	/* ACPI 6.3: may be enabled later: not by us */

#define MP_CONFIG_HEADER  44
#define MP_PROCESSOR      0
#define MP_CPU_ENABLED    1u

static void add(struct cpu_list *out, uint32_t apic_id, bool enabled)
{
	for (unsigned i = 0; i < out->n; i++)
		if (out->cpu[i].apic_id == apic_id)
			return;		/* listed twice (x2APIC and xAPIC): once */
	if (apic_id > 255 || out->n == CPU_LIST_MAX) {
		out->left_out++;
		return;
	}
	out->cpu[out->n++] = (struct cpu_list_entry){ (uint8_t)apic_id, enabled };
}

uint32_t cpu_list_le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

bool cpu_list_from_madt(const void *madt, uint32_t length, struct cpu_list *out)
{
	const uint8_t *t = madt;

	*out = (struct cpu_list){ .source = "ACPI MADT" };
	if (length < MADT_ENTRIES_AT)
		return false;
	for (uint32_t at = MADT_ENTRIES_AT; at < length;) {
		uint8_t type, len;

		if (length - at < 2)
			return false;
		type = t[at];
		len = t[at + 1];
		if (len < 2 || len > length - at)
			return false;
		if (type == MADT_LOCAL_APIC && len >= 8)
			add(out, t[at + 3], cpu_list_le32(t + at + 4) & MADT_ENABLED);
		else if (type == MADT_LOCAL_X2APIC && len >= 16)
			add(out, cpu_list_le32(t + at + 4), cpu_list_le32(t + at + 8) & MADT_ENABLED);
		at += len;
	}
	return true;
}

/* Entry sizes of the MP configuration table, by type. */
static uint32_t mp_entry_size(uint8_t type)
{
	switch (type) {
	case 0: return 20;		/* processor */
	case 1: case 2: case 3: case 4: return 8;	/* bus, I/O APIC, interrupts */
	default: return 0;
	}
}

bool cpu_list_from_mp_config(const void *config, uint32_t length, struct cpu_list *out)
{
	const uint8_t *t = config;
	uint32_t count;

	*out = (struct cpu_list){ .source = "MP table" };
	if (length < MP_CONFIG_HEADER || memcmp(t, "PCMP", 4))
		return false;
	count = t[34] | t[35] << 8;
	for (uint32_t i = 0, at = MP_CONFIG_HEADER; i < count; i++) {
		uint32_t size;

		if (at >= length || !(size = mp_entry_size(t[at])) || size > length - at)
			return false;
		if (t[at] == MP_PROCESSOR)
			add(out, t[at + 1], t[at + 3] & MP_CPU_ENABLED);
		at += size;
	}
	return true;
}
