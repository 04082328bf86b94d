/*
 * shadow_audit.c - the audit of the shadows (shadow.h, "The audit"):
 * every shadow entry held against what shadow_derive_pte() gives for the
 * guest's entry now, for the whole cache, one page, or the pages touched
 * since the last audit.  It reads the bookkeeping of shadow_notify.c through
 * shadow_internal.h and changes nothing but a stale page it was asked to
 * repair (shadow_rederive).
 */
#include "shadow.h"
#include "shadow_internal.h"
#include "hvlib.h"

static const char *const op_names[SHADOW_OP_COUNT] = {
	[SHADOW_OP_NONE] = "none",
	[SHADOW_OP_SET_PXE] = "SetPxE",
	[SHADOW_OP_SWAP_PXE] = "SwapPxE",
	[SHADOW_OP_TEST_AND_CLEAR] = "TestAndClearPxEBit",
	[SHADOW_OP_TEST_AND_SET] = "TestAndSetPxEBit",
	[SHADOW_OP_QUEUED_SET_PXE] = "SetPxE (queued)",
	[SHADOW_OP_QUEUED_SWAP_PXE] = "SwapPxE (queued)",
	[SHADOW_OP_QUEUED_TEST_AND_CLEAR] = "TestAndClearPxEBit (queued)",
	[SHADOW_OP_QUEUED_TEST_AND_SET] = "TestAndSetPxEBit (queued)",
	[SHADOW_OP_ALLOCATE] = "AllocatePage",
	[SHADOW_OP_RELEASE] = "ReleasePage",
	[SHADOW_OP_INVAL_PAGE] = "InvalPage",
};

const char *shadow_op_name(enum shadow_op op)
{
	return (unsigned)op < SHADOW_OP_COUNT ? op_names[op] : "?";
}

static void mismatch(struct shadow_audit *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void mismatch(struct shadow_audit *a, const char *fmt, ...)
{
	va_list ap;

	if (!a->mismatches++) {
		va_start(ap, fmt);
		fmt_vsnprintf(a->first, sizeof(a->first), fmt, ap);
		va_end(ap);
	}
}

/* Does shadow entry e of sp point where guest entry g does (the page's
 * machine frame, or for a PDE the table's shadow)? */
static bool same_target(const struct shadow *s, const struct shadow_page *sp, uint32_t g, uint32_t e)
{
	const struct shadow_page *pt;

	if (!(g & PTE_P) || !(e & PTE_P) || pte_frame(g) >= s->gm->npages)
		return false;
	if (sp->kind == SHADOW_PT)
		return s->gm->p2m[pte_frame(g)] == pte_frame(e);
	pt = lookup(s, pte_frame(g));
	return pt && pt->mfn == pte_frame(e);
}

/*
 * The notification that, had it been made (or handled), would have left
 * the shadow right.  Same page: an entry that should be gone lost A
 * (TestAndClearPxEBit, the young-bit test), one that should be read-only
 * lost W or D (TestAndClearPxEBit, write-protect and dirty clearing).  An
 * entry the guest cleared: SwapPxE (ptep_get_and_clear).  Anything else
 * points elsewhere now: SetPxE.
 */
static enum shadow_op expected_op(bool same, uint32_t guest, uint32_t shadow, uint32_t expect)
{
	if (!(guest & PTE_P))
		return SHADOW_OP_SWAP_PXE;
	if (same && (!expect || ((shadow & PTE_W) && !(expect & PTE_W))))
		return SHADOW_OP_TEST_AND_CLEAR;
	return SHADOW_OP_SET_PXE;
}

/* A linear address entry i of sp maps, through some PDE that links it
 * (the loaded directory first).  false if no shadow PDE links it. */
static bool linear_of(const struct shadow *s, const struct shadow_page *sp, unsigned i, uint32_t *lin)
{
	uint16_t idx = index_of(s, sp);

	if (sp->kind == SHADOW_PD) {
		*lin = (uint32_t)i << 22;
		return true;
	}
	for (unsigned n = 0; n <= SHADOW_MAX_PAGES; n++) {
		/* n == 0: the loaded directory; then every directory. */
		const struct shadow_page *pd = n ? &s->pages[n - 1] : (s->loaded[0] ? &s->pages[s->loaded[0] - 1] : 0);
		const uint16_t *links;

		if (!pd || pd->kind != SHADOW_PD)
			continue;
		links = pd_links(s, pd);
		for (unsigned j = 0; j < VTLB_GUEST_PDES; j++)
			if (links[j] == idx) {
				*lin = ((uint32_t)j << 22) | ((uint32_t)i << 12);
				return true;
			}
	}
	return false;
}

void shadow_describe(const struct shadow_mismatch *m, char *buf, size_t len)
{
	char range[48];

	if (m->linked)
		fmt_snprintf(range, sizeof(range), "linear %08x-%08x", m->lin, m->lin + m->lin_size - 1);
	else
		fmt_snprintf(range, sizeof(range), "linked from no PDE");
	fmt_snprintf(buf, len, "%s 0x%x entry %u (%s): guest %08x, shadow %08x, expected %08x; missed %s; last notified: %s at EIP %08x",
		     m->kind == SHADOW_PD ? "PD" : "PT", m->gfn, m->index, range, m->guest, m->shadow,
		     m->expect, shadow_op_name(m->expected_op), shadow_op_name(m->last_op), m->last_eip);
}

/*
 * Does shadow entry (PTE or PDE) shadow let the hardware do what expect,
 * the entry derived from the guest's, does not: map at all, map another
 * frame, or allow writes or user access?  A shadow that allows less is
 * only unfilled: the access faults, and the fault derives it again.
 */
static bool grants_more(uint32_t shadow, uint32_t expect)
{
	if (!(shadow & PTE_P))
		return false;
	if (!(expect & PTE_P) || pte_frame(shadow) != pte_frame(expect))
		return true;
	return (shadow & ~expect & (PTE_W | PTE_U)) != 0;
}

/* An entry that differs from what it should be: counted, and described
 * if it is the first mismatch. */
static void entry_mismatch(const struct shadow *s, const struct shadow_page *sp, unsigned i,
			   uint32_t guest, uint32_t shadow, uint32_t expect, struct shadow_audit *a)
{
	struct shadow_mismatch *m = &a->m;

	if (a->stale_only && !grants_more(shadow, expect)) {
		a->unfilled++;
		return;
	}
	if (a->mismatches++)
		return;
	a->have_entry = true;
	m->gfn = sp->gfn;
	m->kind = sp->kind;
	m->index = (uint16_t)i;
	m->linked = linear_of(s, sp, i, &m->lin);
	m->lin_size = sp->kind == SHADOW_PD ? 1u << 22 : HV_PAGE_SIZE;
	m->guest = guest;
	m->shadow = shadow;
	m->expect = expect;
	m->expected_op = (uint8_t)expected_op(same_target(s, sp, guest, shadow), guest, shadow, expect);
	m->last_op = sp->last_op;
	m->last_eip = sp->last_eip;
	shadow_describe(m, a->first, sizeof(a->first));
}

/* The CPU sets A (and D) in the shadow entries it uses: not ours to compare. */
#define HW_OWNED (PTE_A | PTE_D)

static void audit_directory(const struct shadow *s, const struct shadow_page *pd, struct shadow_audit *a)
{
	const uint32_t *g = guest_table(s, pd->gfn), *spd = shadow_table(s, pd);
	const uint16_t *links = pd_links(s, pd);

	a->pds++;
	if ((spd[HV_SWITCHER_PDE_INDEX] | HW_OWNED) != (s->env.switcher_pde | HW_OWNED))
		mismatch(a, "PD 0x%x (shadow mfn 0x%x): PDE %u is 0x%08x, not the switcher", pd->gfn,
			 pd->mfn, HV_SWITCHER_PDE_INDEX, spd[HV_SWITCHER_PDE_INDEX]);
	for (unsigned i = VTLB_GUEST_PDES; i < HV_SWITCHER_PDE_INDEX; i++)
		if (spd[i])
			mismatch(a, "PD 0x%x: reserved-top PDE %u is 0x%08x", pd->gfn, i, spd[i]);
	for (unsigned i = 0; i < VTLB_GUEST_PDES; i++) {
		bool want = (g[i] & (PTE_P | PTE_A)) == (PTE_P | PTE_A) && !(g[i] & PTE_PS) &&
			    pte_frame(g[i]) < s->gm->npages;
		const struct shadow_page *pt = links[i] ? &s->pages[links[i] - 1] : 0;
		uint32_t expect;

		if (pt && pt->kind == SHADOW_ORPHAN) {
			a->unfilled++;	/* an empty table: grants nothing, a fault relinks */
			continue;
		}
		if (!want) {
			if (!spd[i])
				continue;
			if (!g[i] && i >= pd->clone_base && i - pd->clone_base < pd->clone_count)
				a->unfilled++;	/* the guest has not copied it yet */
			else
				entry_mismatch(s, pd, i, g[i], spd[i], 0, a);
			continue;
		}
		if (!pt || pt->gfn != pte_frame(g[i])) {
			/* The shadow of the table the guest names, if any. */
			const struct shadow_page *want_pt = lookup(s, pte_frame(g[i]));

			/* Not linked at all: the table was released while
			 * linked, or the PDE names something that cannot be
			 * linked (a directory: the guest was stopped).  The
			 * shadow grants nothing; a fault would link it again. */
			if (!spd[i]) {
				a->unfilled++;
				continue;
			}
			expect = want_pt && want_pt->kind == SHADOW_PT ?
				 make_pte(want_pt->mfn, (g[i] & (PTE_P | PTE_W | PTE_U)) | PTE_A) : 0;
			entry_mismatch(s, pd, i, g[i], spd[i], expect, a);
			continue;
		}
		a->entries++;
		expect = make_pte(pt->mfn, (g[i] & (PTE_P | PTE_W | PTE_U)) | PTE_A);
		if ((spd[i] | HW_OWNED) != (expect | HW_OWNED))
			entry_mismatch(s, pd, i, g[i], spd[i], expect, a);
	}
}

static void audit_table(const struct shadow *s, const struct shadow_page *pt, struct shadow_audit *a)
{
	const uint32_t *g = guest_table(s, pt->gfn), *spt = shadow_table(s, pt);

	a->pts++;
	for (unsigned i = 0; i < PT_ENTRIES; i++) {
		uint32_t expect = shadow_derive_pte(s, g[i]);

		if (spt[i])
			a->entries++;
		if ((spt[i] | HW_OWNED) != (expect | HW_OWNED))
			entry_mismatch(s, pt, i, g[i], spt[i], expect, a);
	}
}

static void audit_record(const struct shadow *s, const struct shadow_page *sp, struct shadow_audit *a)
{
	if (sp->kind == SHADOW_PD)
		audit_directory(s, sp, a);
	else if (sp->kind == SHADOW_PT)
		audit_table(s, sp, a);
}

/* Each vCPU's top-level page (a guest of several vCPUs): its loaded
 * directory's shadow PDEs, nothing in the reserved top, its own switcher. */
static void audit_tops(const struct shadow *s, struct shadow_audit *a)
{
	for (unsigned k = 0; k < s->nr_vcpus; k++) {
		const uint32_t *top, *spd;

		if (!s->top_mfn[k] || !s->loaded[k])
			continue;
		top = s->env.map(s->top_mfn[k]);
		spd = shadow_table(s, &s->pages[s->loaded[k] - 1]);
		if ((top[HV_SWITCHER_PDE_INDEX] | HW_OWNED) != (s->top_switcher_pde[k] | HW_OWNED))
			mismatch(a, "vCPU %u's top-level page: PDE %u is 0x%08x, not its switcher", k,
				 HV_SWITCHER_PDE_INDEX, top[HV_SWITCHER_PDE_INDEX]);
		for (unsigned i = VTLB_GUEST_PDES; i < HV_SWITCHER_PDE_INDEX; i++)
			if (top[i])
				mismatch(a, "vCPU %u's top-level page: reserved-top PDE %u is 0x%08x", k, i, top[i]);
		for (unsigned i = 0; i < VTLB_GUEST_PDES; i++)
			if ((top[i] | HW_OWNED) != (spd[i] | HW_OWNED))
				mismatch(a, "vCPU %u's top-level page: PDE %u is 0x%08x, its directory 0x%x's shadow has 0x%08x",
					 k, i, top[i], s->pages[s->loaded[k] - 1].gfn, spd[i]);
	}
}

void shadow_audit(const struct shadow *s, struct shadow_audit *a)
{
	memset(a, 0, sizeof(*a));
	for (unsigned i = 0; i < SHADOW_MAX_PAGES; i++)
		audit_record(s, &s->pages[i], a);
	audit_tops(s, a);
}

void shadow_audit_page(const struct shadow *s, uint32_t gfn, struct shadow_audit *a)
{
	const struct shadow_page *sp = lookup(s, gfn);

	if (sp)
		audit_record(s, sp, a);
}

/* Audit one touched record; with resync, fix it if it was stale. */
static void audit_touched_one(struct shadow *s, struct shadow_page *sp, bool fix, struct shadow_audit *a)
{
	uint32_t before = a->mismatches;

	sp->touched = false;
	audit_record(s, sp, a);
	if (fix && a->mismatches != before)
		shadow_rederive(s, sp);
}

void shadow_audit_touched(struct shadow *s, bool fix, struct shadow_audit *a)
{
	memset(a, 0, sizeof(*a));
	a->stale_only = true;
	if (s->touched_overflow) {
		for (unsigned i = 0; i < SHADOW_MAX_PAGES; i++)
			audit_touched_one(s, &s->pages[i], fix, a);
	} else {
		/* Records freed since they were noted are FREE and skipped. */
		for (uint32_t i = 0; i < s->ntouched; i++)
			audit_touched_one(s, record(s, s->touched[i]), fix, a);
	}
	s->ntouched = 0;
	s->touched_overflow = false;
	audit_tops(s, a);
}

bool shadow_entry_stale(const struct shadow *s, uint32_t gpa)
{
	const struct shadow_page *sp = lookup(s, page_frame(gpa));
	unsigned i = page_offset(gpa) / sizeof(uint32_t);
	uint32_t g;

	if (!sp || sp->kind != SHADOW_PT)
		return false;
	g = guest_table(s, sp->gfn)[i];
	return grants_more(shadow_table(s, sp)[i], shadow_derive_pte(s, g));
}
