/*
 * machine_mem.c - turn the multiboot memory map into the frame pool.
 *
 * Only frames below HV_DIRECT_MAP_END are used: the hypervisor reaches
 * every frame it hands out through its identity map.
 */
#include "machine_mem.h"
#include "layout.h"
#include "log.h"
#include "stop.h"
#include "hvlib.h"
#include "spinlock.h"

#define MAX_FRAMES (HV_DIRECT_MAP_END / HV_PAGE_SIZE)

struct frame_pool machine_frames;
static uint32_t frame_bitmap[FRAME_BITMAP_WORDS(MAX_FRAMES)];
/* Any CPU takes and gives back frames in exit handling (shadows, vTLB
 * tables, LDT copies) under its guest's lock: the pool is everyone's
 * (docs/ARCHITECTURE.md, "Who owns what on several CPUs"). */
static struct spinlock frames_lock = SPINLOCK_INIT("frames_lock", LOCK_RANK_FRAMES);

extern char __image_start[], __image_end[];

static const char *mmap_type_name(uint32_t type)
{
	switch (type) {
	case 1: return "available";
	case 2: return "reserved";
	case 3: return "ACPI reclaimable";
	case 4: return "ACPI NVS";
	case 5: return "bad";
	default: return "other";
	}
}

/* What the boot loader left below 1 MiB that we still read (the
 * multiboot information, the module list and strings): a started CPU's
 * real-mode page must not land on it.  And the RAM the map gives there. */
#define LOW_LIMIT 0x100000
#define LOW_MAX 64
struct range {
	uint64_t start, end;
};
struct low_memory {
	unsigned n_used, n_ram;
	struct range used[LOW_MAX], ram[8];
};
static struct low_memory low;

static void reserve(uint64_t start, uint64_t end, const char *what)
{
	uint32_t n = frames_reserve(&machine_frames, start, end);

	if (start < LOW_LIMIT && low.n_used < LOW_MAX && start != 0) {
		low.used[low.n_used].start = start;
		low.used[low.n_used++].end = end;
	}

	log_debug("reserved %08llx-%08llx (%u frames) %s", start, end, n, what);
}

void machine_mem_init(const struct multiboot_info *mbi)
{
	uint64_t ram = 0;

	frames_init(&machine_frames, frame_bitmap, MAX_FRAMES);
	if (!(mbi->flags & MBI_FLAG_MMAP))
		hv_fail("the boot loader passed no memory map (multiboot flag 6)");

	log_info("machine memory map (from the boot loader):");
	for (uint32_t off = 0; off < mbi->mmap_length;) {
		const struct multiboot_mmap_entry *e =
			(const void *)(mbi->mmap_addr + off);

		kprintf("    %016llx-%016llx %s\n", e->addr, e->addr + e->len - 1,
			mmap_type_name(e->type));
		if (e->type == MULTIBOOT_MEMORY_AVAILABLE) {
			frames_add_ram(&machine_frames, e->addr, e->addr + e->len);
			ram += e->len;
			if (e->addr < LOW_LIMIT && low.n_ram < 8) {
				low.ram[low.n_ram].start = e->addr;
				low.ram[low.n_ram++].end = e->addr + e->len;
			}
		}
		off += e->size + sizeof(e->size);
	}

	/* The first MiB holds the real-mode IVT, BIOS data, EBDA and ROMs;
	 * we need none of it, so we do not risk it. */
	reserve(0, 0x100000, "first MiB");
	reserve((uint32_t)__image_start, (uint32_t)__image_end, "hypervisor image");
	reserve((uint32_t)mbi, (uint32_t)mbi + sizeof(*mbi), "multiboot info");
	reserve(mbi->mmap_addr, mbi->mmap_addr + mbi->mmap_length, "memory map");
	if (mbi->flags & MBI_FLAG_CMDLINE)
		reserve(mbi->cmdline, mbi->cmdline + strlen((char *)mbi->cmdline) + 1,
			"command line");
	if (mbi->flags & MBI_FLAG_LOADER)
		reserve(mbi->boot_loader_name,
			mbi->boot_loader_name + strlen((char *)mbi->boot_loader_name) + 1,
			"loader name");
	if (mbi->flags & MBI_FLAG_MODS) {
		const struct multiboot_module *m = (const void *)mbi->mods_addr;

		reserve(mbi->mods_addr, mbi->mods_addr + mbi->mods_count * sizeof(*m),
			"module list");
		for (uint32_t i = 0; i < mbi->mods_count; i++) {
			log_info("module %u: %08x-%08x (%u bytes) \"%s\"", i + 1,
				 m[i].mod_start, m[i].mod_end,
				 m[i].mod_end - m[i].mod_start,
				 m[i].string ? (const char *)m[i].string : "");
			reserve(m[i].mod_start, m[i].mod_end, "module");
			if (m[i].string)
				reserve(m[i].string,
					m[i].string + strlen((char *)m[i].string) + 1,
					"module string");
		}
	}
	log_info("machine RAM %llu KiB; %u KiB free for the hypervisor and guests",
		 ram / 1024, machine_free_bytes_kib());
}

uint32_t machine_free_bytes_kib(void)
{
	return machine_frames.nfree * (HV_PAGE_SIZE / 1024);
}

bool machine_frame_alloc(uint32_t *pfn)
{
	uint32_t flags = spin_lock_irqsave(&frames_lock);
	bool ok = frames_alloc(&machine_frames, pfn);

	spin_unlock_irqrestore(&frames_lock, flags);
	return ok;
}

bool machine_frame_free(uint32_t pfn)
{
	uint32_t flags = spin_lock_irqsave(&frames_lock);
	bool ok = frames_free(&machine_frames, pfn);

	spin_unlock_irqrestore(&frames_lock, flags);
	return ok;
}

void *alloc_zeroed_page(void)
{
	uint32_t pfn;
	void *p;

	if (!machine_frame_alloc(&pfn))
		hv_panic("out of machine memory");
	p = phys_to_virt(pfn * HV_PAGE_SIZE);
	memset(p, 0, HV_PAGE_SIZE);
	return p;
}

void *alloc_zeroed(size_t bytes)
{
	uint32_t pages = (uint32_t)((bytes + HV_PAGE_SIZE - 1) / HV_PAGE_SIZE), pfn;
	uint32_t flags = spin_lock_irqsave(&frames_lock);
	bool ok = frames_alloc_contig(&machine_frames, pages, 1, &pfn);
	void *p;

	spin_unlock_irqrestore(&frames_lock, flags);
	if (!ok)
		hv_panic("out of machine memory (%u contiguous pages)", pages);
	p = phys_to_virt(pfn * HV_PAGE_SIZE);
	memset(p, 0, (size_t)pages * HV_PAGE_SIZE);
	return p;
}

uint32_t machine_mem_low_page(void)
{
	/* From 4 KiB (page 0 holds the real-mode IVT and BIOS data) to the
	 * EBDA's usual start: conventional memory the BIOS is done with. */
	for (uint32_t p = HV_PAGE_SIZE; p + HV_PAGE_SIZE <= 0x9f000; p += HV_PAGE_SIZE) {
		bool ram = false, used = false;

		for (unsigned i = 0; i < low.n_ram; i++)
			ram |= low.ram[i].start <= p && p + HV_PAGE_SIZE <= low.ram[i].end;
		for (unsigned i = 0; i < low.n_used; i++)
			used |= low.used[i].start < p + HV_PAGE_SIZE && p < low.used[i].end;
		if (ram && !used)
			return p;
	}
	return 0;
}
