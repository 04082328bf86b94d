/*
 * The Intel MultiProcessor table a guest finds its vCPUs in (MP spec 1.4):
 * a floating pointer structure, then a configuration table with one
 * processor entry per vCPU (APIC IDs 0..N-1, vCPU 0 the bootstrap
 * processor) and the ISA bus, no I/O APIC: the 8259 stays wired to
 * vCPU 0 (virtual-wire mode).  docs/SMP.md, "The MP table".
 *
 * Pure: the loader copies what mp_table_build() writes into guest memory.
 */
#ifndef HV_MP_TABLE_H
#define HV_MP_TABLE_H

#include <stddef.h>
#include <stdint.h>

#define MP_FLOATING_LEN		16	/* "_MP_" floating pointer structure */
#define MP_CONFIG_HEADER_LEN	44	/* "PCMP" configuration table header */
#define MP_PROCESSOR_ENTRY_LEN	20
#define MP_BUS_ENTRY_LEN	8
#define MP_ENTRY_PROCESSOR	0
#define MP_ENTRY_BUS		1
#define MP_CPU_ENABLED		0x01
#define MP_CPU_BOOTSTRAP	0x02
#define MP_SPEC_REV		4	/* MP spec 1.4 */
#define MP_LAPIC_ADDR		0xfee00000u	/* the xAPIC's default base (APICRead/APICWrite's offsets) */
#define MP_LAPIC_VERSION	0x14	/* as the virtual local APIC reports (dev/vlapic.c) */
#define MP_MAX_CPUS		255

/* Bytes the table of nr_cpus processors takes, floating pointer included. */
static inline size_t mp_table_size(unsigned nr_cpus)
{
	return MP_FLOATING_LEN + MP_CONFIG_HEADER_LEN +
	       (size_t)nr_cpus * MP_PROCESSOR_ENTRY_LEN + MP_BUS_ENTRY_LEN;
}

/*
 * Write the floating pointer at buf (to sit at guest-physical gpa, 16-byte
 * aligned) and the configuration table right after it.  cpu_signature and
 * cpu_features are CPUID leaf 1's EAX and EDX, as a BIOS puts them in each
 * processor entry.  Returns the bytes written, or 0 (nothing written) when
 * nr_cpus is 0 or above MP_MAX_CPUS, gpa is not 16-byte aligned, or the
 * table does not fit in len bytes or below 4 GiB.
 */
size_t mp_table_build(uint8_t *buf, size_t len, uint32_t gpa, unsigned nr_cpus,
		      uint32_t cpu_signature, uint32_t cpu_features);

#endif
