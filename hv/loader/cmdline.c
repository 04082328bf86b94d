/* cmdline.c - parse the hypervisor command line; see cmdline.h. */
#include "cmdline.h"
#include "cmdline_values.h"
#include "layout.h"
#include "hvlib.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define HV_MAX_CPUS_LAST 7
_Static_assert(HV_MAX_CPUS_LAST == HV_MAX_CPUS - 1, "the cpus= message names the last CPU");

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool word_is(const char *w, size_t len, const char *lit)
{
	return strlen(lit) == len && !strncmp(w, lit, len);
}

bool loader_puts_path_first(const char *loader_name)
{
	return loader_name && !strncmp(loader_name, "qemu", 4);
}

const char *skip_image_path(const char *s, bool path_first)
{
	const char *w = s, *end;

	while (is_space(*w))
		w++;
	if (!path_first && *w != '/' && *w != '(')
		return w;
	for (end = w; *end && !is_space(*end); end++)
		;
	while (is_space(*end))
		end++;
	return end;
}

static bool set_error(char *err, size_t errlen, const char *fmt,
		      const char *w, size_t len)
{
	fmt_snprintf(err, errlen, fmt, (int)len, w);
	return false;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/* Why call n cannot be answered "unsupported" by a rewritten slot, or
 * NULL if it can. */
static const char *not_refusable(unsigned n)
{
	switch (vmi_call_kind(n)) {
	case VMI_KIND_HEADER:
		return "slot 0 is the ROM header, not a call";
	case VMI_KIND_RESERVED:
	case VMI_KIND_UNSUPPORTED:
		return "its slot already answers unsupported";
	case VMI_KIND_NORETURN:
	case VMI_KIND_FASTNORETURN:
		return "it is entered with jmp and never returns, so no caller could see the answer";
	}
	if (n == VMI_CALL_Init)
		return "it is the guest's activation: a guest that may not call it is not paravirtual at all";
	return NULL;
}

/* vmi_refuse=NAME[,NAME...] (or guestN.vmi_refuse=), the word w being
 * all of it and v its value. */
static bool parse_refuse(const char *w, size_t len, const char *v, size_t vlen,
			 struct vmi_refuse_set *r, char *err, size_t errlen)
{
	struct vmi_refuse_set set = { .given = true };
	size_t i = 0;

	if (!vlen)
		return set_error(err, errlen,
			"malformed option '%.*s': vmi_refuse takes VMI call names separated by commas, e.g. vmi_refuse=GetWallclockTime,IODelay",
			w, len);
	while (i <= vlen) {
		size_t j = i, n;
		unsigned call = NUM_VMI_CALLS;

		while (j < vlen && v[j] != ',')
			j++;
		n = j - i;
		if (!n)
			return set_error(err, errlen,
				"malformed option '%.*s': an empty name between commas (vmi_refuse=NAME[,NAME...])",
				w, len);
		for (unsigned c = 0; c < NUM_VMI_CALLS; c++)
			if (word_is(v + i, n, vmi_call_name(c)))
				call = c;
		if (call == NUM_VMI_CALLS) {
			fmt_snprintf(err, errlen,
				     "option '%.*s': '%.*s' is not a VMI call (the names of vrom/abi/vmi-13.0.def, e.g. GetWallclockTime)",
				     (int)len, w, (int)n, v + i);
			return false;
		}
		if (not_refusable(call)) {
			fmt_snprintf(err, errlen, "option '%.*s': VMI call %u (%s) cannot be refused: %s",
				     (int)len, w, call, vmi_call_name(call), not_refusable(call));
			return false;
		}
		set.bits[call / 32] |= 1u << (call % 32);
		i = j + 1;
	}
	*r = set;
	return true;
}

/*
 * The options are tables, after NOVA's cmdline: each row names a key and
 * says how its value is read.  A row with words takes one of them and
 * stores the word's number in an int-sized or bool field of its options
 * struct; a row with a parser reads the value itself.  The unknown-option
 * message lists the keys from the same tables, so a new row is all a new
 * option needs here.
 */

/* What a value parser is given: the whole word KEY=VALUE (for messages),
 * the value, and where an error goes. */
struct option_arg {
	const char *w;
	size_t len;
	const char *v;
	size_t vlen;
	char *err;
	size_t errlen;
};

static bool arg_error(const struct option_arg *a, const char *fmt)
{
	return set_error(a->err, a->errlen, fmt, a->w, a->len);
}

/* A word an option takes, and the number it stands for. */
struct option_word {
	const char *word;
	int value;
};

struct option_spec {
	const char *key;
	const struct option_word *words;	/* NULL-ended; or NULL: parse */
	size_t offset, size;			/* the field a word's value goes to */
	bool (*parse)(const struct option_arg *a, void *opts);
	const char *usage;			/* after "malformed option 'W': " */
};

#define CHOICE(key, type, field, words, usage) \
	{ key, words, offsetof(type, field), sizeof(((type *)0)->field), NULL, usage }
#define PARSED(key, fn) { key, NULL, 0, 0, fn, NULL }

_Static_assert(sizeof(enum after_load) == sizeof(int) &&
	       sizeof(enum selftest_fault) == sizeof(int) &&
	       sizeof(enum lock_selftest) == sizeof(int),
	       "store_word() writes enum fields as int");

static bool store_word(const struct option_spec *s, const struct option_arg *a, void *opts)
{
	char *field = (char *)opts + s->offset;

	for (const struct option_word *wd = s->words; wd->word; wd++) {
		if (!word_is(a->v, a->vlen, wd->word))
			continue;
		if (s->size == sizeof(bool))
			*(bool *)field = wd->value;
		else
			*(int *)field = wd->value;
		return true;
	}
	fmt_snprintf(a->err, a->errlen, "malformed option '%.*s': %s", (int)a->len, a->w, s->usage);
	return false;
}

/* The row of table[0..n) whose key is k, or NULL. */
static const struct option_spec *find_option(const struct option_spec *table, size_t n,
					     const char *k, size_t klen)
{
	for (size_t i = 0; i < n; i++)
		if (word_is(k, klen, table[i].key))
			return &table[i];
	return NULL;
}

/* Appends "PREFIXkey=, " for each row, the last without the comma. */
static void list_keys(char *err, size_t errlen, const char *prefix,
		      const struct option_spec *table, size_t n, bool more)
{
	for (size_t i = 0; i < n; i++) {
		size_t at = strlen(err);

		fmt_snprintf(err + at, errlen - at, "%s%s=%s", prefix, table[i].key,
			     i + 1 < n || more ? ", " : "");
	}
}

static bool apply_option(const struct option_spec *s, const struct option_arg *a, void *opts)
{
	return s->words ? store_word(s, a, opts) : s->parse(a, opts);
}

/* ---- guestN.KEY=VALUE ---- */

static bool parse_guest_mem(const struct option_arg *a, void *opts)
{
	struct guest_options *g = opts;
	uint64_t size;

	if (!parse_size(a->v, a->vlen, &size) || size % 4096)
		return arg_error(a, "malformed option '%.*s': guestN.mem takes a size such as 64M, a multiple of 4K");
	if (size < GUEST_MEM_MIN)
		return arg_error(a, "option '%.*s': a guest's memory must be at least 16M");
	g->mem = size;
	return true;
}

static bool parse_guest_name(const struct option_arg *a, void *opts)
{
	struct guest_options *g = opts;
	bool ok = a->vlen >= 1 && a->vlen < GUEST_NAME_LEN;

	for (size_t i = 0; ok && i < a->vlen; i++)
		ok = name_char(a->v[i]);
	if (!ok)
		return arg_error(a, "malformed option '%.*s': a guest name is 1-15 letters, digits, '.', '_' or '-'");
	memcpy(g->name, a->v, a->vlen);
	g->name[a->vlen] = 0;
	return true;
}

static bool parse_guest_weight(const struct option_arg *a, void *opts)
{
	struct guest_options *g = opts;
	unsigned weight;

	if (!parse_uint(a->v, a->vlen, GUEST_WEIGHT_MAX, &weight) || !weight)
		return arg_error(a, "malformed option '%.*s': a guest's weight is 1-100");
	g->weight = weight;
	return true;
}

static bool parse_guest_cpus(const struct option_arg *a, void *opts)
{
	if (!parse_cpu_list(a->v, a->vlen, &((struct guest_options *)opts)->cpus))
		return arg_error(a, "malformed option '%.*s': cpus is a list of CPU numbers 0-"
				 STRINGIFY(HV_MAX_CPUS_LAST) " such as 0, 1-3 or 0,2");
	return true;
}

/* vcpus= and guestN.vcpus=: a count 1-GUEST_MAX_VCPUS into *out. */
static bool parse_vcpu_count(const struct option_arg *a, unsigned *out)
{
	unsigned n;

	if (!parse_uint(a->v, a->vlen, GUEST_MAX_VCPUS, &n) || !n)
		return arg_error(a, "malformed option '%.*s': vcpus is how many vCPUs a guest has, 1-"
				 STRINGIFY(GUEST_MAX_VCPUS));
	*out = n;
	return true;
}

static bool parse_guest_vcpus(const struct option_arg *a, void *opts)
{
	return parse_vcpu_count(a, &((struct guest_options *)opts)->vcpus);
}

static bool parse_guest_refuse(const struct option_arg *a, void *opts)
{
	return parse_refuse(a->w, a->len, a->v, a->vlen,
			    &((struct guest_options *)opts)->refuse, a->err, a->errlen);
}

static const struct option_spec guest_options_table[] = {
	PARSED("mem", parse_guest_mem),
	PARSED("name", parse_guest_name),
	PARSED("weight", parse_guest_weight),
	PARSED("vmi_refuse", parse_guest_refuse),
	PARSED("cpus", parse_guest_cpus),
	PARSED("vcpus", parse_guest_vcpus),
};
#define NR_GUEST_OPTIONS (sizeof(guest_options_table) / sizeof(guest_options_table[0]))

_Static_assert(HV_MAX_GUESTS == 16, "the message below names the guests");

/* "guestN." with N in 1..99, no leading zero: N, else 0 (the caller
 * checks HV_MAX_GUESTS). */
static unsigned guest_prefix(const char *w, size_t klen, size_t *plen)
{
	unsigned n = 0;
	size_t i = 5;

	if (klen < 7 || strncmp(w, "guest", 5) || w[5] < '1' || w[5] > '9')
		return 0;
	while (i < klen && i < 7 && w[i] >= '0' && w[i] <= '9')
		n = n * 10 + (unsigned)(w[i++] - '0');
	if (i >= klen || w[i] != '.')
		return 0;
	*plen = i + 1;
	return n;
}

/* ---- the hypervisor's own options ---- */

static bool parse_guest_mem_all(const struct option_arg *a, void *opts)
{
	struct hv_options *o = opts;
	uint64_t size;

	if (!parse_size(a->v, a->vlen, &size))
		return arg_error(a, "malformed option '%.*s': guest_mem takes a size such as 128M, 65536K or 1G");
	if (size % 4096)
		return arg_error(a, "malformed option '%.*s': guest_mem must be a multiple of 4K");
	if (size < GUEST_MEM_MIN)
		return arg_error(a, "option '%.*s': guest_mem must be at least 16M");
	o->guest_mem = size;
	o->guest_mem_given = true;
	return true;
}

static bool parse_slice(const struct option_arg *a, void *opts)
{
	unsigned ms;

	if (!parse_uint(a->v, a->vlen, SLICE_MS_MAX, &ms) || !ms)
		return arg_error(a, "malformed option '%.*s': slice is a time in milliseconds, 1-1000");
	((struct hv_options *)opts)->slice_ms = ms;
	return true;
}

/* debug_pick_delay=, debug_halt_delay=: microseconds, 0 (off) to 10 s. */
static bool parse_delay(const struct option_arg *a, uint32_t *us)
{
	unsigned n;

	if (!parse_uint(a->v, a->vlen, DEBUG_DELAY_US_MAX, &n))
		return arg_error(a, "malformed option '%.*s': a debug delay is microseconds, 0-10000000");
	*us = n;
	return true;
}

static bool parse_pick_delay(const struct option_arg *a, void *opts)
{
	return parse_delay(a, &((struct hv_options *)opts)->debug_pick_delay_us);
}

static bool parse_halt_delay(const struct option_arg *a, void *opts)
{
	return parse_delay(a, &((struct hv_options *)opts)->debug_halt_delay_us);
}

static bool parse_cpus(const struct option_arg *a, void *opts)
{
	unsigned n;

	if (!parse_uint(a->v, a->vlen, HV_MAX_CPUS, &n) || !n)
		return arg_error(a, "malformed option '%.*s': cpus is how many CPUs to use, 1-"
				 STRINGIFY(HV_MAX_CPUS));
	((struct hv_options *)opts)->max_cpus = n;
	return true;
}

static bool parse_vcpus(const struct option_arg *a, void *opts)
{
	return parse_vcpu_count(a, &((struct hv_options *)opts)->vcpus);
}

static bool parse_audit(const struct option_arg *a, void *opts)
{
	static const char every[] = "every=";
	const size_t elen = sizeof(every) - 1;
	struct audit_options *au = &((struct hv_options *)opts)->audit;

	if (word_is(a->v, a->vlen, "off")) {
		au->mode = AUDIT_OFF;
	} else if (word_is(a->v, a->vlen, "exit")) {
		au->mode = AUDIT_EXIT;
	} else if (word_is(a->v, a->vlen, "cr3")) {
		au->mode = AUDIT_CR3;
	} else if (a->vlen > elen && !strncmp(a->v, every, elen)) {
		if (!parse_count(a->v + elen, a->vlen - elen, &au->every))
			return arg_error(a, "malformed option '%.*s': audit=every=N takes a count N from 1 to 4294967295");
		au->mode = AUDIT_EVERY;
	} else {
		return arg_error(a, "malformed option '%.*s': audit is off, exit, every=N or cr3");
	}
	return true;
}

static bool parse_audit_selftest(const struct option_arg *a, void *opts)
{
	if (!parse_count(a->v, a->vlen, &((struct hv_options *)opts)->audit.selftest))
		return arg_error(a, "malformed option '%.*s': audit_selftest takes a count from 1 to 4294967295");
	return true;
}

static bool parse_refuse_all(const struct option_arg *a, void *opts)
{
	return parse_refuse(a->w, a->len, a->v, a->vlen,
			    &((struct hv_options *)opts)->refuse, a->err, a->errlen);
}

static const struct option_word loglevel_words[] = {
	{ "error", 0 }, { "warn", 1 }, { "info", 2 }, { "debug", 3 },
	{ "0", 0 }, { "1", 1 }, { "2", 2 }, { "3", 3 }, { NULL, 0 }
};
static const struct option_word after_load_words[] = {
	{ "run", AFTER_LOAD_RUN }, { "stop", AFTER_LOAD_STOP }, { "idle", AFTER_LOAD_IDLE }, { NULL, 0 }
};
static const struct option_word fault_words[] = {
	{ "page", FAULT_PAGE }, { "invalid-opcode", FAULT_INVALID_OPCODE },
	{ "divide", FAULT_DIVIDE }, { "double", FAULT_DOUBLE }, { NULL, 0 }
};
static const struct option_word on_off_words[] = { { "on", true }, { "off", false }, { NULL, 0 } };
static const struct option_word locks_words[] = { { "check", true }, { "off", false }, { NULL, 0 } };
static const struct option_word lock_selftest_words[] = {
	{ "invert", LOCK_SELFTEST_INVERT }, { "invert-ap", LOCK_SELFTEST_INVERT_AP },
	{ "entry-ap", LOCK_SELFTEST_ENTRY_AP }, { "off", LOCK_SELFTEST_OFF }, { NULL, 0 }
};
static const struct option_word two_guests_words[] = { { "two-guests", true }, { NULL, 0 } };
static const struct option_word audit_action_words[] = { { "stop", false }, { "log", true }, { NULL, 0 } };

/* In the order the unknown-option message lists them. */
static const struct option_spec options_table[] = {
	PARSED("guest_mem", parse_guest_mem_all),
	CHOICE("loglevel", struct hv_options, loglevel, loglevel_words,
	       "loglevel is error, warn, info, debug or 0-3"),
	CHOICE("after_load", struct hv_options, after_load, after_load_words,
	       "after_load is run, stop or idle"),
	CHOICE("selftest_fault", struct hv_options, fault, fault_words,
	       "selftest_fault is page, invalid-opcode, divide or double"),
	CHOICE("fastpaths", struct hv_options, fastpaths, on_off_words, "fastpaths is on or off"),
	CHOICE("selftest", struct hv_options, two_guests, two_guests_words, "selftest is two-guests"),
	PARSED("slice", parse_slice),
	PARSED("audit", parse_audit),
	CHOICE("audit_action", struct hv_options, audit.log_only, audit_action_words,
	       "audit_action is stop or log"),
	PARSED("audit_selftest", parse_audit_selftest),
	CHOICE("strict_pt", struct hv_options, strict_pt, on_off_words, "strict_pt is on or off"),
	PARSED("vmi_refuse", parse_refuse_all),
	PARSED("cpus", parse_cpus),
	PARSED("vcpus", parse_vcpus),
	CHOICE("vcpus_at_once", struct hv_options, vcpus_at_once, on_off_words, "vcpus_at_once is on or off"),
	CHOICE("locks", struct hv_options, locks_check, locks_words, "locks is check or off"),
	CHOICE("lock_selftest", struct hv_options, lock_selftest, lock_selftest_words,
	       "lock_selftest is invert, invert-ap, entry-ap or off"),
	PARSED("debug_pick_delay", parse_pick_delay),
	PARSED("debug_halt_delay", parse_halt_delay),
};
#define NR_OPTIONS (sizeof(options_table) / sizeof(options_table[0]))

/* "unknown hypervisor option 'W' (options are ...)": every key of the
 * tables, the hypervisor's own unless guest_only. */
static bool unknown_option(const char *w, size_t len, bool guest_only, char *err, size_t errlen)
{
	fmt_snprintf(err, errlen, "unknown hypervisor option '%.*s' (%s are ", (int)len, w,
		     guest_only ? "a guest's options" : "options");
	if (!guest_only)
		list_keys(err, errlen, "", options_table, NR_OPTIONS, true);
	list_keys(err, errlen, "guestN.", guest_options_table, NR_GUEST_OPTIONS, false);
	size_t at = strlen(err);

	fmt_snprintf(err + at, errlen - at, ")");
	return false;
}

static bool parse_option(const char *w, size_t len, struct hv_options *o,
			 char *err, size_t errlen)
{
	const char *eq = w;
	size_t plen = 0;

	while (eq < w + len && *eq != '=')
		eq++;
	if (eq == w + len)
		return unknown_option(w, len, false, err, errlen);

	size_t klen = (size_t)(eq - w);
	struct option_arg a = { w, len, eq + 1, len - klen - 1, err, errlen };
	unsigned n = guest_prefix(w, klen, &plen);
	const struct option_spec *s;

	if (n) {
		if (n > HV_MAX_GUESTS)
			return set_error(err, errlen,
				"option '%.*s': at most 16 guests (guest1 to guest16)", w, len);
		s = find_option(guest_options_table, NR_GUEST_OPTIONS, w + plen, klen - plen);
		return s ? apply_option(s, &a, &o->guests[n - 1])
			 : unknown_option(w, len, true, err, errlen);
	}
	s = find_option(options_table, NR_OPTIONS, w, klen);
	return s ? apply_option(s, &a, o) : unknown_option(w, len, false, err, errlen);
}

bool hv_parse_cmdline(const char *cmdline, bool path_first,
		      struct hv_options *o, char *err, size_t errlen)
{
	const char *p;

	o->guest_mem = GUEST_MEM_DEFAULT;
	o->guest_mem_given = false;
	o->loglevel = 2;
	o->after_load = AFTER_LOAD_RUN;
	o->fault = FAULT_NONE;
	o->fastpaths = true;
	o->two_guests = false;
	memset(&o->audit, 0, sizeof(o->audit));
	memset(o->guests, 0, sizeof(o->guests));
	memset(&o->refuse, 0, sizeof(o->refuse));
	o->slice_ms = SLICE_MS_DEFAULT;
	o->vcpus = 0;
	o->vcpus_at_once = true;
	o->debug_pick_delay_us = o->debug_halt_delay_us = 0;
	if (!cmdline)
		return true;
	p = skip_image_path(cmdline, path_first);
	while (*p) {
		const char *w;

		while (is_space(*p))
			p++;
		if (!*p)
			break;
		w = p;
		while (*p && !is_space(*p))
			p++;
		if (!parse_option(w, (size_t)(p - w), o, err, errlen))
			return false;
	}
	return true;
}
