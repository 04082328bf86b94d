/*
 * acpi_sleep.h - what the machine's ACPI tables say about powering it
 * off (hv/drivers/acpi_sleep.c, pure, tests/unit/test_acpi_sleep.c): the
 * FADT's PM1 control blocks and the sleep types of the DSDT's \_S5
 * package.  Every length is checked against the table's own.
 */
#ifndef VMI_HV_ACPI_SLEEP_H
#define VMI_HV_ACPI_SLEEP_H

#include <stdint.h>
#include <stdbool.h>

/* From the FADT ("FACP"); the 64-bit fields (X_DSDT, X_PM1a/b_CNT_BLK in
 * system I/O space) are preferred where the table has them. */
struct acpi_fadt_power {
	uint64_t dsdt;			/* physical address, 0 if none */
	uint16_t pm1a_cnt, pm1b_cnt;	/* I/O ports, 0 if none */
	uint16_t smi_cmd;		/* SMI command port (ACPI mode), 0 if none */
	uint8_t acpi_enable;		/* the value that enables ACPI mode */
};

/* false (with why) if the FADT is too short or has no PM1a control block. */
bool acpi_fadt_power(const uint8_t *fadt, uint32_t len, struct acpi_fadt_power *out,
		     const char **why);

/* The sleep types of \_S5 in a DSDT's (or SSDT's) AML: the package
 * `Name (_S5, Package () { SLP_TYPa, SLP_TYPb, ... })`, its first two
 * elements integers (Zero, One, Ones, or Byte/Word/DWord constants).
 * false if there is none or it is malformed. */
bool acpi_s5_sleep_types(const uint8_t *aml, uint32_t len, uint8_t *typa, uint8_t *typb);

/* PM1 control: SLP_TYP (bits 10-12) and SLP_EN (bit 13); SCI_EN (bit 0)
 * says the machine is in ACPI mode. */
#define ACPI_PM1_SCI_EN		0x0001u
#define ACPI_PM1_SLP_TYP_SHIFT	10
#define ACPI_PM1_SLP_TYP_MASK	0x1c00u
#define ACPI_PM1_SLP_EN		0x2000u

#endif
