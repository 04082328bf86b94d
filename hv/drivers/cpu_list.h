/*
 * cpu_list.h - which processors the machine has, from the ACPI MADT or
 * the Intel MP table (hv/drivers/cpu_list.c: the parsers are pure and
 * unit-tested, tests/unit/test_cpu_list.c; the search for the tables is
 * cpu_find.c's cpu_list_find()).
 */
#ifndef VMI_HV_CPU_LIST_H
#define VMI_HV_CPU_LIST_H

#include <stdint.h>
#include <stdbool.h>

#define CPU_LIST_MAX 16

struct cpu_list_entry {
	uint8_t apic_id;
	bool enabled;		/* the firmware says it may be started */
};

struct cpu_list {
	const char *source;	/* "ACPI MADT", "MP table", or 0: neither */
	unsigned n;
	struct cpu_list_entry cpu[CPU_LIST_MAX];
	unsigned left_out;	/* beyond CPU_LIST_MAX, or x2APIC IDs above 255 */
};

/* The MADT's processor entries (type 0; type 9 x2APIC ones only with an
 * ID below 256).  false when the table is malformed (an entry shorter
 * than its header, or running past the table's end). */
bool cpu_list_from_madt(const void *madt, uint32_t length, struct cpu_list *out);
/* The MP configuration table's processor entries (type 0).  false when
 * the table is malformed or an entry type is unknown (its size is). */
bool cpu_list_from_mp_config(const void *config, uint32_t length, struct cpu_list *out);

/* Little-endian 32 bits at p (table fields need not be aligned). */
uint32_t cpu_list_le32(const uint8_t *p);

/* The machine's list: the MADT if there is one, else the MP table, else
 * none (source 0, n 0).  Boot CPU, at start-up. */
void cpu_list_find(struct cpu_list *out);

#endif
