// SPDX-License-Identifier: GPL-2.0
/*
 * tlsidle: sleep 200 times for 2 ms, checking a thread-local variable
 * (glibc's TLS, through %gs and GDT entry 6) after each sleep.
 *
 * Each sleep leaves the CPU to the idle task, a kernel thread, and comes
 * back: natively two context switches.  Under VMI, load_TLS() at each
 * switch writes the GDT entries that differ through WriteGDTEntry, an
 * exit; a kernel thread has empty TLS entries, so a kernel that loads
 * them for it writes the task's entry twice per sleep.  Guest patch 27
 * leaves the last user task's entries in place while a kernel thread
 * runs (docs/GUEST.md, "What is hooked"); the test hv-linux-tls-idle
 * counts the hypervisor's WriteGDTEntry calls around this program.
 *
 * Prints "TLSIDLE sleeps=<n> rc=<r>" (r 0: the variable held its value
 * after every sleep).
 */
#include <stdio.h>
#include <time.h>

#define SLEEPS	200

static __thread volatile unsigned int mark = 0x7153a11e;

int main(void)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };
	int rc = 0, n;

	for (n = 0; n < SLEEPS; n++) {
		mark = 0x7153a11e + n;
		nanosleep(&ts, NULL);
		if (mark != 0x7153a11eu + n) {
			rc = 1;
			break;
		}
	}
	printf("TLSIDLE sleeps=%d rc=%d\n", n, rc);
	return rc;
}
