/*
 * format.c - a small printf engine.
 *
 * Pure logic: it compiles freestanding for the hypervisor and on the host
 * for tests/unit/test_format.c.  64-bit divisions go through our own
 * shift-subtract loop so the freestanding build needs no libgcc.
 */
#include "hvlib.h"

struct sink {
	fmt_putc_fn putc;
	void *ctx;
	int count;
};

static void emit(struct sink *s, char c)
{
	s->putc(c, s->ctx);
	s->count++;
}

/* Divide *n by base (2..16) and return the remainder, without libgcc. */
static unsigned divmod(unsigned long long *n, unsigned base)
{
	unsigned long long q = 0, r = 0;
	int bit;

	if (*n <= 0xffffffffull) {
		uint32_t v = (uint32_t)*n;

		*n = v / base;
		return v % base;
	}
	for (bit = 63; bit >= 0; bit--) {
		r = (r << 1) | ((*n >> bit) & 1);
		if (r >= base) {
			r -= base;
			q |= 1ull << bit;
		}
	}
	*n = q;
	return (unsigned)r;
}

static void emit_number(struct sink *s, unsigned long long v, unsigned base,
			bool upper, bool negative, int width, bool left,
			char pad)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char tmp[24];
	int n = 0, len;

	do
		tmp[n++] = digits[divmod(&v, base)];
	while (v);
	len = n + (negative ? 1 : 0);
	if (negative && pad == '0')
		emit(s, '-');
	if (!left)
		for (; width > len; width--)
			emit(s, pad);
	if (negative && pad != '0')
		emit(s, '-');
	while (n)
		emit(s, tmp[--n]);
	if (left)
		for (; width > len; width--)
			emit(s, ' ');
}

int fmt_format(fmt_putc_fn putc, void *ctx, const char *fmt, va_list ap)
{
	struct sink s = { putc, ctx, 0 };

	for (; *fmt; fmt++) {
		bool left = false, upper = false;
		char pad = ' ';
		int width = 0, prec = -1, lng = 0;
		unsigned long long u;
		long long sv;

		if (*fmt != '%') {
			emit(&s, *fmt);
			continue;
		}
		fmt++;
		for (;; fmt++) {
			if (*fmt == '-')
				left = true;
			else if (*fmt == '0')
				pad = '0';
			else
				break;
		}
		if (left)
			pad = ' ';
		if (*fmt == '*') {
			width = va_arg(ap, int);
			fmt++;
		}
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		if (*fmt == '.') {
			fmt++;
			prec = 0;
			if (*fmt == '*') {
				prec = va_arg(ap, int);
				fmt++;
			}
			while (*fmt >= '0' && *fmt <= '9')
				prec = prec * 10 + (*fmt++ - '0');
		}
		for (;; fmt++) {
			if (*fmt == 'l')
				lng++;
			else if (*fmt == 'z')
				lng = sizeof(size_t) == 8 ? 2 : 1;
			else if (*fmt == 'h')
				;	/* promoted to int anyway; we truncate below */
			else
				break;
		}
		switch (*fmt) {
		case 'd':
		case 'i':
			if (lng >= 2)
				sv = va_arg(ap, long long);
			else if (lng == 1)
				sv = va_arg(ap, long);
			else
				sv = va_arg(ap, int);
			u = sv < 0 ? 0ull - (unsigned long long)sv
				   : (unsigned long long)sv;
			emit_number(&s, u, 10, false, sv < 0, width, left, pad);
			break;
		case 'u':
		case 'x':
		case 'X':
		case 'o':
			if (lng >= 2)
				u = va_arg(ap, unsigned long long);
			else if (lng == 1)
				u = va_arg(ap, unsigned long);
			else
				u = va_arg(ap, unsigned int);
			upper = *fmt == 'X';
			emit_number(&s, u, *fmt == 'u' ? 10 : *fmt == 'o' ? 8 : 16,
				    upper, false, width, left, pad);
			break;
		case 'p':
			emit(&s, '0');
			emit(&s, 'x');
			emit_number(&s, (uintptr_t)va_arg(ap, void *), 16,
				    false, false, (int)sizeof(void *) * 2, false,
				    '0');
			break;
		case 'c': {
			char c = (char)va_arg(ap, int);

			if (!left)
				for (; width > 1; width--)
					emit(&s, ' ');
			emit(&s, c);
			for (; width > 1; width--)
				emit(&s, ' ');
			break;
		}
		case 's': {
			const char *str = va_arg(ap, const char *);
			int len = 0;

			if (!str)
				str = "(null)";
			while (str[len] && (prec < 0 || len < prec))
				len++;
			if (!left)
				for (; width > len; width--)
					emit(&s, ' ');
			for (int i = 0; i < len; i++)
				emit(&s, str[i]);
			for (; width > len; width--)
				emit(&s, ' ');
			break;
		}
		case '%':
			emit(&s, '%');
			break;
		case '\0':
			fmt--;	/* a lone '%' at the end: stop cleanly */
			break;
		default:	/* unknown conversion: show it, don't guess */
			emit(&s, '%');
			emit(&s, *fmt);
			break;
		}
	}
	return s.count;
}

struct buf_ctx {
	char *buf;
	size_t size;
	size_t pos;
};

static void buf_putc(char c, void *ctx)
{
	struct buf_ctx *b = ctx;

	if (b->pos + 1 < b->size)
		b->buf[b->pos] = c;
	b->pos++;
}

int fmt_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct buf_ctx b = { buf, size, 0 };
	int n = fmt_format(buf_putc, &b, fmt, ap);

	if (size)
		buf[b.pos < size ? b.pos : size - 1] = '\0';
	return n;
}

int fmt_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = fmt_vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}
