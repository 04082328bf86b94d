// SPDX-License-Identifier: GPL-2.0
/*
 * microbench: the guest side of `make compare`.  lmbench-style micro
 * benchmarks of the operations a hypervisor makes expensive, then the macro
 * workloads, all timed in the guest with clock_gettime(CLOCK_MONOTONIC).
 * The same binary runs natively and under vmi-hv.
 *
 *   microbench [-p] [-t MS] [-s SCALE]
 *
 *   -t MS     each micro test repeats its operation in batches of doubling
 *             size until MS milliseconds have passed (default 300), so a
 *             slow operation under the hypervisor still runs long enough
 *             for the clock and a fast one natively runs many times;
 *   -s SCALE  size of the macro workloads (default 4; see MACROS below);
 *   -p        pause around each timed part: print
 *                 BENCH-PAUSE NAME before|after
 *             and wait for a newline on stdin.  The harness reads the
 *             hypervisor's counters (Ctrl-] s) at each pause, so the
 *             difference covers exactly the timed part (plus the pause
 *             itself, which the first test, "empty", measures).
 *
 * Output, after each test (outside the timed part, so printing is not timed):
 *     BENCH name=NAME ops=N ns=T faults=F  T ns in all for N operations, and
 *                                          F page faults the guest's kernel
 *                                          handled for them (below)
 *     BENCH-OUT name=NAME line=...         a macro workload's own output
 *     BENCH-FAIL name=NAME reason=...      the test could not run
 * and finally  BENCH-END failures=N
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define PAGE		4096UL
#define FAULT_CHUNK	256		/* pages mapped, touched, unmapped at once */
#define STAT_PATH	"/bin/busybox"
#define NOP_PROGRAM	"/tests/nop"
#define GZIP_INPUT	"/tmp/gzip-input"
#define MACRO_OUTPUT	"/tmp/macro-output"

static int pause_mode;
static long target_ms = 300;
static long scale = 4;
static int failures;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fail(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("BENCH-FAIL name=%s reason=", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	failures++;
}

/* The harness's chance to read the hypervisor's counters: say where we are,
 * then block until it sends a newline. */
static void pause_point(const char *name, const char *when)
{
	char c;

	if (!pause_mode)
		return;
	printf("BENCH-PAUSE %s %s\n", name, when);
	fflush(stdout);
	while (read(0, &c, 1) == 1 && c != '\n')
		;
}

/* ---- the operations -------------------------------------------------- */

static int zero_fd, pipe_to[2], pipe_from[2];
static pid_t echo_child;
static volatile char *ro_page, *rw_page;
static volatile unsigned long signals_caught;

static void op_null_syscall(unsigned long n)
{
	while (n--)
		syscall(SYS_getppid);	/* the raw call: libc may not cache it, but be sure */
}

static void op_null_io(unsigned long n)
{
	char c;

	while (n--)
		if (read(zero_fd, &c, 1) != 1)
			abort();
}

static void op_stat(unsigned long n)
{
	struct stat st;

	while (n--)
		if (stat(STAT_PATH, &st))
			abort();
}

static void op_open_close(unsigned long n)
{
	while (n--) {
		int fd = open(STAT_PATH, O_RDONLY);

		if (fd < 0)
			abort();
		close(fd);
	}
}

static void on_usr1(int sig) { (void)sig; signals_caught++; }

static void op_sig_install(unsigned long n)
{
	struct sigaction sa = { .sa_handler = on_usr1 };

	while (n--)
		sigaction(SIGUSR1, &sa, NULL);
}

static void op_sig_catch(unsigned long n)
{
	while (n--)
		kill(getpid(), SIGUSR1);
}

/* The protection fault: a one-byte store to a read-only page.  The SIGSEGV
 * handler resumes after the store (its address is known from the labels),
 * so each operation is exactly one fault, one signal and one sigreturn. */
extern char ro_store[], ro_store_end[];

__attribute__((noinline, noclone)) static void store_ro(volatile char *p)
{
	asm volatile(".globl ro_store, ro_store_end\n"
		     "ro_store: movb $1, (%0)\n"
		     "ro_store_end:\n" : : "r"(p) : "memory");
}

static void on_segv(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;

	(void)sig;
	if (si->si_addr != (void *)ro_page ||
	    uc->uc_mcontext.gregs[REG_EIP] != (greg_t)(uintptr_t)ro_store) {
		static const char msg[] = "microbench: unexpected SIGSEGV\n";

		write(2, msg, sizeof(msg) - 1);
		_exit(99);
	}
	uc->uc_mcontext.gregs[REG_EIP] = (greg_t)(uintptr_t)ro_store_end;
	signals_caught++;
}

static void op_prot_fault(unsigned long n)
{
	while (n--)
		store_ro(ro_page);
}

static void op_page_fault(unsigned long n)
{
	while (n) {
		unsigned long pages = n < FAULT_CHUNK ? n : FAULT_CHUNK;
		char *p = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			abort();
		for (unsigned long i = 0; i < pages; i++)
			p[i * PAGE] = 1;
		munmap(p, pages * PAGE);
		n -= pages;
	}
}

static void op_mprotect(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		if (mprotect((void *)rw_page, PAGE, i & 1 ? PROT_READ | PROT_WRITE : PROT_READ))
			abort();
	mprotect((void *)rw_page, PAGE, PROT_READ | PROT_WRITE);
}

/* 16 present, dirty pages read-only and back: one operation is the pair
 * (Linux invalidates such a range page by page, docs/COMPARE.md). */
#define MPROTECT_RANGE 16
static volatile char *range_pages;

static void op_mprotect16(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		if (mprotect((void *)range_pages, MPROTECT_RANGE * PAGE, PROT_READ) ||
		    mprotect((void *)range_pages, MPROTECT_RANGE * PAGE, PROT_READ | PROT_WRITE))
			abort();
}

/* User-mode computation and nothing else: under vmi-hv the only exits
 * in its window are what the guest's timer ticks cost. */
static volatile unsigned long spin_sink;

static void op_tick_spin(unsigned long n)
{
	unsigned long x = spin_sink;

	for (unsigned long i = 0; i < n * 1000; i++)
		x = x * 1103515245u + 12345u;
	spin_sink = x;
}

static void op_fork_wait(unsigned long n)
{
	while (n--) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(0);
		if (pid < 0 || waitpid(pid, NULL, 0) != pid)
			abort();
	}
}

static void op_fork_exec(unsigned long n)
{
	while (n--) {
		int status;
		pid_t pid = fork();

		if (pid == 0) {
			execl(NOP_PROGRAM, NOP_PROGRAM, (char *)NULL);
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
			abort();
	}
}

/* One round trip: a byte to the echo child and back (two context switches). */
static void op_pipe_round_trip(unsigned long n)
{
	char c = 'x';

	while (n--)
		if (write(pipe_to[1], &c, 1) != 1 || read(pipe_from[0], &c, 1) != 1)
			abort();
}

/* ---- set-up and tear-down, outside the timed part -------------------- */

static int setup_null_io(void)
{
	zero_fd = open("/dev/zero", O_RDONLY);
	return zero_fd < 0 ? -1 : 0;
}

static int setup_signal(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };

	signals_caught = 0;
	return sigaction(SIGUSR1, &sa, NULL);
}

static int setup_prot_fault(void)
{
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };

	ro_page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro_page == MAP_FAILED)
		return -1;
	ro_page[0] = 0;			/* present, then read-only: a protection fault */
	signals_caught = 0;
	if (mprotect((void *)ro_page, PAGE, PROT_READ))
		return -1;
	return sigaction(SIGSEGV, &sa, NULL);
}

static int setup_mprotect(void)
{
	rw_page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rw_page == MAP_FAILED)
		return -1;
	rw_page[0] = 1;			/* a present, dirty PTE for mprotect to rewrite */
	return 0;
}

static int setup_mprotect16(void)
{
	range_pages = mmap(NULL, MPROTECT_RANGE * PAGE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (range_pages == MAP_FAILED)
		return -1;
	for (int i = 0; i < MPROTECT_RANGE; i++)
		range_pages[i * PAGE] = 1;	/* present and dirty */
	return 0;
}

static int setup_pipes(void)
{
	if (pipe(pipe_to) || pipe(pipe_from))
		return -1;
	echo_child = fork();
	if (echo_child < 0)
		return -1;
	if (echo_child == 0) {
		char c;

		close(pipe_to[1]);
		close(pipe_from[0]);
		while (read(pipe_to[0], &c, 1) == 1)
			if (write(pipe_from[1], &c, 1) != 1)
				break;
		_exit(0);
	}
	close(pipe_to[0]);
	close(pipe_from[1]);
	return 0;
}

static void teardown_pipes(void)
{
	close(pipe_to[1]);		/* the echo child reads EOF and exits */
	close(pipe_from[0]);
	waitpid(echo_child, NULL, 0);
}

/* ---- the micro tests ------------------------------------------------- */

struct micro {
	const char *name;
	void (*op)(unsigned long n);
	int (*setup)(void);
	void (*teardown)(void);
	int per_op_signals;		/* each op must deliver one signal */
	long times;			/* timed this many target_ms, not one */
};

static const struct micro micros[] = {
	{ .name = "null_syscall", .op = op_null_syscall },
	{ .name = "null_io", .op = op_null_io, .setup = setup_null_io },
	{ .name = "stat", .op = op_stat },
	{ .name = "open_close", .op = op_open_close },
	{ .name = "sig_install", .op = op_sig_install, .setup = setup_signal },
	{ .name = "sig_catch", .op = op_sig_catch, .setup = setup_signal, .per_op_signals = 1 },
	{ .name = "prot_fault", .op = op_prot_fault, .setup = setup_prot_fault, .per_op_signals = 1 },
	{ .name = "page_fault", .op = op_page_fault },
	{ .name = "mprotect", .op = op_mprotect, .setup = setup_mprotect },
	{ .name = "mprotect16", .op = op_mprotect16, .setup = setup_mprotect16 },
	/* some hundred ticks at HZ=250 (bench_ms 300: 1.5 s) */
	{ .name = "tick_spin", .op = op_tick_spin, .times = 5 },
	{ .name = "fork_wait", .op = op_fork_wait },
	{ .name = "fork_exec", .op = op_fork_exec },
	{ .name = "pipe_latency", .op = op_pipe_round_trip, .setup = setup_pipes,
	  .teardown = teardown_pipes },
};

/* The page faults the kernel has handled for this process and for its
 * children that were waited for (minor and major): the guest's own
 * faults, the same count natively and under vmi-hv.  Beside the
 * hypervisor's page-fault exits it shows which were the guest's and
 * which the shadow's (docs/COMPARE.md, "The guest's own page faults"). */
static unsigned long faults_now(void)
{
	struct rusage self, children;

	if (getrusage(RUSAGE_SELF, &self) || getrusage(RUSAGE_CHILDREN, &children))
		abort();
	return self.ru_minflt + self.ru_majflt + children.ru_minflt + children.ru_majflt;
}

/* Batches of 1, 2, 4, ... operations until target_ms have passed: the
 * counts of every batch are in the window, so ops, time and faults match
 * them. */
static void timed(const char *name, void (*op)(unsigned long), long ms, unsigned long *ops, uint64_t *ns,
		  unsigned long *faults)
{
	uint64_t start, limit = (uint64_t)ms * 1000000u;
	unsigned long n = 1, faults_before;

	*ops = 0;
	pause_point(name, "before");
	faults_before = faults_now();
	start = now_ns();
	do {
		op(n);
		*ops += n;
		n *= 2;
	} while (now_ns() - start < limit);
	*ns = now_ns() - start;
	*faults = faults_now() - faults_before;
	pause_point(name, "after");
}

static void run_micro(const struct micro *m)
{
	unsigned long ops, faults;
	uint64_t ns;

	if (m->setup && m->setup()) {
		fail(m->name, "set-up failed: %s", strerror(errno));
		return;
	}
	timed(m->name, m->op, target_ms * (m->times ? m->times : 1), &ops, &ns, &faults);
	if (m->teardown)
		m->teardown();
	if (m->per_op_signals && signals_caught != ops) {
		fail(m->name, "%lu signals caught for %lu operations", signals_caught, ops);
		return;
	}
	printf("BENCH name=%s ops=%lu ns=%llu faults=%lu\n", m->name, ops, (unsigned long long)ns, faults);
	fflush(stdout);
}

/* lmbench's lat_ctx for two processes: the pipe round trip minus what the
 * same pipe reads and writes cost in one process, per switch (two per
 * round trip).  The overhead is measured before the timed part. */
static void run_ctx_switch(void)
{
	int a[2], b[2];
	unsigned long ops, n, faults;
	uint64_t ns, overhead, start;
	char c = 'x';

	if (pipe(a) || pipe(b) || setup_pipes()) {
		fail("ctx_switch", "pipe or fork failed: %s", strerror(errno));
		return;
	}
	n = 0;
	start = now_ns();
	while (now_ns() - start < (uint64_t)target_ms * 1000000u / 2) {
		for (int i = 0; i < 64; i++)
			if (write(a[1], &c, 1) != 1 || read(a[0], &c, 1) != 1 ||
			    write(b[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
				abort();
		n += 64;
	}
	overhead = (now_ns() - start) / n;
	close(a[0]); close(a[1]); close(b[0]); close(b[1]);
	timed("ctx_switch", op_pipe_round_trip, target_ms, &ops, &ns, &faults);
	teardown_pipes();
	ns = ns > ops * overhead ? ns - ops * overhead : 0;
	printf("BENCH name=ctx_switch ops=%lu ns=%llu faults=%lu overhead_ns_per_round_trip=%llu\n",
	       ops * 2, (unsigned long long)ns, faults, (unsigned long long)overhead);
	fflush(stdout);
}

/* ---- the macro workloads --------------------------------------------- */
/* Each runs once, as a child process with its output in a file (printed
 * after the timed part, so console output is not timed or counted).
 * SCALE sizes them: shell loop iterations, gzip input MiB, hackbench
 * loops, cyclictest loops. */

static int run_child(char *const argv[], const char *out)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0)
			_exit(126);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		dprintf(2, "cannot execute %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

static void print_output(const char *name, const char *path)
{
	char line[512];
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		printf("BENCH-OUT name=%s line=%s\n", name, line);
	}
	fclose(f);
}

static void run_macro(const char *name, unsigned long ops, char *const argv[], const char *out)
{
	uint64_t start, ns;
	unsigned long faults;
	int status;

	if (access(argv[0], X_OK)) {
		char why[256] = "";
		FILE *f = fopen("/bench/rt-tests.missing", "r");

		if (f && fgets(why, sizeof(why), f))
			why[strcspn(why, "\n")] = 0;
		if (f)
			fclose(f);
		fail(name, "%s is not in the initramfs%s%s", argv[0], *why ? ": " : "", why);
		return;
	}
	pause_point(name, "before");
	faults = faults_now();
	start = now_ns();
	status = run_child(argv, out);
	ns = now_ns() - start;
	faults = faults_now() - faults;
	pause_point(name, "after");
	if (strcmp(out, "/dev/null"))
		print_output(name, out);
	if (status != 0) {
		fail(name, "%s exited with status %d", argv[0], status);
		return;
	}
	printf("BENCH name=%s ops=%lu ns=%llu faults=%lu\n", name, ops, (unsigned long long)ns, faults);
	fflush(stdout);
}

/* Text that compresses about as well as logs do: numbered lines with
 * pseudo-random fields (deterministic, the same in both boots). */
static int make_gzip_input(unsigned long mib)
{
	FILE *f = fopen(GZIP_INPUT, "w");
	uint32_t x = 12345;
	unsigned long written = 0;

	if (!f)
		return -1;
	for (unsigned long line = 0; written < mib << 20; line++) {
		x = x * 1103515245u + 12345u;
		written += fprintf(f, "%08lu event=%u value=%u status=%s\n", line, (x >> 16) % 64,
				   (x >> 8) % 100000, x & 0x100 ? "ok" : "retry");
	}
	return fclose(f);
}

/* cyclictest sleeps with clock_nanosleep.  i386 glibc 2.36 makes the
 * 32-bit-time system call (clock_nanosleep, 267) whenever the time fits in
 * 32 bits; a kernel without CONFIG_COMPAT_32BIT_TIME answers ENOSYS, and
 * cyclictest's measuring thread then quits while its main thread waits
 * for it forever.  Say so instead of hanging. */
static int clock_sleep_works(void)
{
	struct timespec ts = { 0, 1000 };
	int err = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);

	if (err == ENOSYS)
		fail("cyclictest", "clock_nanosleep fails with ENOSYS: glibc's 32-bit-time call (syscall 267) "
		     "needs CONFIG_COMPAT_32BIT_TIME, which the guest kernel does not have");
	else if (err)
		fail("cyclictest", "clock_nanosleep fails: %s", strerror(err));
	return err == 0;
}

static void run_macros(void)
{
	char iterations[16], loops[16], ct_loops[16];

	snprintf(iterations, sizeof(iterations), "%ld", 50 * scale);
	{
		char *argv[] = { "/bin/sh", "/bench/loop.sh", iterations, NULL };

		run_macro("shell_loop", 50 * scale, argv, "/dev/null");
	}
	if (make_gzip_input(scale)) {
		fail("gzip", "cannot write %s: %s", GZIP_INPUT, strerror(errno));
	} else {
		char *argv[] = { "/bin/busybox", "gzip", "-c", GZIP_INPUT, NULL };

		run_macro("gzip", scale, argv, "/dev/null");
		unlink(GZIP_INPUT);
	}
	snprintf(loops, sizeof(loops), "%ld", 10 * scale);
	{
		/* -p: pipes (the guest kernel has no sockets). */
		char *argv[] = { "/usr/bin/hackbench", "-p", "-g", "2", "-f", "5", "-l", loops, NULL };

		run_macro("hackbench", 10 * scale, argv, MACRO_OUTPUT);
	}
	snprintf(ct_loops, sizeof(ct_loops), "%ld", 250 * scale);
	if (clock_sleep_works()) {
		/* One SCHED_FIFO thread waking every 1 ms; -q: the summary only. */
		char *argv[] = { "/usr/bin/cyclictest", "-q", "-m", "-p", "80", "-i", "1000",
				 "-l", ct_loops, NULL };

		run_macro("cyclictest", 250 * scale, argv, MACRO_OUTPUT);
	}
}

int main(int argc, char **argv)
{
	struct termios saved, quiet;
	int have_tty = 0, opt;

	while ((opt = getopt(argc, argv, "pt:s:")) != -1) {
		switch (opt) {
		case 'p': pause_mode = 1; break;
		case 't': target_ms = atol(optarg); break;
		case 's': scale = atol(optarg); break;
		default:
			fprintf(stderr, "usage: microbench [-p] [-t MS] [-s SCALE]\n");
			return 2;
		}
	}
	if (target_ms <= 0 || scale <= 0) {
		fprintf(stderr, "microbench: -t and -s must be positive\n");
		return 2;
	}
	/* The harness's newlines must not echo: the echo would be console
	 * output inside the next timed window. */
	if (pause_mode && tcgetattr(0, &saved) == 0) {
		have_tty = 1;
		quiet = saved;
		quiet.c_lflag &= ~(ECHO | ECHONL);
		tcsetattr(0, TCSANOW, &quiet);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("BENCH-START target_ms=%ld scale=%ld\n", target_ms, scale);

	/* Nothing between the pauses: the harness subtracts this window's
	 * counts (the pause protocol itself) from every other window's. */
	pause_point("empty", "before");
	pause_point("empty", "after");
	printf("BENCH name=empty ops=1 ns=0 faults=0\n");
	for (size_t i = 0; i < sizeof(micros) / sizeof(micros[0]); i++)
		run_micro(&micros[i]);
	run_ctx_switch();
	run_macros();

	printf("BENCH-END failures=%d\n", failures);
	if (have_tty)
		tcsetattr(0, TCSANOW, &saved);
	return failures ? 1 : 0;
}
