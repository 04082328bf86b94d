/* cmdline.c - parse the hypervisor command line; see cmdline.h. */
#include "cmdline.h"
#include "layout.h"
#include "hvlib.h"

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

bool parse_size(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (!len)
		return false;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v > 0xffffffffull)
			return false;
	}
	if (i == 0)
		return false;
	if (i < len) {
		unsigned shift;

		switch (s[i]) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		default: return false;
		}
		if (i + 1 != len)
			return false;
		v <<= shift;
		if (v > 0xffffffffull)
			return false;
	}
	*out = v;
	return true;
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

static bool parse_uint(const char *s, size_t len, unsigned max, unsigned *out)
{
	unsigned v = 0;

	if (!len || len > 9)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > max)
		return false;
	*out = v;
	return true;
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

/* guestN.KEY=VALUE, the word w being all of it and key/v past "guestN.". */
static bool parse_guest_option(const char *w, size_t len, unsigned n,
			       const char *key, size_t klen, const char *v, size_t vlen,
			       struct hv_options *o, char *err, size_t errlen)
{
	struct guest_options *g = &o->guests[n - 1];

	if (word_is(key, klen, "mem")) {
		uint64_t size;

		if (!parse_size(v, vlen, &size) || size % 4096)
			return set_error(err, errlen,
				"malformed option '%.*s': guestN.mem takes a size such as 64M, a multiple of 4K",
				w, len);
		if (size < GUEST_MEM_MIN)
			return set_error(err, errlen,
				"option '%.*s': a guest's memory must be at least 16M", w, len);
		g->mem = size;
	} else if (word_is(key, klen, "name")) {
		bool ok = vlen >= 1 && vlen < GUEST_NAME_LEN;

		for (size_t i = 0; ok && i < vlen; i++)
			ok = name_char(v[i]);
		if (!ok)
			return set_error(err, errlen,
				"malformed option '%.*s': a guest name is 1-15 letters, digits, '.', '_' or '-'",
				w, len);
		memcpy(g->name, v, vlen);
		g->name[vlen] = 0;
	} else if (word_is(key, klen, "weight")) {
		unsigned weight;

		if (!parse_uint(v, vlen, GUEST_WEIGHT_MAX, &weight) || !weight)
			return set_error(err, errlen,
				"malformed option '%.*s': a guest's weight is 1-100", w, len);
		g->weight = weight;
	} else if (word_is(key, klen, "vmi_refuse")) {
		return parse_refuse(w, len, v, vlen, &g->refuse, err, errlen);
	} else {
		return set_error(err, errlen,
			"unknown hypervisor option '%.*s' (a guest's options are guestN.mem=, guestN.name=, guestN.weight=, guestN.vmi_refuse=)",
			w, len);
	}
	return true;
}

_Static_assert(HV_MAX_GUESTS == 4, "the message below names the guests");

/* "guestN." with N in 1..9: N, else 0 (the caller checks HV_MAX_GUESTS). */
static unsigned guest_prefix(const char *w, size_t klen, size_t *plen)
{
	unsigned n;

	if (klen < 7 || strncmp(w, "guest", 5) || w[5] < '1' || w[5] > '9' || w[6] != '.')
		return 0;
	n = (unsigned)(w[5] - '0');
	*plen = 7;
	return n;
}

/* A decimal count from 1 to 2^32-1, no suffix. */
static bool parse_count(const char *s, size_t len, uint32_t *out)
{
	uint64_t v = 0;

	if (!len || len > 10)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (!v || v > 0xffffffffull)
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool parse_audit(const char *w, size_t len, const char *v, size_t vlen,
			struct audit_options *a, char *err, size_t errlen)
{
	static const char every[] = "every=";
	const size_t elen = sizeof(every) - 1;

	if (word_is(v, vlen, "off")) {
		a->mode = AUDIT_OFF;
	} else if (word_is(v, vlen, "exit")) {
		a->mode = AUDIT_EXIT;
	} else if (word_is(v, vlen, "cr3")) {
		a->mode = AUDIT_CR3;
	} else if (vlen > elen && !strncmp(v, every, elen)) {
		if (!parse_count(v + elen, vlen - elen, &a->every))
			return set_error(err, errlen,
				"malformed option '%.*s': audit=every=N takes a count N from 1 to 4294967295",
				w, len);
		a->mode = AUDIT_EVERY;
	} else {
		return set_error(err, errlen,
			"malformed option '%.*s': audit is off, exit, every=N or cr3", w, len);
	}
	return true;
}

static bool parse_option(const char *w, size_t len, struct hv_options *o,
			 char *err, size_t errlen)
{
	const char *eq = w;
	size_t klen, vlen;
	const char *v;

	while (eq < w + len && *eq != '=')
		eq++;
	if (eq == w + len)
		return set_error(err, errlen,
			"unknown hypervisor option '%.*s' (options are guest_mem=, loglevel=, after_load=, selftest_fault=, fastpaths=, selftest=, slice=, audit=, audit_action=, audit_selftest=, strict_pt=, vmi_refuse=, guestN.mem=, guestN.name=, guestN.weight=, guestN.vmi_refuse=)",
			w, len);
	klen = (size_t)(eq - w);
	v = eq + 1;
	vlen = len - klen - 1;

	size_t plen = 0;
	unsigned n = guest_prefix(w, klen, &plen);

	if (n) {
		if (n > HV_MAX_GUESTS)
			return set_error(err, errlen,
				"option '%.*s': at most 4 guests (guest1 to guest4)", w, len);
		return parse_guest_option(w, len, n, w + plen, klen - plen, v, vlen, o, err, errlen);
	}
	if (word_is(w, klen, "guest_mem")) {
		uint64_t size;

		if (!parse_size(v, vlen, &size))
			return set_error(err, errlen,
				"malformed option '%.*s': guest_mem takes a size such as 128M, 65536K or 1G",
				w, len);
		if (size % 4096)
			return set_error(err, errlen,
				"malformed option '%.*s': guest_mem must be a multiple of 4K",
				w, len);
		if (size < GUEST_MEM_MIN)
			return set_error(err, errlen,
				"option '%.*s': guest_mem must be at least 16M",
				w, len);
		o->guest_mem = size;
		o->guest_mem_given = true;
	} else if (word_is(w, klen, "loglevel")) {
		static const char *const names[] = { "error", "warn", "info", "debug" };
		int level = -1;

		for (int i = 0; i < 4; i++)
			if (word_is(v, vlen, names[i]) ||
			    (vlen == 1 && v[0] == '0' + i))
				level = i;
		if (level < 0)
			return set_error(err, errlen,
				"malformed option '%.*s': loglevel is error, warn, info, debug or 0-3",
				w, len);
		o->loglevel = level;
	} else if (word_is(w, klen, "after_load")) {
		if (word_is(v, vlen, "run"))
			o->after_load = AFTER_LOAD_RUN;
		else if (word_is(v, vlen, "stop"))
			o->after_load = AFTER_LOAD_STOP;
		else if (word_is(v, vlen, "idle"))
			o->after_load = AFTER_LOAD_IDLE;
		else
			return set_error(err, errlen,
				"malformed option '%.*s': after_load is run, stop or idle",
				w, len);
	} else if (word_is(w, klen, "selftest_fault")) {
		if (word_is(v, vlen, "page"))
			o->fault = FAULT_PAGE;
		else if (word_is(v, vlen, "invalid-opcode"))
			o->fault = FAULT_INVALID_OPCODE;
		else if (word_is(v, vlen, "divide"))
			o->fault = FAULT_DIVIDE;
		else if (word_is(v, vlen, "double"))
			o->fault = FAULT_DOUBLE;
		else
			return set_error(err, errlen,
				"malformed option '%.*s': selftest_fault is page, invalid-opcode, divide or double",
				w, len);
	} else if (word_is(w, klen, "fastpaths")) {
		if (word_is(v, vlen, "on"))
			o->fastpaths = true;
		else if (word_is(v, vlen, "off"))
			o->fastpaths = false;
		else
			return set_error(err, errlen,
				"malformed option '%.*s': fastpaths is on or off",
				w, len);
	} else if (word_is(w, klen, "slice")) {
		unsigned ms;

		if (!parse_uint(v, vlen, SLICE_MS_MAX, &ms) || !ms)
			return set_error(err, errlen,
				"malformed option '%.*s': slice is a time in milliseconds, 1-1000",
				w, len);
		o->slice_ms = ms;
	} else if (word_is(w, klen, "selftest")) {
		if (word_is(v, vlen, "two-guests"))
			o->two_guests = true;
		else
			return set_error(err, errlen,
				"malformed option '%.*s': selftest is two-guests",
				w, len);
	} else if (word_is(w, klen, "audit")) {
		return parse_audit(w, len, v, vlen, &o->audit, err, errlen);
	} else if (word_is(w, klen, "audit_action")) {
		if (word_is(v, vlen, "stop"))
			o->audit.log_only = false;
		else if (word_is(v, vlen, "log"))
			o->audit.log_only = true;
		else
			return set_error(err, errlen,
				"malformed option '%.*s': audit_action is stop or log", w, len);
	} else if (word_is(w, klen, "strict_pt")) {
		if (word_is(v, vlen, "on"))
			o->strict_pt = true;
		else if (word_is(v, vlen, "off"))
			o->strict_pt = false;
		else
			return set_error(err, errlen,
				"malformed option '%.*s': strict_pt is on or off", w, len);
	} else if (word_is(w, klen, "vmi_refuse")) {
		return parse_refuse(w, len, v, vlen, &o->refuse, err, errlen);
	} else if (word_is(w, klen, "audit_selftest")) {
		if (!parse_count(v, vlen, &o->audit.selftest))
			return set_error(err, errlen,
				"malformed option '%.*s': audit_selftest takes a count from 1 to 4294967295",
				w, len);
	} else {
		return set_error(err, errlen,
			"unknown hypervisor option '%.*s' (options are guest_mem=, loglevel=, after_load=, selftest_fault=, fastpaths=, selftest=, slice=, audit=, audit_action=, audit_selftest=, strict_pt=, vmi_refuse=, guestN.mem=, guestN.name=, guestN.weight=, guestN.vmi_refuse=)",
			w, len);
	}
	return true;
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
