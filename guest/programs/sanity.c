// SPDX-License-Identifier: GPL-2.0
/*
 * sanity: exercise the guest paths a hypervisor must get right (fork, exec,
 * pipes, anonymous memory with copy-on-write, munmap) and print counts that
 * are the same on every correct run, natively or under vmi-hv.
 *
 * Output, one line each:  SANITY <what>=<count> ...   and finally
 *                         SANITY result=PASS|FAIL
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define CHILDREN	16
#define PIPE_BYTES	(256 * 1024)
#define MAP_PAGES	1024
#define PAGE		4096

static int failures;

static void check(int ok, const char *what)
{
	if (!ok) {
		printf("SANITY error: %s\n", what);
		failures++;
	}
}

/* Run as "sanity child N": exit with a status derived from N. */
static int child_main(const char *arg)
{
	return (atoi(arg) * 7 + 3) & 0x7f;
}

/* fork + exec ourselves CHILDREN times; each exec'd child exits with a known code. */
static int fork_exec(const char *self)
{
	int ok = 0;

	for (int i = 0; i < CHILDREN; i++) {
		char arg[16];
		pid_t pid;
		int status;

		snprintf(arg, sizeof(arg), "%d", i);
		pid = fork();
		if (pid == 0) {
			execl(self, self, "child", arg, (char *)NULL);
			_exit(126);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid)
			continue;
		if (WIFEXITED(status) && WEXITSTATUS(status) == ((i * 7 + 3) & 0x7f))
			ok++;
	}
	return ok;
}

/* Stream PIPE_BYTES through a pipe to a child that sums them; compare sums. */
static long pipe_roundtrip(void)
{
	int down[2], up[2];
	unsigned long sent_sum = 0, child_sum = 0;
	long moved = 0;
	unsigned char buf[4096];
	pid_t pid;

	if (pipe(down) || pipe(up))
		return -1;
	pid = fork();
	if (pid == 0) {
		unsigned long sum = 0;
		ssize_t n;

		close(down[1]);
		close(up[0]);
		while ((n = read(down[0], buf, sizeof(buf))) > 0)
			for (ssize_t i = 0; i < n; i++)
				sum += buf[i];
		if (write(up[1], &sum, sizeof(sum)) != sizeof(sum))
			_exit(1);
		_exit(0);
	}
	close(down[0]);
	close(up[1]);
	for (long off = 0; off < PIPE_BYTES; off += sizeof(buf)) {
		for (size_t i = 0; i < sizeof(buf); i++) {
			buf[i] = (unsigned char)(off + i * 31);
			sent_sum += buf[i];
		}
		if (write(down[1], buf, sizeof(buf)) != sizeof(buf))
			break;
		moved += sizeof(buf);
	}
	close(down[1]);
	if (read(up[0], &child_sum, sizeof(child_sum)) != sizeof(child_sum))
		child_sum = ~sent_sum;
	close(up[0]);
	waitpid(pid, NULL, 0);
	check(child_sum == sent_sum, "pipe checksum differs");
	return moved;
}

/*
 * Map, touch and verify MAP_PAGES pages; fork and let the child overwrite
 * them (copy-on-write) while the parent's copy must stay intact; munmap.
 */
static int mmap_cow(int *cow_ok)
{
	unsigned char *p = mmap(NULL, MAP_PAGES * PAGE, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int touched = 0, intact = 0, status;
	pid_t pid;

	if (p == MAP_FAILED)
		return -1;
	for (int i = 0; i < MAP_PAGES; i++)
		memset(p + i * PAGE, i & 0xff, PAGE);
	for (int i = 0; i < MAP_PAGES; i++)
		touched += p[i * PAGE + PAGE - 1] == (i & 0xff);

	pid = fork();
	if (pid == 0) {
		for (int i = 0; i < MAP_PAGES; i++)
			memset(p + i * PAGE, 0xa5, PAGE);
		for (int i = 0; i < MAP_PAGES; i++)
			if (p[i * PAGE + 17] != 0xa5)
				_exit(1);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	for (int i = 0; i < MAP_PAGES; i++)
		intact += p[i * PAGE + 17] == (i & 0xff);
	*cow_ok = pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
		  intact == MAP_PAGES;
	check(munmap(p, MAP_PAGES * PAGE) == 0, "munmap failed");
	return touched;
}

int main(int argc, char **argv)
{
	int execs, pages, cow_ok = 0;
	long piped;

	if (argc == 3 && strcmp(argv[1], "child") == 0)
		return child_main(argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);

	execs = fork_exec("/proc/self/exe");
	printf("SANITY forks=%d execs_ok=%d\n", CHILDREN, execs);
	check(execs == CHILDREN, "not every fork+exec child exited as expected");

	piped = pipe_roundtrip();
	printf("SANITY pipe_bytes=%ld\n", piped);
	check(piped == PIPE_BYTES, "pipe moved fewer bytes than written");

	pages = mmap_cow(&cow_ok);
	printf("SANITY mmap_pages=%d cow_ok=%d\n", pages, cow_ok);
	check(pages == MAP_PAGES, "mapped pages lost their contents");
	check(cow_ok, "copy-on-write child disturbed the parent's pages");

	printf("SANITY result=%s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
