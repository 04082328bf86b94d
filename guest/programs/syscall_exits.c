/*
 * syscall_exits - what system calls cost in hypervisor exits
 * (tests/cases/test_hv_speed.py).  Between two pauses it makes N
 * getppid() calls through int $0x80 (argv[1], default 100000); at each
 * pause it prints a line and waits for a newline on stdin, so that the
 * test can read the hypervisor's exit counters (Ctrl-] s) before and
 * after, with nothing else of this program in between.
 */
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

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000, sum = 0;

	pause_here("start");
	pause_here("before");
	for (long i = 0; i < n; i++)
		sum += int80_getppid();
	pause_here("after");
	printf("SYSCALL-EXITS calls=%ld ppid=%ld\n", n, n ? sum / n : 0);
	return 0;
}
