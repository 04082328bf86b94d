// SPDX-License-Identifier: GPL-2.0
/*
 * sigretcmp: what a user program gets when it hands the kernel a bad CS
 * or SS through sigreturn (docs/VROM.md, "A faulting IRET"), and for a misaligned SSE
 * access.  The kernel restores the selectors from the signal frame (RPL
 * forced to 3) and its IRET to user mode faults; natively the exception
 * table sends the fault to the kernel's iret-error path and only this
 * process gets a signal.  Under VMI the IRET is the ROM's or the
 * hypervisor's, which must report the fault the same way
 * (docs/VROM.md, "A faulting IRET").  The test
 * (tests/cases/test_guest_iret.py) runs this natively and under vmi-hv
 * and compares the outputs line by line.
 *
 * Each case runs in a forked child with handlers for the fault signals;
 * the handler sends the signal and its si_code through a pipe and exits.
 * The parent prints one line per case:
 *     <case>: SIG<name> code <n>     the child caught that signal
 *     <case>: ok                     sigreturn came back, nothing faulted
 *     <case>: killed SIG<name>       the child died without its handler
 * and at the end "SIGRETCMP done cases=<n>".
 *
 * Selectors are Linux i386's (arch/x86/include/asm/segment.h): kernel CS
 * 0x60, kernel DS 0x68, user CS 0x73, user DS 0x7b; the GDT has 32
 * entries, so index 32 (0x100) is beyond its limit.
 *
 * The hypervisor keeps four GDT slots of its own (hv/include/segments.h,
 * included from there: one definition): Linux leaves two of them empty
 * and never loads the other two (TSS, double-fault TSS) into a segment
 * register, so natively each is the CPU's #GP when the kernel loads it
 * (the exit path's pop or iret, and its fault fix-up).  Under vmi-hv they
 * must look the same, not stop the guest (the hv-hostile-suite's
 * "user programs" block runs these cases one by one).
 *
 * With sigretcmp=NAME on the kernel command line (vmitest=sigretcmp),
 * only case NAME runs.
 */
#define _GNU_SOURCE	/* REG_CS, REG_SS */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "segments.h"
#include "layout.h"
#include "only_case.h"

#define KERNEL_CS	0x60
#define KERNEL_DS	0x68
#define USER_CS		0x73
#define USER_DS		0x7b
#define BEYOND_GDT	0x100
#define LDT_ENTRY0	0x4	/* index 0, TI = 1 (RPL added by the kernel) */

static int cases;
static int report_fd;

struct outcome {
	int sig;
	int code;
};

static const char *signame(int sig)
{
	static const char *const names[] = {
		[SIGILL] = "SIGILL", [SIGTRAP] = "SIGTRAP", [SIGBUS] = "SIGBUS",
		[SIGFPE] = "SIGFPE", [SIGKILL] = "SIGKILL", [SIGSEGV] = "SIGSEGV",
		[SIGSYS] = "SIGSYS",
	};
	static char other[16];

	if (sig > 0 && sig < (int)(sizeof(names) / sizeof(names[0])) && names[sig])
		return names[sig];
	snprintf(other, sizeof(other), "SIG%d", sig);
	return other;
}

/* The fault's signal: tell the parent and end the child. */
static void caught(int sig, siginfo_t *si, void *uc)
{
	struct outcome o = { sig, si->si_code };

	(void)uc;
	if (write(report_fd, &o, sizeof(o)) != sizeof(o))
		_exit(2);
	_exit(0);
}

static long bad_cs, bad_ss;
static int bad_reg = -1;	/* another register of the frame, or -1 */
static long bad_val;

/* The SIGUSR1 handler: put the bad selector into the frame sigreturn
 * restores from. */
static void corrupt(int sig, siginfo_t *si, void *p)
{
	ucontext_t *uc = p;

	(void)sig;
	(void)si;
	if (bad_cs >= 0)
		uc->uc_mcontext.gregs[REG_CS] = bad_cs;
	if (bad_ss >= 0)
		uc->uc_mcontext.gregs[REG_SS] = bad_ss;
	if (bad_reg >= 0)
		uc->uc_mcontext.gregs[bad_reg] = bad_val;
}

static void on(int sig, void (*fn)(int, siginfo_t *, void *))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO;
	sigaction(sig, &sa, NULL);
}

/*
 * LDT entry 0 as a 32-bit segment that is not present: code (for CS,
 * #NP on iret) or writable data (for SS, #SS).  modify_ldt(1, ...).
 */
static int ldt_not_present(int code)
{
	struct {
		unsigned int entry_number, base_addr, limit;
		unsigned int seg_32bit:1, contents:2, read_exec_only:1,
			     limit_in_pages:1, seg_not_present:1, useable:1;
	} d = { 0, 0, 0xfffff, 1, code ? 2 : 0, 0, 1, 1, 1 };

	return syscall(SYS_modify_ldt, 1, &d, sizeof(d));
}

enum prep { PREP_NONE, PREP_LDT_CODE, PREP_LDT_DATA };

/* In the child: sigreturn with cs or ss (-1: keep) from the frame. */
static void sigreturn_with(long cs, long ss, enum prep prep)
{
	if (prep != PREP_NONE && ldt_not_present(prep == PREP_LDT_CODE) != 0)
		_exit(3);
	bad_cs = cs;
	bad_ss = ss;
	on(SIGUSR1, corrupt);
	raise(SIGUSR1);
}

static void misaligned_sse(void)
{
	static uint8_t buf[64] __attribute__((aligned(16)));
	uint32_t a = 1, b, c, d;

	/* CPUID.1:EDX.SSE (bit 25); without SSE movaps is #UD. */
	__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "=c"(c), "=d"(d));
	if (!(d & (1u << 25)))
		_exit(4);
	/* movaps (%eax), %xmm0, encoded: -m32 without -msse knows no xmm. */
	__asm__ volatile(".byte 0x0f, 0x28, 0x00" : : "a"(buf + 1) : "memory");
}

static char only[64];	/* sigretcmp=NAME: run that case alone */

static void run(const char *name, long cs, long ss, enum prep prep, int sse)
{
	struct outcome o;
	int status, p[2];
	pid_t pid;

	if (!only_case_runs(only, name))
		return;
	fflush(stdout);
	if (pipe(p) != 0) {
		printf("%s: pipe failed\n", name);
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		report_fd = p[1];
		on(SIGILL, caught);
		on(SIGSEGV, caught);
		on(SIGBUS, caught);
		on(SIGFPE, caught);
		if (sse)
			misaligned_sse();
		else
			sigreturn_with(cs, ss, prep);
		_exit(0);
	}
	close(p[1]);
	cases++;
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		printf("%s: fork or wait failed\n", name);
	else if (read(p[0], &o, sizeof(o)) == sizeof(o))
		printf("%s: %s code %d\n", name, signame(o.sig), o.code);
	else if (WIFSIGNALED(status))
		printf("%s: killed %s\n", name, signame(WTERMSIG(status)));
	else if (WEXITSTATUS(status) == 0)
		printf("%s: ok\n", name);
	else
		printf("%s: exit %d\n", name, WEXITSTATUS(status));
	close(p[0]);
}

/* sigreturn with sel in gregs[reg]. */
static void run_reg(const char *name, int reg, long sel)
{
	bad_reg = reg;
	bad_val = sel;
	run(name, -1, -1, PREP_NONE, 0);
	bad_reg = -1;
}

/* Each of the hypervisor's slots, RPL 3, in each segment register. */
static void hv_slots(void)
{
	static const struct { const char *name; int reg; } regs[] = {
		{ "cs", REG_CS }, { "ss", REG_SS }, { "ds", REG_DS },
		{ "es", REG_ES }, { "fs", REG_FS }, { "gs", REG_GS },
	};
	static const long sels[] = { HV_CS | 3, HV_DS | 3, HV_TSS_SEL | 3, HV_DFTSS_SEL | 3 };
	char name[32];

	for (unsigned i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		for (unsigned j = 0; j < sizeof(sels) / sizeof(sels[0]); j++) {
			snprintf(name, sizeof(name), "%s-hv-0x%lx", regs[i].name, sels[j]);
			run_reg(name, regs[i].reg, sels[j]);
		}
}

int main(void)
{
	only_case_read("sigretcmp", only, sizeof(only));
	printf("SIGRETCMP\n");
	run("sigreturn-unchanged", -1, -1, PREP_NONE, 0);
	run("cs-null", 0, -1, PREP_NONE, 0);
	run("cs-kernel-cs", KERNEL_CS, -1, PREP_NONE, 0);
	run("cs-kernel-ds", KERNEL_DS, -1, PREP_NONE, 0);
	run("cs-user-ds", USER_DS, -1, PREP_NONE, 0);
	run("cs-beyond-gdt", BEYOND_GDT, -1, PREP_NONE, 0);
	run("cs-ldt-empty", LDT_ENTRY0, -1, PREP_NONE, 0);
	run("cs-ldt-not-present", LDT_ENTRY0, -1, PREP_LDT_CODE, 0);
	run("ss-null", -1, 0, PREP_NONE, 0);
	run("ss-kernel-ds", -1, KERNEL_DS, PREP_NONE, 0);
	run("ss-kernel-cs", -1, KERNEL_CS, PREP_NONE, 0);
	run("ss-user-cs", -1, USER_CS, PREP_NONE, 0);
	run("ss-beyond-gdt", -1, BEYOND_GDT, PREP_NONE, 0);
	run("ss-ldt-empty", -1, LDT_ENTRY0, PREP_NONE, 0);
	run("ss-ldt-not-present", -1, LDT_ENTRY0, PREP_LDT_DATA, 0);
	hv_slots();
	/* The rest of the frame: every EFLAGS bit (the kernel keeps the
	 * user-changeable ones: TF traps), EIP and ESP in the kernel's
	 * space and in the hypervisor's reserved top (layout.h). */
	run_reg("eflags-all", REG_EFL, 0xffffffffl);
	run_reg("eip-kernel", REG_EIP, 0xc0000000l);
	run_reg("eip-reserved-top", REG_EIP, HV_TOP_RESERVED_BASE);
	run_reg("esp-reserved-top", REG_ESP, HV_TOP_RESERVED_BASE + 0x100);
	run("movaps-misaligned", -1, -1, PREP_NONE, 1);
	/* The same once more: a bad frame left nothing behind. */
	run("cs-null-again", 0, -1, PREP_NONE, 0);
	run("sigreturn-unchanged-again", -1, -1, PREP_NONE, 0);
	printf("SIGRETCMP done cases=%d\n", cases);
	return 0;
}
