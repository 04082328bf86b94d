// SPDX-License-Identifier: GPL-2.0
/*
 * fpexcept: what a user program gets from the arithmetic exceptions it
 * unmasks.  With CR0.NE set an unmasked x87 exception is #MF in the
 * process that caused it, and Linux sends it SIGFPE with the code of the
 * exception; with NE clear (the hypervisor's CR0 before docs/TIME.md,
 * "Rates a guest controls" and fpu.c) it became the legacy IRQ13 and the
 * process ran on.  The test (tests/cases/test_hv_floods.py) runs this
 * natively and under vmi-hv and compares the outputs line by line.
 *
 * Each case runs in a forked child with a SIGFPE handler that sends the
 * si_code through a pipe and exits.  The parent prints one line per case:
 *     <case>: SIGFPE code <n>        the child caught SIGFPE
 *     <case>: ok                     nothing was raised
 *     <case>: killed SIG<n>          the child died otherwise
 * and at the end "FPEXCEPT done cases=<n>".
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

static int cases;
static int report_fd;

static void on_fpe(int sig, siginfo_t *si, void *uc)
{
	int out[2] = { sig, si->si_code };

	(void)uc;
	if (write(report_fd, out, sizeof(out)) != sizeof(out))
		_exit(3);
	_exit(0);
}

static void run(const char *name, void (*fn)(void))
{
	int p[2], got[2];
	pid_t pid;
	int status;
	ssize_t n;

	cases++;
	if (pipe(p))
		return;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_fpe;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGFPE, &sa, 0);
		close(p[0]);
		report_fd = p[1];
		fn();
		_exit(0);
	}
	close(p[1]);
	n = read(p[0], got, sizeof(got));
	close(p[0]);
	waitpid(pid, &status, 0);
	if (n == sizeof(got))
		printf("%s: SIGFPE code %d\n", name, got[1]);
	else if (WIFSIGNALED(status))
		printf("%s: killed SIG%d\n", name, WTERMSIG(status));
	else
		printf("%s: ok\n", name);
}

static const double zero = 0.0, one = 1.0, minus_one = -1.0;
static volatile double result;

/* FCW with every exception masked but `unmask` (ZM 0x04, IM 0x01). */
static void x87_cw(uint16_t unmask)
{
	uint16_t cw = 0x037f & ~unmask;

	__asm__ volatile("fninit\n\tfldcw %0" : : "m"(cw));
}

static void x87_div_zero(void)
{
	x87_cw(0x04);
	__asm__ volatile("fldl %1\n\tfdivl %2\n\tfstpl %0\n\tfwait" : "=m"(result) : "m"(one), "m"(zero));
}

static void x87_invalid(void)
{
	x87_cw(0x01);
	__asm__ volatile("fldl %1\n\tfsqrt\n\tfstpl %0\n\tfwait" : "=m"(result) : "m"(minus_one));
}

static void x87_masked(void)
{
	x87_cw(0);
	__asm__ volatile("fldl %1\n\tfdivl %2\n\tfstpl %0\n\tfwait" : "=m"(result) : "m"(one), "m"(zero));
}

/* The exception pending across a system call: raised at the next
 * waiting x87 instruction, after getpid(). */
static void x87_pending(void)
{
	x87_cw(0x04);
	__asm__ volatile("fldl %0\n\tfdivl %1" : : "m"(one), "m"(zero));
	getpid();
	__asm__ volatile("fwait");
}

__attribute__((target("sse2"))) static void sse_div_zero(void)
{
	uint32_t mxcsr = 0x1f80 & ~0x0200;	/* ZM clear */

	__asm__ volatile("ldmxcsr %0" : : "m"(mxcsr));
	__asm__ volatile("movsd %1, %%xmm0\n\tdivsd %2, %%xmm0\n\tmovsd %%xmm0, %0"
			 : "=m"(result) : "m"(one), "m"(zero) : "xmm0");
}

static void int_div_zero(void)
{
	volatile int a = 1, b = 0;

	result = a / b;
}

int main(void)
{
	setvbuf(stdout, 0, _IOLBF, 0);
	printf("FPEXCEPT start\n");
	run("x87 divide by zero unmasked", x87_div_zero);
	run("x87 invalid operation unmasked", x87_invalid);
	run("x87 divide by zero masked", x87_masked);
	run("x87 exception pending across a system call", x87_pending);
	run("sse divide by zero unmasked", sse_div_zero);
	run("integer divide by zero", int_div_zero);
	printf("FPEXCEPT done cases=%d\n", cases);
	return 0;
}
