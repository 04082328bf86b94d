/*
 * acpi_poweroff.c - power the machine off through ACPI: sleep state S5
 * ("soft off"), entered by writing the \_S5 sleep type with SLP_EN to the
 * FADT's PM1a control block (and PM1b's, if there is one).  ACPI 6.4,
 * 7.4.2 and 16.1.
 *
 * The hypervisor does it when its run ends cleanly on a machine without
 * QEMU's isa-debug-exit (stop.c; docs/HV.md, "Power-off and reboot"): the
 * last guest powered off, or 'q' on the console.  What the tables say is
 * read by acpi_sleep.c; this file does the I/O.  Where there is no ACPI,
 * or the machine is still running a second later, it says so and returns:
 * the caller halts.
 */
#include "acpi.h"
#include "acpi_sleep.h"
#include "acpi_poweroff.h"
#include "layout.h"
#include "log.h"
#include "io.h"
#include "tsc.h"
#include "hvlib.h"

/* The DSDT the FADT names, mapped, with its signature and checksum right. */
static const struct acpi_header *dsdt_at(uint64_t phys)
{
	const struct acpi_header *h;

	if (phys < 0x1000 || phys + sizeof(*h) > HV_DIRECT_MAP_END)
		return 0;
	h = (const struct acpi_header *)(uint32_t)phys;
	if (memcmp(h->signature, "DSDT", 4) || h->length < sizeof(*h) ||
	    phys + h->length > HV_DIRECT_MAP_END || acpi_checksum(h, h->length))
		return 0;
	return h;
}

static bool waited_us(uint64_t start, uint64_t us)
{
	return tsc_to_us(rdtsc() - start) >= us;
}

/* Into ACPI mode (SCI_EN) if the firmware left the machine in legacy mode. */
static void enable_acpi_mode(const struct acpi_fadt_power *pw)
{
	uint64_t start = rdtsc();

	if ((inw(pw->pm1a_cnt) & ACPI_PM1_SCI_EN) || !pw->smi_cmd || !pw->acpi_enable)
		return;
	outb(pw->smi_cmd, pw->acpi_enable);
	while (!(inw(pw->pm1a_cnt) & ACPI_PM1_SCI_EN) && !waited_us(start, 300000))
		;
}

static void write_sleep_type(uint16_t port, uint8_t typ, uint16_t enable)
{
	uint16_t v = inw(port) & ~(ACPI_PM1_SLP_TYP_MASK | ACPI_PM1_SLP_EN);

	outw(port, v | (uint16_t)((typ << ACPI_PM1_SLP_TYP_SHIFT) & ACPI_PM1_SLP_TYP_MASK) | enable);
}

void acpi_power_off(void)
{
	const struct acpi_header *fadt = acpi_find_table("FACP"), *dsdt;
	struct acpi_fadt_power pw;
	const char *why = 0;
	uint8_t typa, typb;
	uint64_t start;

	if (!fadt) {
		kprintf("vmi-hv: cannot power the machine off: %s; halted\n",
			acpi_rsdp_address() ? "its ACPI tables have no FADT" : "the machine has no ACPI tables");
		return;
	}
	if (!acpi_fadt_power((const uint8_t *)fadt, fadt->length, &pw, &why)) {
		kprintf("vmi-hv: cannot power the machine off: %s; halted\n", why);
		return;
	}
	dsdt = dsdt_at(pw.dsdt);
	if (!dsdt) {
		kprintf("vmi-hv: cannot power the machine off: the FADT's DSDT at %08llx is unmapped or invalid; halted\n",
			(unsigned long long)pw.dsdt);
		return;
	}
	if (!acpi_s5_sleep_types((const uint8_t *)(dsdt + 1), dsdt->length - sizeof(*dsdt), &typa, &typb)) {
		kprintf("vmi-hv: cannot power the machine off: the DSDT has no \\_S5 package; halted\n");
		return;
	}
	enable_acpi_mode(&pw);
	kprintf("vmi-hv: powering the machine off (ACPI S5: PM1a control port 0x%x, SLP_TYPa %u",
		pw.pm1a_cnt, typa);
	if (pw.pm1b_cnt)
		kprintf("; PM1b 0x%x, SLP_TYPb %u", pw.pm1b_cnt, typb);
	kprintf(")\n");
	write_sleep_type(pw.pm1a_cnt, typa, 0);
	if (pw.pm1b_cnt)
		write_sleep_type(pw.pm1b_cnt, typb, 0);
	write_sleep_type(pw.pm1a_cnt, typa, ACPI_PM1_SLP_EN);
	if (pw.pm1b_cnt)
		write_sleep_type(pw.pm1b_cnt, typb, ACPI_PM1_SLP_EN);
	start = rdtsc();
	while (!waited_us(start, 1000000))
		;
	kprintf("vmi-hv: the machine is still on a second after the ACPI S5 request; halted\n");
}
