/*
 * acpi_poweroff.h - the machine powered off through ACPI S5
 * (hv/drivers/acpi_poweroff.c).
 */
#ifndef VMI_HV_ACPI_POWEROFF_H
#define VMI_HV_ACPI_POWEROFF_H

/* Enter S5 (soft off).  Returns only if the machine could not be powered
 * off, having printed why ("vmi-hv: cannot power the machine off: ..."). */
void acpi_power_off(void);

#endif
