/*
 * guest_mark.c - mark a guest's console lines that start like the
 * hypervisor's (docs/HV.md, "What the guest can reach"); the rules are in guest_mark.h.
 */
#include "guest_mark.h"

static void emit(const char *s, unsigned n, void (*out)(void *ctx, char c), void *ctx)
{
	for (unsigned i = 0; i < n; i++)
		out(ctx, s[i]);
}

void guest_mark_putc(struct guest_mark *m, char c, void (*out)(void *ctx, char c), void *ctx)
{
	static const char word[] = GUEST_MARK_WORD;
	static const char prefix[] = GUEST_MARK_PREFIX;

	if (!m->mid_line) {
		if (c == word[m->held]) {
			if (++m->held < sizeof(word) - 1)
				return;		/* could still become the word */
			emit(prefix, sizeof(prefix) - 1, out, ctx);
			emit(word, m->held, out, ctx);
			m->held = 0;
			m->mid_line = true;
			return;
		}
		/* Not the word: what was held goes out as it came. */
		emit(word, m->held, out, ctx);
		m->held = 0;
	}
	out(ctx, c);
	m->mid_line = c != '\n' && c != '\r';
}
