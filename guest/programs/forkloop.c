// SPDX-License-Identifier: GPL-2.0
/*
 * forkloop: fork 1,000 times from code in a page-aligned .bss buffer.
 *
 * fork copies the parent's page tables with every entry marked old
 * (accessed bit clear), so each child's first instruction fetch, at the
 * same linear address in a new address space, is a page fault the
 * hypervisor fills without the guest (docs/MEMORY.md, "Shadow paging after
 * activation": a fault that keeps recurring).  The loop touches no memory of its own between forks
 * (registers and int $0x80 only), so nothing else faults in between:
 * a thousand identical-looking fills in a row, each of which makes
 * progress.  Natively it forks 1,000 times and exits 0; a hypervisor
 * that takes the run for "no progress" stops the guest.
 *
 * Run as root, it first drops to uid/gid 65534: an unprivileged user.
 * Prints "FORKLOOP forks=<n> rc=<r>" (r 0: every fork worked).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#define FORKS	1000
#define STR(x)	#x
#define XSTR(x)	STR(x)

/*
 * int loop(void): fork FORKS times; the child exits 0 at once, the
 * parent waits for it (waitpid(pid, NULL, 0)).  Returns 0, or -1 when a
 * fork failed.  Position-independent: it runs from a copy.
 */
extern const uint8_t loop_start[], loop_end[];
__asm__(".text\n"
	"loop_start:\n"
	"	pushl %esi\n"
	"	pushl %ebx\n"
	"	movl $" XSTR(FORKS) ", %esi\n"
	"1:	movl $2, %eax\n"		/* fork */
	"	int $0x80\n"
	"	testl %eax, %eax\n"		/* the child's first fetch */
	"	jz 3f\n"
	"	js 4f\n"
	"	movl %eax, %ebx\n"		/* waitpid(pid, NULL, 0) */
	"	movl $7, %eax\n"
	"	xorl %ecx, %ecx\n"
	"	xorl %edx, %edx\n"
	"	int $0x80\n"
	"	decl %esi\n"
	"	jnz 1b\n"
	"	xorl %eax, %eax\n"
	"	jmp 5f\n"
	"4:	movl $-1, %eax\n"
	"5:	popl %ebx\n"
	"	popl %esi\n"
	"	ret\n"
	"3:	movl $1, %eax\n"		/* the child: exit(0) */
	"	xorl %ebx, %ebx\n"
	"	int $0x80\n"
	"loop_end:\n");

static uint8_t code[4096] __attribute__((aligned(4096)));

int main(void)
{
	int rc;

	if (getuid() == 0 && (setgid(65534) || setuid(65534))) {
		perror("forkloop: dropping to uid 65534");
		return 1;
	}
	memcpy(code, loop_start, (size_t)(loop_end - loop_start));
	/* No NX without PAE: readable is executable; say so anyway. */
	if (mprotect(code, sizeof(code), PROT_READ | PROT_WRITE | PROT_EXEC)) {
		perror("forkloop: mprotect");
		return 1;
	}
	fflush(stdout);
	rc = ((int (*)(void))(uintptr_t)code)();
	printf("FORKLOOP forks=%d rc=%d\n", FORKS, rc);
	return rc ? 1 : 0;
}
