/*
 * fpukeep - does this process keep its FPU and SSE registers while it
 * runs?  The kernel saves them across its own task switches; a hypervisor
 * that runs another guest in between must save them too.
 *
 *     fpukeep SECONDS SEED
 *
 * loads xmm0-7 and the eight x87 registers with values derived from SEED
 * and, for SECONDS of wall time, keeps reading them back and comparing,
 * without a system call in the loop (so only a preemption can intervene).
 * Prints "FPUKEEP ok checks=N" or "FPUKEEP CORRUPT ..." and exits 0 or 1.
 * Nothing between load() and the last store() may use those registers
 * itself: no libc call but time() (a system call, which preserves them).
 * Two guests running it at once with different seeds find a hypervisor
 * that lets one guest's registers leak into the other.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint8_t want_xmm[8][16], got_xmm[8][16];
static double want_x87[8], got_x87[8];

static void load(void)
{
	__asm__ volatile("movdqu 0(%0), %%xmm0\n\tmovdqu 16(%0), %%xmm1\n\t"
			 "movdqu 32(%0), %%xmm2\n\tmovdqu 48(%0), %%xmm3\n\t"
			 "movdqu 64(%0), %%xmm4\n\tmovdqu 80(%0), %%xmm5\n\t"
			 "movdqu 96(%0), %%xmm6\n\tmovdqu 112(%0), %%xmm7"
			 : : "r"(want_xmm) : "memory");
	__asm__ volatile("fninit");
	for (int i = 7; i >= 0; i--)
		__asm__ volatile("fldl %0" : : "m"(want_x87[i]));
}

/* Read the registers back without disturbing them (fst, then rotate). */
static void store(void)
{
	__asm__ volatile("movdqu %%xmm0, 0(%0)\n\tmovdqu %%xmm1, 16(%0)\n\t"
			 "movdqu %%xmm2, 32(%0)\n\tmovdqu %%xmm3, 48(%0)\n\t"
			 "movdqu %%xmm4, 64(%0)\n\tmovdqu %%xmm5, 80(%0)\n\t"
			 "movdqu %%xmm6, 96(%0)\n\tmovdqu %%xmm7, 112(%0)"
			 : : "r"(got_xmm) : "memory");
	for (int i = 0; i < 8; i++)
		__asm__ volatile("fstl %0\n\tfincstp" : "=m"(got_x87[i]));
}

/* A plain byte compare: glibc's memcmp may use the SSE registers under
 * test. */
static int differ(const void *a, const void *b, unsigned n)
{
	const volatile uint8_t *x = a, *y = b;

	for (unsigned i = 0; i < n; i++)
		if (x[i] != y[i])
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned seconds = argc > 1 ? (unsigned)atoi(argv[1]) : 5;
	unsigned seed = argc > 2 ? (unsigned)atoi(argv[2]) : 1;
	unsigned long checks = 0;
	time_t end = time(NULL) + seconds;

	for (int r = 0; r < 8; r++) {
		for (int b = 0; b < 16; b++)
			want_xmm[r][b] = (uint8_t)(seed * 131 + r * 17 + b * 7);
		want_x87[r] = seed * 1000.0 + r + 0.5;
	}
	load();
	do {
		/* Many checks per time() call: the registers must survive
		 * whatever runs between two instructions. */
		for (int k = 0; k < 100000; k++, checks++) {
			store();
			if (differ(got_xmm, want_xmm, sizeof(want_xmm)) ||
			    differ(got_x87, want_x87, sizeof(want_x87))) {
				printf("FPUKEEP CORRUPT after %lu checks: xmm0 %02x%02x.. x87[0] %g (want %02x%02x.. %g)\n",
				       checks, got_xmm[0][0], got_xmm[0][1], got_x87[0],
				       want_xmm[0][0], want_xmm[0][1], want_x87[0]);
				return 1;
			}
		}
	} while (time(NULL) < end);
	printf("FPUKEEP ok checks=%lu seed=%u\n", checks, seed);
	return 0;
}
