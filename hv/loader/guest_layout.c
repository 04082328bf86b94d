/* guest_layout.c - guest-physical placement, e820, zero page. */
#include "guest_layout.h"
#include "layout.h"
#include "hvlib.h"

unsigned e820_build(uint64_t mem, struct e820_entry *out, unsigned max)
{
	static const struct e820_entry low[] = {
		{ 0, GUEST_LOW_RAM_END, E820_RAM },
		{ GUEST_VGA_HOLE, GUEST_ROM_GPA - GUEST_VGA_HOLE, E820_RESERVED },
		{ GUEST_ROM_GPA, GUEST_HIGH_RAM_START - GUEST_ROM_GPA, E820_RESERVED },
	};

	if (mem <= GUEST_HIGH_RAM_START || max < 4)
		return 0;
	for (unsigned i = 0; i < 3; i++)
		out[i] = low[i];
	out[3].addr = GUEST_HIGH_RAM_START;
	out[3].size = mem - GUEST_HIGH_RAM_START;
	out[3].type = E820_RAM;
	return 4;
}

const char *e820_type_name(uint32_t type)
{
	return type == E820_RAM ? "RAM" : type == E820_RESERVED ? "reserved" : "?";
}

static bool fail(char *why, size_t whylen, const char *fmt, uint64_t a,
		 uint64_t b)
{
	fmt_snprintf(why, whylen, fmt, a, b);
	return false;
}

bool guest_plan_build(const struct bzimage_info *bi, uint64_t mem,
		      uint32_t initrd_size, size_t cmdline_len,
		      struct guest_plan *plan, char *why, size_t whylen)
{
	uint64_t top;

	memset(plan, 0, sizeof(*plan));
	plan->mem = mem;
	plan->kernel_gpa = GUEST_KERNEL_GPA;
	plan->kernel_size = bi->pm_size;
	plan->kernel_end = bzimage_footprint_end(bi, GUEST_KERNEL_GPA);
	plan->entry = bi->code32_start;
	plan->boot_params_gpa = GUEST_BOOT_PARAMS_GPA;
	plan->cmdline_gpa = GUEST_CMDLINE_GPA;
	plan->cmdline_len = (uint32_t)cmdline_len;

	if (cmdline_len > bi->cmdline_size || cmdline_len >= GUEST_CMDLINE_MAX)
		return fail(why, whylen,
			    "the guest command line is %llu bytes; this kernel takes at most %llu",
			    cmdline_len, bi->cmdline_size < GUEST_CMDLINE_MAX - 1 ?
			    bi->cmdline_size : GUEST_CMDLINE_MAX - 1);
	if (plan->kernel_end > mem)
		return fail(why, whylen,
			    "the kernel needs guest memory up to %llu KiB (with room to decompress), guest_mem is %llu KiB",
			    plan->kernel_end / 1024, mem / 1024);
	if (initrd_size == 0)
		return fail(why, whylen, "the initrd module is empty", 0, 0);
	if (initrd_size > mem)
		return fail(why, whylen,
			    "the initrd (%llu KiB) is larger than guest memory (%llu KiB)",
			    initrd_size / 1024, mem / 1024);

	/* boot.rst: as high as possible, below initrd_addr_max and RAM top. */
	top = mem;
	if ((uint64_t)bi->initrd_addr_max + 1 < top)
		top = (uint64_t)bi->initrd_addr_max + 1;
	if (initrd_size > top ||
	    ALIGN_DOWN(top - initrd_size, (uint64_t)HV_PAGE_SIZE) < plan->kernel_end)
		return fail(why, whylen,
			    "the initrd (%llu KiB) does not fit between the kernel and the top of guest memory (%llu KiB free there)",
			    initrd_size / 1024,
			    top > plan->kernel_end ? (top - plan->kernel_end) / 1024 : 0);
	plan->initrd_size = initrd_size;
	plan->initrd_gpa = (uint32_t)ALIGN_DOWN(top - initrd_size, (uint64_t)HV_PAGE_SIZE);

	plan->e820_count = e820_build(mem, plan->e820, GUEST_E820_MAX);
	if (!plan->e820_count)
		return fail(why, whylen, "guest memory of %llu bytes is too small", mem, 0);
	return true;
}

void boot_params_fill(uint8_t *bp, const uint8_t *image,
		      const struct bzimage_info *bi, const struct guest_plan *plan)
{

	memset(bp, 0, BP_SIZE);
	/* The setup header comes from the image, 0x1F1 up to its end. */
	memcpy(bp + BP_HDR, image + BP_HDR, bi->header_end - BP_HDR);

	bp[HDR_TYPE_OF_LOADER] = 0xff;		/* "undefined" loader */
	bp[HDR_LOADFLAGS] = (uint8_t)((bp[HDR_LOADFLAGS] | LOADFLAG_LOADED_HIGH) &
				      ~(LOADFLAG_CAN_USE_HEAP | LOADFLAG_KEEP_SEGMENTS));
	put16(bp + HDR_VID_MODE, 0xffff);	/* "normal" */
	put32(bp + HDR_CODE32_START, plan->entry);
	put32(bp + HDR_CMD_LINE_PTR, plan->cmdline_gpa);
	put32(bp + HDR_RAMDISK_IMAGE, plan->initrd_gpa);
	put32(bp + HDR_RAMDISK_SIZE, plan->initrd_size);
	put32(bp + BP_ALT_MEM_K, (uint32_t)((plan->mem - GUEST_HIGH_RAM_START) / 1024));

	/* screen_info stays zero: no VGA text screen (0 columns, 0 lines),
	 * so Linux's vgacon steps aside for the dummy console.  The guest has
	 * no VGA: its 0xB8000 is its own memory, and every VGA register
	 * access would be a denied port (about 1,900 per boot).  Its serial
	 * console is what the hypervisor draws on the real screen (textterm.c). */

	bp[BP_E820_ENTRIES] = (uint8_t)plan->e820_count;
	for (unsigned i = 0; i < plan->e820_count; i++) {
		uint8_t *e = bp + BP_E820_TABLE + i * 20;

		put64(e, plan->e820[i].addr);
		put64(e + 8, plan->e820[i].size);
		put32(e + 16, plan->e820[i].type);
	}
}
