// SPDX-License-Identifier: GPL-2.0
/*
 * ring3cmp: what a user program gets for each thing ring 3 must not do
 * (docs/HV.md, "What the guest can reach").  The same binary runs natively and under vmi-hv; the test
 * (tests/cases/test_hv_ring3.py) compares the two outputs line by line.
 * On hardware each case only signals the process; under a hypervisor
 * that gets one of them wrong the whole guest stops, or, worse, the case
 * reports "ok" where the CPU refuses.
 *
 * Run as root (the initramfs shell), it first drops to uid/gid 65534, so
 * every case runs as an unprivileged user in ring 3.  Each case runs in a
 * forked child; the parent prints one line per case:
 *     <case>: signal SIG<name>     the child died of that signal
 *     <case>: ok                   the child exited 0
 *     <case>: exit <n>             the child exited n (for a syscall: its errno)
 * and at the end "RING3CMP done cases=<n>".
 *
 * Selectors are Linux i386's (arch/x86/include/asm/segment.h): kernel CS
 * 0x60, kernel DS 0x68, user CS 0x73, user DS 0x7b, per-CPU 0xd8.  The
 * hypervisor's own GDT slots and its reserved top of the address space
 * come from their one definition, hv/include/segments.h and layout.h:
 * natively the slots are empty (or a TSS) and the top is the kernel's,
 * so a user program touching either gets a signal, nothing more.
 *
 * With ring3cmp=NAME on the kernel command line (vmitest=ring3cmp), only
 * case NAME runs (only_case.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <asm/ldt.h>

#include <sched.h>

#include "segments.h"
#include "layout.h"

#define STR(x)	#x
#define XSTR(x)	STR(x)
#include "only_case.h"

#define KERNEL_CS	0x60
#define KERNEL_DS	0x68
#define USER_CS		0x73
#define USER_DS		0x7b
#define KERNEL_PERCPU	0xd8

static int cases;
static char only[64];

static const char *signame(int sig)
{
	static const char *const names[] = {
		[SIGILL] = "SIGILL", [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT",
		[SIGBUS] = "SIGBUS", [SIGFPE] = "SIGFPE", [SIGKILL] = "SIGKILL",
		[SIGSEGV] = "SIGSEGV", [SIGSYS] = "SIGSYS", [SIGTERM] = "SIGTERM",
	};
	static char other[16];

	if (sig > 0 && sig < (int)(sizeof(names) / sizeof(names[0])) && names[sig])
		return names[sig];
	snprintf(other, sizeof(other), "SIG%d", sig);
	return other;
}

/* Run fn(arg) in a child and print how it ended. */
static void run(const char *name, void (*fn)(long), long arg)
{
	int status;
	pid_t pid;

	if (!only_case_runs(only, name))
		return;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		fn(arg);
		_exit(0);
	}
	cases++;
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		printf("%s: fork or wait failed\n", name);
	else if (WIFSIGNALED(status))
		printf("%s: signal %s\n", name, signame(WTERMSIG(status)));
	else if (WEXITSTATUS(status) == 0)
		printf("%s: ok\n", name);
	else
		printf("%s: exit %d\n", name, WEXITSTATUS(status));
}

/* --- far transfers to kernel (and other) selectors --- */

static void far_jmp_to(long sel)
{
	struct { uint32_t off; uint16_t sel; } __attribute__((packed)) t = { 0, (uint16_t)sel };

	__asm__ volatile("movl $1f, (%0)\n\t"
			 "ljmp *(%0)\n"
			 "1:" : : "r"(&t) : "memory");
}

static void far_call_to(long sel)
{
	struct { uint32_t off; uint16_t sel; } __attribute__((packed)) t = { 0, (uint16_t)sel };

	/* A far call that lands on the label pushed cs:eip; drop them. */
	__asm__ volatile("movl $1f, (%0)\n\t"
			 "lcall *(%0)\n"
			 "1:\taddl $8, %%esp" : : "r"(&t) : "memory");
}

static void far_ret_to(long sel)
{
	__asm__ volatile("pushl %0\n\t"
			 "pushl $1f\n\t"
			 "lret\n"
			 "1:" : : "r"((uint32_t)sel) : "memory");
}

static void iret_to(long sel)
{
	__asm__ volatile("pushfl\n\t"
			 "popl %%eax\n\t"
			 "pushl %%eax\n\t"	/* eflags */
			 "pushl %0\n\t"		/* cs */
			 "pushl $1f\n\t"		/* eip */
			 "iret\n"
			 "1:" : : "r"((uint32_t)sel) : "eax", "memory");
}

/* --- segment register loads --- */

static void load_ds(long sel) { __asm__ volatile("movw %w0, %%ds" : : "r"(sel)); }
static void load_es(long sel) { __asm__ volatile("movw %w0, %%es" : : "r"(sel)); }
static void load_fs(long sel) { __asm__ volatile("movw %w0, %%fs" : : "r"(sel)); }
static void load_gs(long sel) { __asm__ volatile("movw %w0, %%gs" : : "r"(sel)); }
static void load_ss(long sel)
{
	/* Put the user's own SS back if the load succeeds. */
	__asm__ volatile("movw %%ss, %%dx\n\t"
			 "movw %w0, %%ss\n\t"
			 "movw %%dx, %%ss" : : "r"(sel) : "edx");
}

static void pop_ds(long sel)
{
	__asm__ volatile("pushl %0\n\tpopl %%ds" : : "r"((uint32_t)sel) : "memory");
}

static void lds_from(long sel)
{
	struct { uint32_t off; uint16_t sel; } __attribute__((packed)) p = { 0, (uint16_t)sel };
	uint32_t r;

	/* The pointer in a register: the push moves esp under an esp-relative operand. */
	__asm__ volatile("pushl %%ds\n\tlds (%1), %0\n\tpopl %%ds" : "=r"(r) : "r"(&p) : "memory");
}

static void lss_from(long sel)
{
	struct { uint32_t off; uint16_t sel; } __attribute__((packed)) p = { 0, (uint16_t)sel };

	__asm__ volatile("movl %%esp, %%ecx\n\t"
			 "movw %%ss, %%dx\n\t"
			 "movl %%esp, (%0)\n\t"
			 "lss (%0), %%esp\n\t"
			 "movw %%dx, %%ss\n\t"
			 "movl %%ecx, %%esp" : : "r"(&p) : "ecx", "edx", "memory");
}

/* A memory access through a null DS: #GP(0) on the CPU. */
static void null_ds_access(long unused)
{
	static volatile uint32_t word;
	uint32_t r;

	(void)unused;
	__asm__ volatile("pushl %%ds\n\t"
			 "movw %w2, %%ds\n\t"
			 "movl %1, %0\n\t"
			 "popl %%ds" : "=r"(r) : "m"(word), "r"(0) : "memory");
}

/* --- instructions --- */

static void misaligned_sse(long unused)
{
	static uint8_t buf[64] __attribute__((aligned(16)));

	(void)unused;
	/* movaps (%eax), %xmm0, encoded: -m32 without -msse knows no xmm. */
	__asm__ volatile(".byte 0x0f, 0x28, 0x00" : : "a"(buf + 1) : "memory");
}

static void insn_rdpmc(long unused) { (void)unused; __asm__ volatile("xorl %%ecx, %%ecx\n\trdpmc" : : : "eax", "ecx", "edx"); }
static void insn_sysenter(long unused) { (void)unused; __asm__ volatile("sysenter" : : : "memory"); }
static void insn_sysexit(long unused) { (void)unused; __asm__ volatile("sysexit" : : : "memory"); }
static void insn_hlt(long unused) { (void)unused; __asm__ volatile("hlt"); }
static void insn_cli(long unused) { (void)unused; __asm__ volatile("cli"); }
static void insn_sti(long unused) { (void)unused; __asm__ volatile("sti"); }
static void insn_ud2(long unused) { (void)unused; __asm__ volatile("ud2"); }
static void insn_int3(long unused) { (void)unused; __asm__ volatile("int3"); }
static void insn_icebp(long unused) { (void)unused; __asm__ volatile(".byte 0xf1"); }
static void insn_into(long unused)
{
	(void)unused;
	/* 0x7f + 1 overflows a signed byte: OF set, into traps. */
	__asm__ volatile("movb $0x7f, %%al\n\taddb $1, %%al\n\t.byte 0xce" : : : "eax", "cc");
}
static void insn_mov_cr0(long unused) { uint32_t r; (void)unused; __asm__ volatile("movl %%cr0, %0" : "=r"(r)); }
static void insn_mov_to_cr3(long unused) { (void)unused; __asm__ volatile("movl %0, %%cr3" : : "r"(0)); }
static void insn_lgdt(long unused)
{
	static struct { uint16_t limit; uint32_t base; } __attribute__((packed)) d;

	(void)unused;
	__asm__ volatile("lgdt %0" : : "m"(d));
}
static void insn_lldt(long unused) { (void)unused; __asm__ volatile("lldt %w0" : : "r"(0)); }
static void insn_rdmsr(long unused) { (void)unused; __asm__ volatile("rdmsr" : : "c"(0x174) : "eax", "edx"); }
static void insn_wrmsr(long unused) { (void)unused; __asm__ volatile("wrmsr" : : "c"(0x174), "a"(0x60), "d"(0)); }
static void insn_invlpg(long unused) { (void)unused; __asm__ volatile("invlpg (%0)" : : "r"(0x1000) : "memory"); }
static void insn_wbinvd(long unused) { (void)unused; __asm__ volatile("wbinvd"); }

/* --- port I/O (no ioperm, IOPL 0) --- */

static void port_inb(long port) { uint8_t v; __asm__ volatile("inb %w1, %0" : "=a"(v) : "d"(port)); }
static void port_outb(long port) { __asm__ volatile("outb %b0, %w1" : : "a"(0xfe), "d"(port)); }
static void port_inb_imm80(long unused) { uint8_t v; (void)unused; __asm__ volatile("inb $0x80, %0" : "=a"(v)); }
static void port_insb(long port)
{
	uint8_t buf[4];

	__asm__ volatile("cld\n\trep insb" : : "D"(buf), "c"(4), "d"(port) : "memory");
}

/* --- int n: every vector --- */

/* One int instruction per vector: "int $n; ret" for n = 0..255, built
 * in a table so that each child executes exactly that vector.  For
 * 0x80, eax holds getpid, so the system call is harmless. */
static uint8_t int_table[256][4] __attribute__((aligned(16)));

static void int_vector(long n)
{
	void (*fn)(void) = (void (*)(void))(void *)int_table[n];

	__asm__ volatile("call *%0" : : "r"(fn), "a"(SYS_getpid) : "ecx", "edx", "memory");
}

/* --- modify_ldt --- */

#define SEG_REG_SS 1

struct user_desc_raw {
	unsigned int entry_number, base_addr, limit;
	unsigned int flags;	/* seg_32bit:1 contents:2 read_exec_only:1 limit_in_pages:1 seg_not_present:1 useable:1 */
};

#define LDT_32BIT	(1u << 0)
#define LDT_CONTENTS(c)	((unsigned)(c) << 1)
#define LDT_RX_ONLY	(1u << 3)
#define LDT_PAGES	(1u << 4)
#define LDT_NOT_PRESENT	(1u << 5)

enum { LDT_DATA, LDT_CODE, LDT_CONFORMING, LDT_BEYOND, LDT_16BIT, LDT_DATA_NP, LDT_DATA_E1, LDT_LAST };

static void ldt_write(long which)
{
	struct user_desc_raw d = { .entry_number = 0, .base_addr = 0, .limit = 0xfffff,
				   .flags = LDT_32BIT | LDT_PAGES };

	switch (which) {
	case LDT_DATA: break;					/* flat data, entry 0 */
	case LDT_CODE: d.flags |= LDT_CONTENTS(2); break;	/* flat code, entry 0 */
	case LDT_CONFORMING: d.flags |= LDT_CONTENTS(3); break;	/* conforming, present: refused */
	case LDT_BEYOND: d.entry_number = 8192; break;		/* beyond LDT_ENTRIES */
	case LDT_16BIT: d.flags &= ~LDT_32BIT; break;		/* no 16-bit segments here */
	case LDT_DATA_NP: d.flags |= LDT_NOT_PRESENT; d.entry_number = 2; break;
	case LDT_DATA_E1: d.entry_number = 1; break;		/* flat data, entry 1 */
	}
	if (syscall(SYS_modify_ldt, 1, &d, sizeof(d)) != 0)
		_exit(errno);
}

/* Entry 1 as flat data (selector 0xf), then ds through it and a read. */
static void ldt_data(long unused)
{
	static volatile uint32_t word = 42;
	uint32_t r;

	(void)unused;
	ldt_write(LDT_DATA_E1);
	__asm__ volatile("pushl %%ds\n\t"
			 "movw %w2, %%ds\n\t"
			 "movl %1, %0\n\t"
			 "popl %%ds" : "=r"(r) : "m"(word), "r"(0xf) : "memory");
	if (r != 42)
		_exit(3);
}

/* Entry 2 written not present (selector 0x17): ds is #NP, ss #SS. */
static void ldt_not_present(long reg)
{
	ldt_write(LDT_DATA_NP);
	if (reg == SEG_REG_SS)
		load_ss(0x17);
	else
		load_ds(0x17);
}

/* A selector beyond the LDT's limit (entry 7 of a 2-entry LDT). */
static void ldt_beyond_limit(long unused)
{
	(void)unused;
	ldt_write(LDT_DATA_E1);
	load_ds(0x3f);
}

/* LDT entry 1 based in the reserved top (layout.h), or expand-down from
 * the guest's space across it: a read through fs:0 (fs:0x1000 for the
 * expand-down one, linear reserved top + 0x1000) is a user access there. */
static void ldt_reserved_top(long expand_down)
{
	struct user_desc_raw d = { .entry_number = 1, .base_addr = HV_TOP_RESERVED_BASE,
				   .limit = 0xfffff, .flags = LDT_32BIT | LDT_PAGES };
	uint32_t r, off = 0;

	if (expand_down) {
		/* Expand-down, limit 0: offsets 1..4 GiB-1 from base. */
		d.base_addr = HV_TOP_RESERVED_BASE - HV_PAGE_SIZE;
		d.limit = 0;
		d.flags = LDT_32BIT | LDT_PAGES | LDT_CONTENTS(1);
		off = 2 * HV_PAGE_SIZE;
	}
	if (syscall(SYS_modify_ldt, 1, &d, sizeof(d)) != 0)
		_exit(errno);
	__asm__ volatile("movw %w1, %%fs\n\tmovl %%fs:(%2), %0" : "=r"(r) : "r"(0xf), "r"(off) : "memory");
}

/* ss through LDT entry 1 (flat data, selector 0xf) across system calls
 * and whatever interrupts come: the kernel, and under vmi-hv the
 * hypervisor, return to a user frame whose SS is in the LDT. */
static void ldt_ss_syscalls(long unused)
{
	uint32_t ss;

	(void)unused;
	ldt_write(LDT_DATA_E1);
	__asm__ volatile("movw %%ss, %%bx\n\t"
			 "movw %w2, %%ss\n\t"
			 "movl $20000, %%esi\n"
			 "1:\tmovl %3, %%eax\n\t"
			 "int $0x80\n\t"
			 "decl %%esi\n\t"
			 "jnz 1b\n\t"
			 "movw %%ss, %w0\n\t"
			 "movw %%bx, %%ss" : "=&r"(ss), "=&b"(unused) : "r"(0xf), "i"(SYS_getppid)
			 : "eax", "esi", "memory");
	_exit((ss & 0xffff) == 0xf ? 0 : 1);
}

/* fs through LDT entry 1 across sched_yield (context switches): the
 * kernel reloads it, and the LDT, for this task each time. */
static void ldt_fs_yield(long unused)
{
	static volatile uint32_t word = 4242;
	uint32_t r = 0;

	(void)unused;
	ldt_write(LDT_DATA_E1);
	__asm__ volatile("movw %w0, %%fs" : : "r"(0xf));
	for (int i = 0; i < 200; i++) {
		sched_yield();
		__asm__ volatile("movl %%fs:%1, %0" : "=r"(r) : "m"(word));
		if (r != 4242)
			_exit(3);
	}
}

static void ldt_read(long unused)
{
	uint8_t buf[64];

	(void)unused;
	if (syscall(SYS_modify_ldt, 0, buf, sizeof(buf)) < 0)
		_exit(errno);
}

/* Far jump through LDT entry 0 (selector 7: LDT, RPL 3) after writing a
 * flat 32-bit code descriptor there; back through the user CS. */
static void ldt_code(long unused)
{
	(void)unused;
	ldt_write(LDT_CODE);
	__asm__ volatile("ljmp $0x7, $1f\n"
			 "1:\tljmp $0x73, $2f\n"
			 "2:" : : : "memory");
}

/* --- a prefixed int $0x80 --- */

/* write(fd, "x", 1) through int $0x80 with a prefix byte before it; the
 * pipe must then hold exactly one byte (a resume in the middle of the
 * instruction would run "cd 80" again, now with eax = 1, exit). */
static void prefixed_int80(long prefix)
{
	int p[2];
	char c = 'x', buf[4];
	long r;

	if (pipe(p))
		_exit(100);
	if (prefix == 0x66)
		__asm__ volatile(".byte 0x66\n\tint $0x80" : "=a"(r) : "a"(SYS_write), "b"(p[1]), "c"(&c), "d"(1) : "memory");
	else if (prefix == 0x3e)
		__asm__ volatile(".byte 0x3e\n\tint $0x80" : "=a"(r) : "a"(SYS_write), "b"(p[1]), "c"(&c), "d"(1) : "memory");
	else
		__asm__ volatile(".byte 0xf3, 0x2e\n\tint $0x80" : "=a"(r) : "a"(SYS_write), "b"(p[1]), "c"(&c), "d"(1) : "memory");
	close(p[1]);
	if (r != 1 || read(p[0], buf, sizeof(buf)) != 1)
		_exit(101);
}

/* --- the hypervisor's reserved top of the address space --- */

static void read_at(long lin) { (void)*(volatile uint32_t *)lin; }
static void write_at(long lin) { *(volatile uint32_t *)lin = 0x5a5a5a5a; }
static void jump_to(long lin) { ((void (*)(void))lin)(); }

/* --- EFLAGS bits a user program may set, and what it reads back --- */

#define FL_TF	0x00000100u
#define FL_IOPL	0x00003000u
#define FL_NT	0x00004000u
#define FL_AC	0x00040000u
#define FL_ID	0x00200000u

static uint32_t get_flags(void)
{
	uint32_t f;

	__asm__ volatile("pushfl; popl %0" : "=r"(f));
	return f;
}

static void set_flags(uint32_t f) { __asm__ volatile("pushl %0; popfl" : : "r"(f) : "cc", "memory"); }

/* popf with bit(s) `bits` set, then a system call (through the kernel
 * and its return) and a fork, whose child starts with the parent's flags
 * and takes a hidden page fault at its first touch of the copied stack
 * (which the hypervisor fills and resumes without the guest).  Exit 0 if
 * the bits survived all of it, 1 after the system call, 2 in the child. */
static void flags_kept(long bits)
{
	int status;
	pid_t pid;

	set_flags(get_flags() | (uint32_t)bits);
	syscall(SYS_getppid);
	if ((get_flags() & (uint32_t)bits) != (uint32_t)bits)
		_exit(1);
	pid = fork();
	if (pid == 0)
		_exit((get_flags() & (uint32_t)bits) == (uint32_t)bits ? 0 : 2);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		_exit(3);
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 4);
}

/* popf with NT, then the program's own iret: a task return. */
static void nt_iret(long unused)
{
	(void)unused;
	set_flags(get_flags() | FL_NT);
	__asm__ volatile("pushfl\n pushl %%cs\n pushl $1f\n iret\n 1:" : : : "memory");
}

/* --- set_thread_area: the kernel writes a TLS slot of the GDT --- */

static uint32_t tls_word = 0x1234abcd;

/* A 32-bit TLS segment: contents 0 data, 2 code; not_present; then
 * loaded into fs and read (data) or called (code). */
static void tls_segment(long kind)
{
	struct user_desc d = {
		.entry_number = (unsigned)-1, .base_addr = (unsigned)(uintptr_t)&tls_word,
		.limit = 3, .seg_32bit = 1, .contents = kind == 2 ? 2 : 0,
		.seg_not_present = kind == 1, .useable = 1,
	};
	uint32_t v;

	if (syscall(SYS_set_thread_area, &d) != 0)
		_exit(errno);
	__asm__ volatile("movw %w0, %%fs" : : "r"(d.entry_number * 8 + 3));
	__asm__ volatile("movl %%fs:0, %0" : "=r"(v));
	_exit(v == tls_word ? 0 : 1);
}

/* A flat 32-bit TLS code segment, called far: it runs in ring 3. */
static void tls_code_call(long unused)
{
	struct user_desc d = {
		.entry_number = (unsigned)-1, .base_addr = 0, .limit = 0xfffff,
		.seg_32bit = 1, .contents = 2, .limit_in_pages = 1, .useable = 1,
	};
	uint32_t cs;

	(void)unused;
	if (syscall(SYS_set_thread_area, &d) != 0)
		_exit(errno);
	struct { uint32_t off; uint16_t sel; } __attribute__((packed)) target = { 0, (uint16_t)(d.entry_number * 8 + 3) };
	__asm__ volatile("movl $1f, %1\n lcall *%1\n jmp 2f\n"
			 "1: movl %%cs, %0\n lret\n 2:" : "=&r"(cs), "+m"(target) : : "memory");
	_exit(cs == (uint32_t)(d.entry_number * 8 + 3) ? 0 : 1);
}

/* --- system calls of the kernel's legacy ring-3 services --- */

static void sys_errno(long nr)
{
	long r;

	switch (nr) {
	case SYS_iopl: r = syscall(nr, 3); break;
	case SYS_ioperm: r = syscall(nr, 0x80, 1, 1); break;
	default: r = syscall(nr, 0, 0); break;	/* vm86old, vm86 */
	}
	_exit(r == 0 ? 0 : errno);
}

/* --- ptrace: the kernel writes a traced child's registers --- */

/* A traced grandchild stops; ptrace(SETREGS) sets regs field `which`
 * (set_field) and continues it; this child exits with the grandchild's
 * end: its exit status, or 100 + the signal that killed it. */
static long pt_value;

static void pt_setregs(long which)
{
	struct user_regs_struct r;
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status))
		_exit(90);
	if (ptrace(PTRACE_GETREGS, pid, 0, &r) != 0)
		_exit(91);
	switch (which) {
	case 0: r.xcs = pt_value; break;
	case 1: r.xss = pt_value; break;
	case 2: r.xds = pt_value; break;
	case 3: r.xes = pt_value; break;
	case 4: r.xfs = pt_value; break;
	case 5: r.xgs = pt_value; break;
	case 6: r.eflags = pt_value; break;
	}
	if (ptrace(PTRACE_SETREGS, pid, 0, &r) != 0) {
		int e = errno;

		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		_exit(e);
	}
	ptrace(PTRACE_CONT, pid, 0, 0);
	while (waitpid(pid, &status, 0) == pid && WIFSTOPPED(status))
		ptrace(PTRACE_CONT, pid, 0, WSTOPSIG(status) == SIGSTOP ? 0 : WSTOPSIG(status));
	_exit(WIFSIGNALED(status) ? 100 + WTERMSIG(status) : WEXITSTATUS(status));
}

/* Single-step a traced child through a fixed block (nops, a system
 * call, nops, exit): the child's exit code is the number of steps whose
 * EIP was inside the block (TF through the kernel and back). */
void step_block(void);
void step_block_end(void);
__asm__(".text\nstep_block:\n"
	" nop; nop; nop; nop; nop\n"
	" movl $" XSTR(SYS_getppid) ", %eax\n int $0x80\n"
	" nop; nop; nop; nop; nop\n"
	" movl $" XSTR(SYS_exit) ", %eax\n xorl %ebx, %ebx\n int $0x80\n"
	"step_block_end:\n");

static void pt_singlestep(long unused)
{
	struct user_regs_struct r;
	int status, steps = 0;
	pid_t pid = fork();

	(void)unused;
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		step_block();
		_exit(99);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status))
		_exit(90);
	for (int n = 0; n < 100000; n++) {
		if (ptrace(PTRACE_SINGLESTEP, pid, 0, 0) != 0 || waitpid(pid, &status, 0) != pid)
			_exit(91);
		if (!WIFSTOPPED(status))
			break;
		if (WSTOPSIG(status) != SIGTRAP)
			_exit(92);
		if (ptrace(PTRACE_GETREGS, pid, 0, &r) != 0)
			_exit(93);
		if (r.eip >= (long)(uintptr_t)step_block && r.eip < (long)(uintptr_t)step_block_end)
			steps++;
	}
	_exit(WIFEXITED(status) && WEXITSTATUS(status) == 0 ? steps : 94);
}

static void drop_privileges(void)
{
	if (getuid() != 0)
		return;
	if (setgid(65534) || setuid(65534)) {
		perror("ring3cmp: dropping to uid 65534");
		_exit(1);
	}
}

int main(void)
{
	char name[64];

	only_case_read("ring3cmp", only, sizeof(only));
	drop_privileges();
	printf("RING3CMP uid=%d\n", (int)getuid());
	for (int n = 0; n < 256; n++) {
		int_table[n][0] = 0xcd;
		int_table[n][1] = (uint8_t)n;
		int_table[n][2] = 0xc3;	/* ret */
	}

	run("ljmp-user-cs", far_jmp_to, USER_CS);
	run("ljmp-kernel-cs", far_jmp_to, KERNEL_CS);
	run("ljmp-kernel-cs-rpl3", far_jmp_to, KERNEL_CS | 3);
	run("ljmp-kernel-ds", far_jmp_to, KERNEL_DS);
	run("ljmp-hv-slot", far_jmp_to, HV_CS);
	run("ljmp-null", far_jmp_to, 0);
	run("lcall-kernel-cs", far_call_to, KERNEL_CS);
	run("lcall-kernel-cs-rpl3", far_call_to, KERNEL_CS | 3);
	run("lret-user-cs", far_ret_to, USER_CS);
	run("lret-kernel-cs", far_ret_to, KERNEL_CS);
	run("lret-kernel-cs-rpl1", far_ret_to, KERNEL_CS | 1);
	run("lret-kernel-cs-rpl3", far_ret_to, KERNEL_CS | 3);
	run("iret-user-cs", iret_to, USER_CS);
	run("iret-kernel-cs", iret_to, KERNEL_CS);
	run("iret-kernel-cs-rpl3", iret_to, KERNEL_CS | 3);

	static const struct { const char *reg; void (*fn)(long); } segs[] = {
		{ "ds", load_ds }, { "es", load_es }, { "fs", load_fs }, { "gs", load_gs }, { "ss", load_ss },
	};
	static const struct { const char *what; long sel; } sels[] = {
		{ "user-ds", USER_DS }, { "kernel-ds", KERNEL_DS }, { "kernel-ds-rpl3", KERNEL_DS | 3 },
		{ "kernel-cs", KERNEL_CS }, { "percpu", KERNEL_PERCPU }, { "hv-slot", HV_DS },
		{ "tss", HV_TSS_SEL },
	};
	for (unsigned i = 0; i < sizeof(segs) / sizeof(segs[0]); i++)
		for (unsigned j = 0; j < sizeof(sels) / sizeof(sels[0]); j++) {
			snprintf(name, sizeof(name), "mov-%s-%s", segs[i].reg, sels[j].what);
			run(name, segs[i].fn, sels[j].sel);
		}
	run("pop-ds-kernel-ds", pop_ds, KERNEL_DS);
	run("lds-kernel-ds", lds_from, KERNEL_DS);
	run("lss-kernel-ds", lss_from, KERNEL_DS);
	run("lss-user-ds", lss_from, USER_DS);
	run("null-ds-access", null_ds_access, 0);

	run("movaps-misaligned", misaligned_sse, 0);
	run("rdpmc", insn_rdpmc, 0);
	run("sysenter", insn_sysenter, 0);
	run("sysexit", insn_sysexit, 0);
	run("hlt", insn_hlt, 0);
	run("cli", insn_cli, 0);
	run("sti", insn_sti, 0);
	run("ud2", insn_ud2, 0);
	run("int3", insn_int3, 0);
	run("icebp", insn_icebp, 0);
	run("into", insn_into, 0);
	run("mov-from-cr0", insn_mov_cr0, 0);
	run("mov-to-cr3", insn_mov_to_cr3, 0);
	run("lgdt", insn_lgdt, 0);
	run("lldt", insn_lldt, 0);
	run("rdmsr", insn_rdmsr, 0);
	run("wrmsr", insn_wrmsr, 0);
	run("invlpg", insn_invlpg, 0);
	run("wbinvd", insn_wbinvd, 0);

	run("inb-0x80", port_inb_imm80, 0);
	run("inb-com1", port_inb, 0x3f8);
	run("outb-com1", port_outb, 0x3f8);
	run("outb-kbd-reset", port_outb, 0x64);
	run("outb-debug-exit", port_outb, 0xf4);
	run("inb-pci-config", port_inb, 0xcfc);
	run("insb-com1", port_insb, 0x3f8);

	for (int n = 0; n < 256; n++) {
		snprintf(name, sizeof(name), "int-0x%02x", n);
		run(name, int_vector, n);
	}

	run("modify_ldt-read", ldt_read, 0);
	run("modify_ldt-data", ldt_write, LDT_DATA);
	run("modify_ldt-code", ldt_write, LDT_CODE);
	run("modify_ldt-conforming", ldt_write, LDT_CONFORMING);
	run("modify_ldt-beyond", ldt_write, LDT_BEYOND);
	run("modify_ldt-16bit", ldt_write, LDT_16BIT);
	run("modify_ldt-not-present", ldt_write, LDT_DATA_NP);
	run("ldt-code-segment", ldt_code, 0);
	run("ldt-data-segment", ldt_data, 0);
	run("ldt-ds-not-present", ldt_not_present, 0);
	run("ldt-ss-not-present", ldt_not_present, SEG_REG_SS);
	run("ldt-beyond-limit", ldt_beyond_limit, 0);
	run("mov-ds-ldt-without-ldt", load_ds, 0x7);
	run("ldt-ss-across-syscalls", ldt_ss_syscalls, 0);
	run("ldt-fs-across-sched_yield", ldt_fs_yield, 0);
	run("ldt-base-reserved-top", ldt_reserved_top, 0);
	run("ldt-expand-down-into-reserved-top", ldt_reserved_top, 1);

	run("int80-prefix-66", prefixed_int80, 0x66);
	run("int80-prefix-3e", prefixed_int80, 0x3e);
	run("int80-prefix-f3-2e", prefixed_int80, 0xf3);

	/* Its first byte, the switcher (present in the CPU's tables, but
	 * supervisor-only), the per-vCPU pages, the last page; and the page
	 * below, the guest's own. */
	static const long tops[] = {
		HV_TOP_RESERVED_BASE, HV_SWITCHER_BASE, HV_SWITCHER_VCPU_BASE,
		(long)(0u - HV_PAGE_SIZE), HV_TOP_RESERVED_BASE - HV_PAGE_SIZE,
	};
	static const struct { const char *what; void (*fn)(long); } how[] = {
		{ "read", read_at }, { "write", write_at }, { "jump", jump_to },
	};
	for (unsigned i = 0; i < sizeof(tops) / sizeof(tops[0]); i++)
		for (unsigned j = 0; j < sizeof(how) / sizeof(how[0]); j++) {
			snprintf(name, sizeof(name), "%s-0x%08lx", how[j].what, (unsigned long)tops[i]);
			run(name, how[j].fn, tops[i]);
		}

	/* EFLAGS: TF traps after popf; IOPL cannot be raised from ring 3
	 * (popf leaves it); NT, AC and ID are the program's and stay across
	 * a system call; NT then makes the program's iret a task return. */
	run("popf-tf", flags_kept, FL_TF);
	run("popf-iopl-kept", flags_kept, FL_IOPL);
	run("popf-nt-kept", flags_kept, FL_NT);
	run("popf-ac-kept", flags_kept, FL_AC);
	run("popf-id-kept", flags_kept, FL_ID);
	run("iret-with-nt", nt_iret, 0);

	run("set_thread_area-data", tls_segment, 0);
	run("set_thread_area-not-present", tls_segment, 1);
	run("set_thread_area-code-read", tls_segment, 2);
	run("set_thread_area-code-lcall", tls_code_call, 0);

	run("iopl-3", sys_errno, SYS_iopl);
	run("ioperm-0x80", sys_errno, SYS_ioperm);
	run("vm86old", sys_errno, SYS_vm86old);
	run("vm86", sys_errno, SYS_vm86);

	/* ptrace(SETREGS) of a traced child: selectors the kernel loads on
	 * the child's way back to user mode, and every EFLAGS bit. */
	static const struct { const char *reg; long which; } pregs[] = {
		{ "cs", 0 }, { "ss", 1 }, { "ds", 2 }, { "es", 3 }, { "fs", 4 }, { "gs", 5 },
	};
	static const long psels[] = { HV_CS | 3, HV_DS | 3, HV_TSS_SEL | 3, HV_DFTSS_SEL | 3, KERNEL_CS, KERNEL_DS };
	for (unsigned i = 0; i < sizeof(pregs) / sizeof(pregs[0]); i++)
		for (unsigned j = 0; j < sizeof(psels) / sizeof(psels[0]); j++) {
			snprintf(name, sizeof(name), "ptrace-setregs-%s-0x%lx", pregs[i].reg, psels[j]);
			pt_value = psels[j];
			run(name, pt_setregs, pregs[i].which);
		}
	pt_value = 0xffffffff;
	run("ptrace-setregs-eflags-all", pt_setregs, 6);
	run("ptrace-singlestep", pt_singlestep, 0);

	printf("RING3CMP done cases=%d\n", cases);
	return 0;
}
