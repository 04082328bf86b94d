/*
 * cpu_find.c - where the machine's processor list comes from: the ACPI
 * MADT (acpi.c finds it) or the MP table's floating pointer in the BIOS
 * areas.  The tables are parsed by cpu_list.c.
 */
#include "cpu_list.h"
#include "acpi.h"
#include "address_space.h"
#include "layout.h"
#include "log.h"
#include "hvlib.h"

#define MP_CONFIG_HEADER 44	/* the configuration table's header */

/* "_MP_" floating pointer: first KiB of the EBDA, the last KiB of base
 * memory, or the BIOS area 0xF0000-0xFFFFF (MP spec 4.0). */
static const uint8_t *mp_floating_in(uint32_t start, uint32_t end)
{
	for (uint32_t a = start; a + 16 <= end; a += 16) {
		const uint8_t *p = (const uint8_t *)a;

		if (!memcmp(p, "_MP_", 4) && p[8] == 1 && !acpi_checksum(p, 16))
			return p;
	}
	return 0;
}

static void from_mp_table(struct cpu_list *out)
{
	uint16_t ebda_segment;
	uint32_t ebda, config_at;
	const uint8_t *fp = 0, *config;

	page_zero_read(0x40E, &ebda_segment, sizeof(ebda_segment));
	ebda = (uint32_t)ebda_segment << 4;
	if (ebda >= 0x1000 && ebda < GUEST_LOW_RAM_END)
		fp = mp_floating_in(ebda, ebda + 1024);
	if (!fp)
		fp = mp_floating_in(GUEST_LOW_RAM_END - 1024, GUEST_LOW_RAM_END);
	if (!fp)
		fp = mp_floating_in(0xF0000, 0x100000);
	if (!fp)
		return;
	config_at = cpu_list_le32(fp + 4);
	if (fp[11]) {
		log_warn("MP table: default configuration %u, not a table: not used", fp[11]);
		return;
	}
	if (config_at < 0x1000 || config_at + MP_CONFIG_HEADER > HV_DIRECT_MAP_END)
		return;
	config = (const uint8_t *)config_at;
	if (config_at + (config[4] | config[5] << 8) > HV_DIRECT_MAP_END ||
	    acpi_checksum(config, config[4] | config[5] << 8) ||
	    !cpu_list_from_mp_config(config, config[4] | config[5] << 8, out)) {
		log_warn("MP table at %08x is malformed: not used", config_at);
		*out = (struct cpu_list){ 0 };
	}
}

void cpu_list_find(struct cpu_list *out)
{
	const struct acpi_header *madt = acpi_find_table("APIC");

	*out = (struct cpu_list){ 0 };
	if (madt) {
		if (cpu_list_from_madt(madt, madt->length, out))
			return;
		log_warn("ACPI MADT is malformed: trying the MP table");
		*out = (struct cpu_list){ 0 };
	}
	from_mp_table(out);
}
