/*
 * syscall_exits - what system calls cost in hypervisor exits
 * (tests/cases/test_hv_speed.py).
 *
 * Three pauses bound two windows: the first makes N getppid() calls
 * through int $0x80 (argv[1], default 100000), the second spins in user
 * mode, without a system call, for as many TSC cycles as the first took.
 * Both hold the same time-driven exits (the guest's own timer ticks) and
 * one pause each, so the test's "calls window minus spin window" is what
 * the calls themselves cost.  At each pause the program prints a line and
 * waits for a newline on stdin, so that the test can read the
 * hypervisor's exit counters (Ctrl-] s) with nothing of this program in
 * between.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void pause_here(const char *where)
{
	char c;

	printf("SYSCALL-EXITS-PAUSE %s\n", where);
	fflush(stdout);
	while (read(0, &c, 1) == 1 && c != '\n')
		;
}

static long int80_getppid(void)
{
	long ret;

	/* Always int $0x80 (no vDSO entry), which is what the test counts. */
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(64L) : "memory");
	return ret;
}

static uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000, sum = 0;
	uint64_t t0, took;

	pause_here("before");
	t0 = rdtsc();
	for (long i = 0; i < n; i++)
		sum += int80_getppid();
	took = rdtsc() - t0;
	pause_here("calls");
	t0 = rdtsc();
	while (rdtsc() - t0 < took)
		;
	pause_here("spin");
	printf("SYSCALL-EXITS calls=%ld ppid=%ld cycles=%llu\n", n, n ? sum / n : 0,
	       (unsigned long long)took);
	return 0;
}
