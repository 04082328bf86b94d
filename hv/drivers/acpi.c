/*
 * acpi.c - find the machine's ACPI tables.
 *
 * The RSDP ("RSD PTR ") lies on a 16-byte boundary in the first KiB of
 * the EBDA or in the BIOS area 0xE0000-0xFFFFF (ACPI 6.4, 5.2.5.1).  It
 * names the RSDT (32-bit table addresses) and, from revision 2, the XSDT
 * (64-bit ones), which we prefer.  Every structure's checksum is checked
 * before we believe a byte of it; a table that lies beyond the
 * hypervisor's identity map is left out, with a warning.
 *
 * The search runs once, on the boot CPU at start-up; afterwards the
 * results are only read.
 */
#include "acpi.h"
#include "address_space.h"
#include "layout.h"
#include "log.h"
#include "hvlib.h"

struct rsdp {
	char signature[8];
	uint8_t checksum;
	char oem_id[6];
	uint8_t revision;
	uint32_t rsdt;
	uint32_t length;		/* revision >= 2 from here */
	uint64_t xsdt;
	uint8_t extended_checksum;
	uint8_t reserved[3];
} __attribute__((packed));

#define RSDP_V1_LENGTH 20
#define BIOS_AREA_START 0xE0000
#define BIOS_AREA_END   0x100000
#define EBDA_SEGMENT_AT 0x40E
#define MAX_TABLES 64

static struct {
	bool searched;
	uint32_t rsdp_at;
	unsigned n;
	const struct acpi_header *tables[MAX_TABLES];
} acpi;

uint8_t acpi_checksum(const void *p, uint32_t len)
{
	const uint8_t *b = p;
	uint8_t sum = 0;

	while (len--)
		sum += *b++;
	return sum;
}

static const struct rsdp *rsdp_in(uint32_t start, uint32_t end)
{
	for (uint32_t a = start; a + RSDP_V1_LENGTH <= end; a += 16) {
		const struct rsdp *r = (const struct rsdp *)a;

		if (memcmp(r->signature, "RSD PTR ", 8) || acpi_checksum(r, RSDP_V1_LENGTH))
			continue;
		if (r->revision >= 2 &&
		    (r->length < sizeof(*r) || r->length > BIOS_AREA_END - a ||
		     acpi_checksum(r, r->length)))
			continue;
		return r;
	}
	return 0;
}

static const struct rsdp *find_rsdp(void)
{
	uint16_t ebda_segment;
	uint32_t ebda;
	const struct rsdp *r;

	page_zero_read(EBDA_SEGMENT_AT, &ebda_segment, sizeof(ebda_segment));
	ebda = (uint32_t)ebda_segment << 4;
	if (ebda >= 0x1000 && ebda < GUEST_LOW_RAM_END && (r = rsdp_in(ebda, ebda + 1024)))
		return r;
	return rsdp_in(BIOS_AREA_START, BIOS_AREA_END);
}

/* A table at phys whose header and whole length we map and whose
 * checksum is right; NULL otherwise. */
static const struct acpi_header *table_at(uint64_t phys)
{
	const struct acpi_header *h;

	if (phys < 0x1000 || phys + sizeof(*h) > HV_DIRECT_MAP_END)
		return 0;
	h = (const struct acpi_header *)(uint32_t)phys;
	if (h->length < sizeof(*h) || phys + h->length > HV_DIRECT_MAP_END ||
	    acpi_checksum(h, h->length))
		return 0;
	return h;
}

static void add_table(uint64_t phys)
{
	const struct acpi_header *t = table_at(phys);

	if (!t) {
		log_warn("ACPI: the table at %08llx is unmapped or its checksum is wrong: left out",
			 (unsigned long long)phys);
		return;
	}
	if (acpi.n < MAX_TABLES)
		acpi.tables[acpi.n++] = t;
}

static void search(void)
{
	const struct rsdp *r = find_rsdp();
	const struct acpi_header *root;
	unsigned entry_size, count;
	const uint8_t *entries;

	acpi.searched = true;
	if (!r)
		return;
	acpi.rsdp_at = (uint32_t)r;
	entry_size = r->revision >= 2 && r->xsdt ? 8 : 4;
	root = table_at(entry_size == 8 ? r->xsdt : r->rsdt);
	if (!root || memcmp(root->signature, entry_size == 8 ? "XSDT" : "RSDT", 4)) {
		log_warn("ACPI: RSDP at %08x names no valid %s: ACPI tables not used",
			 acpi.rsdp_at, entry_size == 8 ? "XSDT" : "RSDT");
		return;
	}
	entries = (const uint8_t *)(root + 1);
	count = (root->length - sizeof(*root)) / entry_size;
	for (unsigned i = 0; i < count; i++) {
		uint64_t phys = 0;

		memcpy(&phys, entries + i * entry_size, entry_size);
		add_table(phys);
	}
}

const struct acpi_header *acpi_find_table(const char signature[4])
{
	if (!acpi.searched)
		search();
	for (unsigned i = 0; i < acpi.n; i++)
		if (!memcmp(acpi.tables[i]->signature, signature, 4))
			return acpi.tables[i];
	return 0;
}

uint32_t acpi_rsdp_address(void)
{
	if (!acpi.searched)
		search();
	return acpi.rsdp_at;
}
