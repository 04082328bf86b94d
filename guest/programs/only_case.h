/* SPDX-License-Identifier: GPL-2.0 */
/*
 * only_case.h - run one case of a comparison program alone.
 *
 * The comparison programs (ring3cmp, sigretcmp) run every case when
 * started from the shell.  Booted with vmitest=PROG and PROG=NAME on the
 * kernel command line (the hv-hostile-suite's "user programs" block),
 * only case NAME runs: one offence per boot, beside the second guest.
 */
#ifndef ONLY_CASE_H
#define ONLY_CASE_H

#include <stdio.h>
#include <string.h>

/* The value of key= on /proc/cmdline into only[len], or "" (run all). */
static void only_case_read(const char *key, char *only, size_t len)
{
	char line[1024], fmt[32], *p;
	FILE *f = fopen("/proc/cmdline", "r");

	only[0] = 0;
	if (!f)
		return;
	snprintf(fmt, sizeof(fmt), "%%%zu[^ \n]", len - 1);
	/* A word of its own: "vmitest=PROG" names the key too. */
	if (fgets(line, sizeof(line), f))
		for (p = line; (p = strstr(p, key)); p++)
			if ((p == line || p[-1] == ' ') && p[strlen(key)] == '=') {
				sscanf(p + strlen(key) + 1, fmt, only);
				break;
			}
	fclose(f);
}

/* Does case name run? */
static int only_case_runs(const char *only, const char *name)
{
	return !only[0] || strcmp(only, name) == 0;
}

#endif
