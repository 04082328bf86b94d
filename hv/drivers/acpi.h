/*
 * acpi.h - the machine's ACPI tables, found and checked
 * (hv/drivers/acpi.c).  Read-only: the hypervisor uses the MADT (which
 * CPUs there are) and the FADT (how to power the machine off).
 */
#ifndef VMI_HV_ACPI_H
#define VMI_HV_ACPI_H

#include <stdint.h>

/* The header every ACPI system description table starts with. */
struct acpi_header {
	char signature[4];
	uint32_t length;
	uint8_t revision;
	uint8_t checksum;
	char oem_id[6];
	char oem_table_id[8];
	uint32_t oem_revision;
	uint32_t creator_id;
	uint32_t creator_revision;
} __attribute__((packed));

/* The table with this signature ("APIC", "FACP", ...) from the RSDT or
 * XSDT, its checksum verified; NULL when there is no ACPI, no such table,
 * or it lies beyond what the hypervisor maps.  The first call searches. */
const struct acpi_header *acpi_find_table(const char signature[4]);

/* Where the RSDP was, 0 without one (for the boot log). */
uint32_t acpi_rsdp_address(void);

/* Sum of the bytes mod 256 (0 for a valid ACPI or MP structure). */
uint8_t acpi_checksum(const void *p, uint32_t len);

#endif
