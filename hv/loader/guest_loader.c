/*
 * guest_loader.c - build a guest from its pair of multiboot modules
 * (guest_set.c decides the pairs):
 *   the bzImage; its module string (after the path) is the guest command
 *             line;
 *   the initrd, the module after it.
 * Everything is checked before anything is copied, and the result is
 * read back from guest memory and checked again afterwards.
 */
#include "guest.h"
#include "layout.h"
#include "mp_table.h"
#include "io.h"
#include "machine_mem.h"
#include "vrom_check.h"
#include "console.h"
#include "stop.h"
#include "hvlib.h"
#include <stdarg.h>

extern const uint8_t vrom_image[], vrom_image_end[];

/* The ROM publishes the size of the top hole the guest must leave us
 * (VROMHeader.reserved2); vrom's ABI file and layout.h must agree. */
#include "vmi_abi.h"
#include "vcpu_layout.h"
_Static_assert(VMI_DEFAULT_RESERVED_TOP == HV_TOP_RESERVED_SIZE,
	       "vrom/abi and hv/include/layout.h disagree on the reserved top");
#define VROM_RESERVED_TOP_OFFSET VMI_OFF_VROMHeader_reserved2

/*
 * The module's path, for messages.  A path longer than the buffer keeps its
 * tail ("...long/dir/bzImage"): the file name is the part a user needs.
 */
static const char *module_name(const struct multiboot_module *m, unsigned index,
			       bool path_first, char *buf, size_t len)
{
	const char *s = m->string ? (const char *)m->string : "";
	const char *args = skip_image_path(s, path_first);
	size_t n = 0, skip = 0;

	while (*s == ' ')
		s++;
	while (s + n < args && s[n] && s[n] != ' ')
		n++;
	if (!n) {
		fmt_snprintf(buf, len, "module %u", index);
		return buf;
	}
	if (n + 1 > len)
		skip = n - (len - 4);
	fmt_snprintf(buf, len, "%s%.*s", skip ? "..." : "", (int)(n - skip), s + skip);
	return buf;
}

static void print_plan(const struct guest *g, const char *cmdline, unsigned nr_vcpus)
{
	const struct guest_plan *p = &g->plan;

	log_info("guest memory map (e820 in the zero page):");
	for (unsigned i = 0; i < p->e820_count; i++)
		kprintf("    %08llx-%08llx %s\n", p->e820[i].addr,
			p->e820[i].addr + p->e820[i].size - 1,
			e820_type_name(p->e820[i].type));
	log_info("guest-physical placement:");
	kprintf("    %08x-%08x boot_params (zero page)\n", p->boot_params_gpa,
		p->boot_params_gpa + BP_SIZE - 1);
	kprintf("    %08x-%08x command line (%u bytes): %s\n", p->cmdline_gpa,
		p->cmdline_gpa + p->cmdline_len, p->cmdline_len, cmdline);
	if (g->has_vrom)
		kprintf("    %08x-%08x VMI ROM\n", GUEST_ROM_GPA,
			GUEST_ROM_GPA + (uint32_t)(vrom_image_end - vrom_image) - 1);
	kprintf("    %08x-%08x MP table (%u vCPU%s)\n", GUEST_MP_TABLE_GPA,
		GUEST_MP_TABLE_GPA + (uint32_t)mp_table_size(nr_vcpus) - 1, nr_vcpus,
		nr_vcpus == 1 ? "" : "s");
	kprintf("    %08x-%08x protected-mode kernel (%u bytes); with decompression up to %08llx\n",
		p->kernel_gpa, p->kernel_gpa + p->kernel_size - 1, p->kernel_size,
		p->kernel_end - 1);
	kprintf("    %08x-%08x initrd (%u bytes)\n", p->initrd_gpa,
		p->initrd_gpa + p->initrd_size - 1, p->initrd_size);
	log_info("guest entry: eip=%08x esi=%08x (boot_params), cs=0x10 ds=0x18 flat, paging off",
		 g->boot.eip, g->boot.esi);
}

static void print_image(const struct bzimage_info *bi, const char *name)
{
	log_info("guest kernel %s: Linux boot protocol %u.%02u, version \"%s\"",
		 name, bi->protocol >> 8, bi->protocol & 0xff,
		 bi->version[0] ? bi->version : "unknown");
	log_info("  setup %u sectors (%u bytes), protected-mode kernel %u bytes at file offset 0x%x",
		 bi->setup_sects, bi->setup_size, bi->pm_size, bi->pm_offset);
	log_info("  loadflags 0x%02x, code32_start 0x%08x, %srelocatable (alignment 0x%x), pref_address 0x%llx",
		 bi->loadflags, bi->code32_start, bi->relocatable ? "" : "not ",
		 bi->kernel_alignment, bi->pref_address);
	log_info("  init_size 0x%x, initrd_addr_max 0x%08x, cmdline_size %u",
		 bi->init_size, bi->initrd_addr_max, bi->cmdline_size);
}

/* Compare guest memory with what should be there, 4 KiB at a time. */
static bool guest_matches(const struct guest_mem *gm, uint32_t gpa,
			  const uint8_t *want, uint32_t len)
{
	static uint8_t buf[HV_PAGE_SIZE];

	for (uint32_t off = 0; off < len; off += sizeof(buf)) {
		uint32_t n = len - off < sizeof(buf) ? len - off : sizeof(buf);

		guest_mem_read(gm, gpa + off, buf, n);
		if (memcmp(buf, want + off, n))
			return false;
	}
	return true;
}

/*
 * The MP table, where a BIOS puts it (0xF0000, reserved in the e820):
 * Linux counts its vCPUs there (docs/SMP.md, "The MP table").  The
 * processor entries carry the CPU's signature; their feature flags stay
 * 0, as the guest reads its features from its CPUID (vcpu_cpuid).  Built
 * again, the same, to be read back.
 */
static size_t mp_table_for(unsigned nr_vcpus, uint8_t *buf, size_t len)
{
	uint32_t signature, b, c, d;
	size_t n;

	cpuid(1, 0, &signature, &b, &c, &d);
	n = mp_table_build(buf, len, GUEST_MP_TABLE_GPA, nr_vcpus, signature, 0);
	HV_ASSERT(n);
	return n;
}

static void place_mp_table(struct guest *g, unsigned nr_vcpus)
{
	uint8_t table[GUEST_MP_TABLE_END - GUEST_MP_TABLE_GPA];

	guest_mem_write(&g->mem, GUEST_MP_TABLE_GPA, table,
			mp_table_for(nr_vcpus, table, sizeof(table)));
}

static bool mp_table_reads_back(const struct guest *g, unsigned nr_vcpus)
{
	uint8_t table[GUEST_MP_TABLE_END - GUEST_MP_TABLE_GPA];

	return guest_matches(&g->mem, GUEST_MP_TABLE_GPA, table,
			     (uint32_t)mp_table_for(nr_vcpus, table, sizeof(table)));
}

/* The guest's copy of the ROM, built here before it is copied in. */
static uint8_t rom_copy[GUEST_ROM_AREA_END - GUEST_ROM_GPA];

/*
 * Publish the per-vCPU shared page in the guest's copy of the ROM
 * (VROMHeader.reserved3, 0 in the image) and keep the ROM's byte sum zero
 * by taking the new bytes off the checksum byte, the last one.  The page
 * itself is in the switcher (vcpu_layout.h); its features word says which
 * fast paths the ROM may take.
 */
static void publish_shared_page(uint8_t *rom, uint32_t len)
{
	const uint32_t addr = HV_VCPU_SHARED_PAGE;
	uint8_t bytes[4] = { addr & 0xff, addr >> 8 & 0xff, addr >> 16 & 0xff, addr >> 24 };

	HV_ASSERT(le32(vrom_image + VMI_OFF_VROMHeader_reserved3) == 0);
	memcpy(rom + VMI_OFF_VROMHeader_reserved3, bytes, 4);
	rom[len - 1] = (uint8_t)(rom[len - 1] - bytes[0] - bytes[1] - bytes[2] - bytes[3]);
}

/*
 * vmi_refuse=: each refused call's slot in this guest's copy made the
 * unsupported form (vrom_refuse_call keeps the sum zero); the reports
 * those slots make are answered (hypercall.c).  Only this guest's copy
 * changes: every guest has its own.
 */
static void refuse_calls(struct guest *g, uint8_t *rom, uint32_t len)
{
	char why[160];

	for (unsigned c = 0; c < NUM_VMI_CALLS; c++) {
		if (!vmi_refused(&g->refuse, c))
			continue;
		if (!vrom_refuse_call(rom, len, c, why, sizeof(why)))
			hv_panic("vmi_refuse=%s: %s", vmi_call_name(c), why);
		log_info("VMI ROM: call %u (%s) refused in this guest's copy (vmi_refuse=): its slot answers unsupported",
			 c, vmi_call_name(c));
	}
}

/* The guest's ROM reads back as built; and as a whole it must still pass
 * the option-ROM checks. */
static bool rom_reads_back(const struct guest *g)
{
	const uint32_t len = (uint32_t)(vrom_image_end - vrom_image), r3 = VMI_OFF_VROMHeader_reserved3;
	struct vrom_info info;
	char why[160];

	if (!guest_matches(&g->mem, GUEST_ROM_GPA, rom_copy, len))
		return false;
	if (le32(rom_copy + r3) != HV_VCPU_SHARED_PAGE)
		return false;
	if (!vrom_check(rom_copy, len, sizeof(rom_copy), &info, why, sizeof(why)))
		hv_panic("the guest's copy of the VMI ROM: %s", why);
	return true;
}

static void place_vrom(struct guest *g)
{
	uint32_t len = (uint32_t)(vrom_image_end - vrom_image);
	struct vrom_info info;
	char why[160];

	if (!len) {
		log_warn("this build has no VMI ROM (build/vrom/vmi.rom was missing): the guest will find none and boot natively");
		g->has_vrom = false;
		return;
	}
	if (!vrom_check(vrom_image, len, GUEST_ROM_AREA_END - GUEST_ROM_GPA,
			&info, why, sizeof(why)))
		hv_panic("embedded %s", why);
	if (le32(vrom_image + VROM_RESERVED_TOP_OFFSET) != HV_TOP_RESERVED_SIZE)
		hv_panic("embedded VMI ROM publishes a reserved top of 0x%x bytes; the hypervisor needs 0x%x",
			 le32(vrom_image + VROM_RESERVED_TOP_OFFSET), HV_TOP_RESERVED_SIZE);
	memcpy(rom_copy, vrom_image, len);
	publish_shared_page(rom_copy, len);
	refuse_calls(g, rom_copy, len);
	guest_mem_write(&g->mem, GUEST_ROM_GPA, rom_copy, len);
	g->has_vrom = true;
	log_info("VMI ROM: API %u.%u, %u bytes, reserved top %u MiB, placed at guest-physical %08x",
		 info.api_major, info.api_minor, info.size,
		 HV_TOP_RESERVED_SIZE >> 20, GUEST_ROM_GPA);
}

struct guest *guest_create(const char *name)
{
	struct guest *g = alloc_zeroed(sizeof(*g));

	fmt_snprintf(g->name, sizeof(g->name), "%s", name);
	return g;
}

/* A bad input: with several guests the line names the guest it is about. */
__attribute__((noreturn, format(printf, 3, 4)))
static void load_fail(const struct guest_spec *spec, unsigned nr_guests, const char *fmt, ...)
{
	char msg[240];
	va_list ap;

	va_start(ap, fmt);
	fmt_vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (nr_guests > 1)
		hv_fail("guest %u (%s): %s", spec->number, spec->name, msg);
	hv_fail("%s", msg);
	__builtin_unreachable();
}

/* One guest's load as it goes: its module pair and what was found in it. */
struct load {
	const struct guest_spec *spec;
	unsigned nr_guests;
	const struct multiboot_module *mods;	/* the pair: kernel, initrd */
	const uint8_t *kernel, *initrd;
	uint32_t kernel_len, initrd_len;
	struct bzimage_info bi;
	const char *cmdline;
};

#define fail_load(l, ...) load_fail((l)->spec, (l)->nr_guests, __VA_ARGS__)

/* The record zeroed (its name kept, its lock free), its budget, the
 * options it runs with. */
static void reset_guest(struct guest *g, const struct hv_options *opt, const struct guest_spec *spec)
{
	char name[sizeof(g->name)];

	memcpy(name, g->name, sizeof(name));
	memset(g, 0, sizeof(*g));
	memcpy(g->name, name, sizeof(name));
	g->lock = (struct spinlock)SPINLOCK_INIT("guest_lock", LOCK_RANK_GUEST);
	/* Its frame budget (docs/MEMORY.md, "Frame budgets"), backed by the
	 * frames the loader keeps free per guest; the record itself
	 * (guest_create) is the guest's. */
	frame_budget_init(&g->budget, HV_RESERVED_FRAMES,
			  (uint32_t)((sizeof(*g) + HV_PAGE_SIZE - 1) / HV_PAGE_SIZE));
	g->fastpaths = opt->fastpaths;
	g->strict_pt = opt->strict_pt;
	g->vcpus_at_once = opt->vcpus_at_once;
	g->refuse = opt->guests[spec->number - 1].refuse.given ? opt->guests[spec->number - 1].refuse : opt->refuse;
	g->audit.opt = opt->audit;
	g->weight = spec->weight;
	g->cpus = spec->cpus;
}

/* The pair of modules there, the kernel a bzImage we load, its command line. */
static void find_modules(const struct multiboot_info *mbi, struct load *l)
{
	const unsigned k = l->spec->kernel_module;
	char why[200], kname[96], iname[96];
	bool path_first;

	if (!(mbi->flags & MBI_FLAG_MODS) || mbi->mods_count <= k)
		fail_load(l, "no guest kernel: the boot loader passed no modules "
			  "(expected module 1 = bzImage with the guest command line, module 2 = initrd)");
	path_first = loader_puts_path_first(mbi->flags & MBI_FLAG_LOADER ?
					    (const char *)mbi->boot_loader_name : NULL);
	l->mods = (const struct multiboot_module *)mbi->mods_addr + k;
	module_name(&l->mods[0], k + 1, path_first, kname, sizeof(kname));
	l->kernel = (const uint8_t *)l->mods[0].mod_start;
	l->kernel_len = l->mods[0].mod_end - l->mods[0].mod_start;
	if (l->mods[0].mod_end < l->mods[0].mod_start)
		fail_load(l, "guest kernel (%s): module end lies before its start", kname);
	if (!bzimage_parse(l->kernel, l->kernel_len, &l->bi, why, sizeof(why)))
		fail_load(l, "guest kernel (%s): %s", kname, why);
	print_image(&l->bi, kname);

	if (mbi->mods_count < k + 2)
		fail_load(l, "no initrd: the boot loader passed only the kernel (module %u must be the initrd)",
			  k + 2);
	module_name(&l->mods[1], k + 2, path_first, iname, sizeof(iname));
	l->initrd = (const uint8_t *)l->mods[1].mod_start;
	l->initrd_len = l->mods[1].mod_end - l->mods[1].mod_start;
	if (l->mods[1].mod_end < l->mods[1].mod_start)
		fail_load(l, "initrd (%s): module end lies before its start", iname);
	l->cmdline = skip_image_path(l->mods[0].string ? (const char *)l->mods[0].string : "",
				     path_first);
}

/* The guest's size: the default shrinks to fit a small machine; a size
 * given on the command line is taken at its word (and may fail later). */
static uint64_t memory_size(const struct load *l)
{
	uint64_t mem_size = l->spec->mem;

	if (!l->spec->mem_given && mem_size > guest_mem_available()) {
		mem_size = ALIGN_DOWN(guest_mem_available(), 4ull << 20);
		if (mem_size < GUEST_MEM_MIN)
			fail_load(l, "not enough memory for a guest: %llu KiB available, at least %u MiB needed",
				  guest_mem_available() / 1024, GUEST_MEM_MIN >> 20);
		log_warn("guest_mem not given and the default %u MiB does not fit: using %llu MiB",
			 GUEST_MEM_DEFAULT >> 20, mem_size >> 20);
	}
	return mem_size;
}

/* Everything in: the zero page, the command line, the kernel, the initrd, the ROM. */
static void copy_in(struct guest *g, const struct load *l, uint8_t *zero_page)
{
	boot_params_fill(zero_page, l->kernel, &l->bi, &g->plan);
	guest_mem_write(&g->mem, g->plan.boot_params_gpa, zero_page, BP_SIZE);
	guest_mem_write(&g->mem, g->plan.cmdline_gpa, l->cmdline, g->plan.cmdline_len + 1);
	guest_mem_write(&g->mem, g->plan.kernel_gpa, l->kernel + l->bi.pm_offset, l->bi.pm_size);
	guest_mem_write(&g->mem, g->plan.initrd_gpa, l->initrd, l->initrd_len);
	place_vrom(g);
	place_mp_table(g, l->spec->vcpus);
	g->boot.eip = g->plan.entry;
	g->boot.esi = g->plan.boot_params_gpa;
	memcpy(g->kernel_version, l->bi.version, sizeof(g->kernel_version));
}

/* What the guest will see, read back from its memory. */
static void check_read_back(struct guest *g, const struct load *l, uint8_t *zero_page)
{
	if (!guest_matches(&g->mem, g->plan.kernel_gpa, l->kernel + l->bi.pm_offset, l->bi.pm_size) ||
	    !guest_matches(&g->mem, g->plan.initrd_gpa, l->initrd, l->initrd_len) ||
	    !guest_matches(&g->mem, g->plan.boot_params_gpa, zero_page, BP_SIZE) ||
	    !guest_matches(&g->mem, g->plan.cmdline_gpa, (const uint8_t *)l->cmdline,
			   g->plan.cmdline_len + 1) ||
	    !mp_table_reads_back(g, l->spec->vcpus) ||
	    (g->has_vrom && !rom_reads_back(g)))
		hv_panic("guest memory does not read back what the loader wrote");
	guest_mem_read(&g->mem, g->plan.boot_params_gpa, zero_page, BP_SIZE);
	if (zero_page[BP_E820_ENTRIES] != g->plan.e820_count ||
	    le32(zero_page + HDR_RAMDISK_IMAGE) != g->plan.initrd_gpa ||
	    le32(zero_page + HDR_CMD_LINE_PTR) != g->plan.cmdline_gpa ||
	    le32(zero_page + HDR_HEADER) != HDRS_MAGIC)
		hv_panic("the zero page in guest memory is inconsistent");
}

void guest_load(const struct multiboot_info *mbi, const struct hv_options *opt,
		const struct guest_spec *spec, unsigned nr_guests, struct guest *g)
{
	struct load l = { .spec = spec, .nr_guests = nr_guests };
	static uint8_t zero_page[BP_SIZE];
	uint64_t mem_size;
	char why[200];

	reset_guest(g, opt, spec);
	find_modules(mbi, &l);
	mem_size = memory_size(&l);
	if (!guest_plan_build(&l.bi, mem_size, l.initrd_len, strlen(l.cmdline),
			      &g->plan, why, sizeof(why)))
		fail_load(&l, "%s", why);
	if (!guest_mem_alloc(&g->mem, mem_size, why, sizeof(why)))
		fail_load(&l, "%s", why);
	log_info("guest memory: %llu MiB in %u machine extent%s, page list at machine %08x",
		 g->mem.size >> 20, g->mem.extents, g->mem.extents == 1 ? "" : "s",
		 virt_to_phys(g->mem.p2m));
	copy_in(g, &l, zero_page);
	check_read_back(g, &l, zero_page);
	print_plan(g, l.cmdline, spec->vcpus);
	g->mbi = mbi;
	g->spec = *spec;
	g->nr_guests = nr_guests;
	/* Its modules are where a reboot loads it from again: kept. */
	log_info("guest loaded and checked; its modules kept for a reboot, %u KiB free",
		 machine_free_bytes_kib());
}

void guest_reload(struct guest *g)
{
	struct load l = { .spec = &g->spec, .nr_guests = g->nr_guests };
	static uint8_t zero_page[BP_SIZE];

	find_modules(g->mbi, &l);
	guest_mem_zero(&g->mem);
	copy_in(g, &l, zero_page);
	check_read_back(g, &l, zero_page);
}
