/* guest_set.c - which guests to load, and how big; see guest_set.h. */
#include "guest_set.h"
#include "layout.h"
#include "sched.h"
#include "hvlib.h"

#define PAGE 4096u
#define SHRINK_ALIGN (4ull << 20)

uint64_t guest_frames_needed(uint64_t mem, uint32_t reserve_frames)
{
	uint64_t pages = mem / PAGE;

	return pages + (pages * 4 + PAGE - 1) / PAGE + reserve_frames;
}

/* The largest size, a multiple of SHRINK_ALIGN, whose frames fit in
 * frames (0 if none does). */
static uint64_t largest_fitting(uint64_t frames, uint32_t reserve_frames)
{
	uint64_t lo = 0, hi = 0x100000000ull / SHRINK_ALIGN;	/* in SHRINK_ALIGN units */

	while (lo < hi) {
		uint64_t mid = (lo + hi + 1) / 2;

		if (guest_frames_needed(mid * SHRINK_ALIGN, reserve_frames) <= frames)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo * SHRINK_ALIGN;
}

static void name_guests(const struct hv_options *o, struct guest_spec *out, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		const struct guest_options *go = &o->guests[i];

		out[i].number = i + 1;
		out[i].kernel_module = 2 * i;
		if (go->name[0])
			memcpy(out[i].name, go->name, sizeof(out[i].name));
		else
			fmt_snprintf(out[i].name, sizeof(out[i].name), "guest%u", i + 1);
		out[i].weight = go->weight ? go->weight : 1;
		out[i].cpus = go->cpus;
		out[i].vcpus = go->vcpus ? go->vcpus : o->vcpus ? o->vcpus : 1;
		out[i].mem_given = go->mem || o->guest_mem_given;
		out[i].mem_given_by_user = true;
		out[i].mem = go->mem ? go->mem : o->guest_mem;
	}
}

static bool fail(char *err, size_t errlen, const struct guest_spec *g, const char *fmt, ...)
{
	va_list ap;
	size_t used = 0;

	if (g)
		used = (size_t)fmt_snprintf(err, errlen, "guest %u (%s): ", g->number, g->name);
	if (used >= errlen)
		return false;
	va_start(ap, fmt);
	fmt_vsnprintf(err + used, errlen - used, fmt, ap);
	va_end(ap);
	return false;
}

bool guest_set_plan(unsigned nr_modules, const struct hv_options *o,
		    uint64_t free_frames, uint32_t reserve_frames,
		    struct guest_spec out[HV_MAX_GUESTS], unsigned *nr_guests,
		    char *err, size_t errlen)
{
	unsigned n = nr_modules <= 2 ? 1 : (nr_modules + 1) / 2;
	uint64_t given = 0, left;
	unsigned defaults = 0, vcpus = 0;

	*nr_guests = 0;
	if (n > HV_MAX_GUESTS)
		return fail(err, errlen, 0,
			    "%u modules given: that is %u guests, at most %u (a bzImage and its initrd each)",
			    nr_modules, n, HV_MAX_GUESTS);
	for (unsigned i = n; i < HV_MAX_GUESTS; i++)
		if (o->guests[i].mem || o->guests[i].name[0] || o->guests[i].weight || o->guests[i].refuse.given ||
		    o->guests[i].cpus || o->guests[i].vcpus)
			return fail(err, errlen, 0,
				    "options for guest %u given, but the modules make %u guest%s",
				    i + 1, n, n == 1 ? "" : "s");
	name_guests(o, out, n);
	if (n > 1 && nr_modules % 2)
		return fail(err, errlen, &out[n - 1],
			    "no initrd: module %u, its bzImage, is the last one (modules pair up: bzImage, initrd, bzImage, initrd, ...)",
			    nr_modules);
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < i; j++)
			if (!strcmp(out[i].name, out[j].name))
				return fail(err, errlen, &out[i], "the name is guest %u's too",
					    out[j].number);
	for (unsigned i = 0; i < n; i++)
		vcpus += out[i].vcpus;
	if (vcpus > SCHED_MAX)
		return fail(err, errlen, 0, "the guests have %u vCPUs together; the scheduler takes at most %u",
			    vcpus, SCHED_MAX);
	*nr_guests = n;
	if (n == 1)
		return true;	/* the loader sizes a single guest, as it always has */

	/* Several guests: every size is decided here, so that a guest that
	 * does not fit is named before any is loaded. */
	for (unsigned i = 0; i < n; i++) {
		if (!out[i].mem_given) {
			defaults++;
			continue;
		}
		given += guest_frames_needed(out[i].mem, reserve_frames);
		if (given > free_frames)
			return fail(err, errlen, &out[i],
				    "%lluM of memory does not fit: %llu KiB free for all guests, each keeping %u KiB for the hypervisor",
				    (unsigned long long)(out[i].mem >> 20),
				    (unsigned long long)free_frames * 4, reserve_frames * 4);
	}
	left = free_frames - given;
	for (unsigned i = 0; i < n; i++) {
		uint64_t mem;

		if (out[i].mem_given)
			continue;
		mem = largest_fitting(left / defaults, reserve_frames);
		if (mem >= out[i].mem)
			mem = out[i].mem;
		else
			out[i].mem_given_by_user = false;
		if (mem < GUEST_MEM_MIN)
			return fail(err, errlen, &out[i],
				    "not enough memory: %llu KiB left for %u guest%s without a size, at least %u MiB each",
				    (unsigned long long)left * 4, defaults, defaults == 1 ? "" : "s",
				    GUEST_MEM_MIN >> 20);
		out[i].mem = mem;
		out[i].mem_given = true;
	}
	return true;
}
