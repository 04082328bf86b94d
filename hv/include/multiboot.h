/* multiboot.h - the parts of the Multiboot 0.6.96 information we read. */
#ifndef VMI_HV_MULTIBOOT_H
#define VMI_HV_MULTIBOOT_H

#include <stdint.h>

#define MULTIBOOT_LOADER_MAGIC  0x2BADB002

#define MBI_FLAG_MEM      (1u << 0)
#define MBI_FLAG_CMDLINE  (1u << 2)
#define MBI_FLAG_MODS     (1u << 3)
#define MBI_FLAG_MMAP     (1u << 6)
#define MBI_FLAG_LOADER   (1u << 9)

struct multiboot_info {
	uint32_t flags;
	uint32_t mem_lower, mem_upper;
	uint32_t boot_device;
	uint32_t cmdline;
	uint32_t mods_count, mods_addr;
	uint32_t syms[4];
	uint32_t mmap_length, mmap_addr;
	uint32_t drives_length, drives_addr;
	uint32_t config_table;
	uint32_t boot_loader_name;
} __attribute__((packed));

struct multiboot_module {
	uint32_t mod_start, mod_end;	/* [start, end) physical */
	uint32_t string;
	uint32_t reserved;
} __attribute__((packed));

/* Each entry is preceded by its own size (not counting the size field). */
struct multiboot_mmap_entry {
	uint32_t size;
	uint64_t addr, len;
	uint32_t type;
} __attribute__((packed));

#define MULTIBOOT_MEMORY_AVAILABLE 1

#endif
