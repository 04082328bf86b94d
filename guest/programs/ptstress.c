// SPDX-License-Identifier: GPL-2.0
/*
 * ptstress: stress the guest's page-table tracking.  Every operation here
 * makes the kernel allocate, edit, write-protect or free page tables, which
 * under vmi-hv must reach the hypervisor as AllocatePage / SetPxE / SwapPxE
 * / TestAndClearPxEBit / ReleasePage, or its shadows go stale and the data
 * checks below fail (or its audit counts mismatches).
 *
 * Each round:
 *   - maps a region that straddles 4 MiB boundaries (several page tables),
 *     writes a pattern into every page, reads it back;
 *   - makes half of it read-only (mprotect: PTEs rewritten), checks a
 *     child sees the write fault (SIGSEGV) there;
 *   - forks children that write to the other half (copy-on-write: the
 *     parent's PTEs are write-protected, the child's copies are new
 *     pages), and checks that the parent's data did not change;
 *   - maps fresh memory over a quarter of it (PTEs cleared: the pages
 *     must read back as zero), grows the last quarter with mremap (PTEs
 *     moved), and unmaps it all (page tables freed).
 *
 * Output:  PTSTRESS rounds=R pages=P forks=F segv_ok=S   and
 *          PTSTRESS result=PASS|FAIL
 * Usage:   ptstress [rounds]   (default 8)
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define PAGE		4096UL
#define REGION_PAGES	3072		/* 12 MiB: at least three page tables */
#define FORKS		4

static int failures;
static unsigned long pages_checked, forks_done, segv_ok;

static void fail(const char *what, unsigned long page)
{
	if (failures++ < 10)
		printf("PTSTRESS error: %s (page %lu)\n", what, page);
}

static unsigned int pattern(unsigned int round, unsigned long page)
{
	return (round * 2654435761u) ^ (unsigned int)(page * 40503u) ^ 0x5a5a0000u;
}

static void fill(char *base, unsigned long pages, unsigned int round)
{
	for (unsigned long i = 0; i < pages; i++) {
		unsigned int *w = (unsigned int *)(base + i * PAGE);

		w[0] = pattern(round, i);
		w[PAGE / sizeof(*w) - 1] = ~pattern(round, i);
	}
}

static int verify(const char *base, unsigned long first, unsigned long pages,
		  unsigned int round, const char *what)
{
	int bad = 0;

	for (unsigned long i = first; i < first + pages; i++) {
		const unsigned int *w = (const unsigned int *)(base + i * PAGE);

		if (w[0] != pattern(round, i) || w[PAGE / sizeof(*w) - 1] != ~pattern(round, i)) {
			fail(what, i);
			bad = 1;
		}
		pages_checked++;
	}
	return bad;
}

/* A child writes to a read-only page: it must die of SIGSEGV. */
static void expect_segv(char *page)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		*(volatile char *)page = 1;
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		fail("fork for the read-only check", 0);
		return;
	}
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
		segv_ok++;
	else
		fail("a write to a read-only page did not fault", 0);
}

/* Children dirty the writable half (COW); the parent's copy must not change. */
static void cow_children(char *base, unsigned long first, unsigned long pages, unsigned int round)
{
	for (int c = 0; c < FORKS; c++) {
		pid_t pid = fork();
		int status;

		if (pid == 0) {
			fill(base + first * PAGE, pages, round + 1000 + c);
			_exit(verify(base + first * PAGE, 0, pages, round + 1000 + c, "child copy"));
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			fail("copy-on-write child", (unsigned long)c);
		forks_done++;
	}
	verify(base, first, pages, round, "parent data after the children wrote theirs");
}

static void one_round(unsigned int round)
{
	const unsigned long half = REGION_PAGES / 2;
	unsigned long tail_pages;
	char *base, *grown, *tail;

	/* Misaligned on purpose, so the region straddles 4 MiB boundaries. */
	base = mmap(NULL, REGION_PAGES * PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED) {
		fail("mmap", 0);
		return;
	}
	fill(base, REGION_PAGES, round);
	verify(base, 0, REGION_PAGES, round, "first read back");

	if (mprotect(base, half * PAGE, PROT_READ))
		fail("mprotect", 0);
	verify(base, 0, half, round, "read-only half");
	expect_segv(base + (round % half) * PAGE);

	cow_children(base, half, REGION_PAGES - half, round);

	/* Throw away a quarter (a fresh mapping over it: its PTEs are
	 * cleared, madvise is not in the tiny kernel): zero-filled pages. */
	if (mmap(base + half * PAGE, (half / 2) * PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		fail("mmap over a quarter", 0);
	for (unsigned long i = half; i < half + half / 2; i++) {
		if (((unsigned int *)(base + i * PAGE))[0] != 0)
			fail("page not zero after being mapped over", i);
		pages_checked++;
	}

	/* Grow the last quarter (its own VMA by now): the kernel moves its
	 * page-table entries to the new place. */
	tail = base + (half + half / 2) * PAGE;
	tail_pages = REGION_PAGES - half - half / 2;
	grown = mremap(tail, tail_pages * PAGE, (tail_pages + 1024) * PAGE, MREMAP_MAYMOVE);
	if (grown == MAP_FAILED) {
		fail("mremap", 0);
		munmap(base, REGION_PAGES * PAGE);
		return;
	}
	verify(base, 0, half, round, "read-only half after mremap");
	verify(grown - (half + half / 2) * PAGE, half + half / 2, tail_pages, round,
	       "last quarter after mremap");
	for (unsigned long i = tail_pages; i < tail_pages + 1024; i += 64) {
		if (((unsigned int *)(grown + i * PAGE))[0] != 0)
			fail("new page after mremap not zero", i);
		pages_checked++;
	}
	if (munmap(base, (half + half / 2) * PAGE) || munmap(grown, (tail_pages + 1024) * PAGE))
		fail("munmap", 0);
}

int main(int argc, char **argv)
{
	unsigned int rounds = argc > 1 ? (unsigned int)atoi(argv[1]) : 8;

	setvbuf(stdout, NULL, _IONBF, 0);
	for (unsigned int r = 0; r < rounds; r++)
		one_round(r);
	printf("PTSTRESS rounds=%u pages=%lu forks=%lu segv_ok=%lu\n",
	       rounds, pages_checked, forks_done, segv_ok);
	printf("PTSTRESS result=%s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
