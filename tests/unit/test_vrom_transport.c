/*
 * test_vrom_transport.c -- execute the real ROM and check the hypercall
 * transport end to end.
 *
 * cmocka is 64-bit only on the host, the ROM is 32-bit code: the work is
 * done by the -m32 helper romexec32 (tests/unit/romexec32.c), which runs
 * each slot with a signal handler standing in for the hypervisor and prints
 * "ok ..." / "FAIL ...: why" per check.  Here we run it and insist on the
 * right number of passes and no failure.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "vmi_abi.h"

struct outcome {
	int ok, failed, status;
};

/*
 * How the 32-bit helper is started.  The runner (tests/lib/exec32.py) probes
 * once whether this host executes i386 binaries; where it cannot, it sets
 * VMIHV_EXEC32_WRAPPER to qemu-i386 (an absolute path) and the helper runs
 * under that emulator.
 * Empty or unset: natively.
 */
static const char *exec32_wrapper(void)
{
	const char *w = getenv("VMIHV_EXEC32_WRAPPER");

	return w && *w ? w : NULL;
}

/* Run "[wrapper] romexec32 ROM MODE" with stdout and stderr on one pipe;
 * argv, not a shell command line, so that no path needs quoting. */
static FILE *start_helper(const char *wrapper, const char *rom, const char *mode, pid_t *pid)
{
	const char *argv[5];
	int fds[2], n = 0;

	if (wrapper)
		argv[n++] = wrapper;
	argv[n++] = VROM_EXEC32;
	argv[n++] = rom;
	argv[n++] = mode;
	argv[n] = NULL;
	if (pipe(fds))
		return NULL;
	*pid = fork();
	if (*pid < 0)
		return NULL;
	if (*pid == 0) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		/* execv, not execvp: execvp would hand an i386 binary the host
		 * cannot execute to /bin/sh, hiding "Exec format error". */
		execv(argv[0], (char *const *)argv);
		fprintf(stderr, "cannot execute %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	return fdopen(fds[0], "r");
}

static struct outcome run_helper_with(const char *wrapper, const char *rom, const char *mode)
{
	struct outcome o = { 0, 0, -1 };
	char line[512];
	pid_t pid;
	FILE *p = start_helper(wrapper, rom, mode, &pid);

	if (!p)
		return o;
	print_message("# note: romexec32 %s ran %s%s\n", mode, wrapper ? "under " : "natively",
		      wrapper ? wrapper : "");
	while (fgets(line, sizeof(line), p)) {
		if (!strncmp(line, "ok ", 3))
			o.ok++;
		else if (!strncmp(line, "FAIL ", 5)) {
			o.failed++;
			print_message("# romexec32 %s: %s", mode, line);
		} else if (line[0] != '#') {
			print_message("# romexec32 %s: %s", mode, line);
		}
	}
	fclose(p);
	if (waitpid(pid, &o.status, 0) != pid)
		o.status = -1;
	return o;
}

static struct outcome run_helper(const char *rom, const char *mode)
{
	return run_helper_with(exec32_wrapper(), rom, mode);
}

static void expect_clean_with(const char *wrapper, const char *mode, int want_ok)
{
	struct outcome o = run_helper_with(wrapper, VROM_IMAGE, mode);

	assert_int_equal(o.failed, 0);
	assert_true(WIFEXITED(o.status));
	assert_int_equal(WEXITSTATUS(o.status), 0);
	assert_int_equal(o.ok, want_ok);
}

static void expect_clean(const char *mode, int want_ok)
{
	expect_clean_with(exec32_wrapper(), mode, want_ok);
}

/* Checks romexec32 makes in "slots" mode: every returning slot without a
 * shared page (call number in edi, register and stack arguments as
 * documented, u64 in edx:eax, callee-saved registers and the caller's stack
 * intact, reserved/unsupported report and fail). */
static int slot_checks(void)
{
	int want = 0;

#define V(num, name, kind, ret, words, sw) \
	want += VMI_KIND_##kind != VMI_KIND_HEADER && VMI_KIND_##kind != VMI_KIND_NORETURN && \
		VMI_KIND_##kind != VMI_KIND_FASTNORETURN;
	VMI_CALL_LIST(V)
#undef V
	return want;
}

/* Checks in "pxe" mode (see test_pxe_queue). */
#define PXE_CHECKS 21
/* Checks in "tick" mode (see test_pic_and_alarm). */
#define TICK_CHECKS 22

static void test_every_slot(void **state)
{
	(void)state;
	expect_clean("slots", slot_checks());
}

static void test_shared_page_fast_paths(void **state)
{
	(void)state;
	expect_clean("fast", 16);
}

/* F_PXE: SetPxE/SwapPxE/TestAndSet/ClearPxEBit write the entry and queue
 * it; values, queue contents, the virtual IF around it, a full queue and
 * missing feature bits going to the hypervisor; FlushDeferredCalls
 * (F_FLUSH) leaving a queue, empty or not, to the next exit, and making the
 * hypercall without F_FLUSH; then exits at random and
 * after every single instruction of the ROM, with and without a guest
 * interrupt handler making updates of its own: nothing lost or doubled. */
static void test_pxe_queue(void **state)
{
	(void)state;
	expect_clean("pxe", PXE_CHECKS);
}

/* F_PTLIFE: AllocatePage and ReleasePage queued with all their arguments,
 * in order with the entry writes, the virtual IF around them, the
 * hypercall (with every argument) without room or feature bits; F_INVAL:
 * InvalPage and FlushTLB without an exit only with the queue empty; then
 * exits at random: no call lost, doubled or reordered. */
#define LIFE_CHECKS 16

static void test_pxe_lifecycle_calls(void **state)
{
	(void)state;
	expect_clean("life", LIFE_CHECKS);
}

static void test_iret(void **state)
{
	(void)state;
	expect_clean("noreturn", 1);
}

/*
 * The fallback itself, on every host: the slots and the page-table queue
 * (which single-steps the ROM with EFLAGS.TF) under qemu-i386 even where the
 * host runs the helper natively, so a host that needs the fallback finds it
 * already tested.  Only a missing qemu-i386 skips, with the reason.
 */
static void test_every_slot_under_qemu_user(void **state)
{
	const char *qemu = getenv("VMIHV_QEMU_I386");

	(void)state;
	if (!qemu || !*qemu) {
		print_message("# SKIP: no qemu-i386 on this host (install qemu-user: make deps)\n");
		skip();
	}
	expect_clean_with(qemu, "slots", slot_checks());
	expect_clean_with(qemu, "pxe", PXE_CHECKS);
	expect_clean_with(qemu, "tick", TICK_CHECKS);
}

/* The helper must notice a broken ROM: give Init the wrong call number. */
static void test_helper_catches_breakage(void **state)
{
	char path[] = "/tmp/vrom-transport-XXXXXX";
	static unsigned char img[0x8000];
	struct outcome o;
	unsigned char *s;
	size_t len;
	FILE *f = fopen(VROM_IMAGE, "rb");
	int fd;

	(void)state;
	assert_non_null(f);
	len = fread(img, 1, sizeof(img), f);
	fclose(f);
	s = memchr(img + VMI_CALL_Init * VROM_CALL_LEN, 0xbf, VROM_CALL_LEN);	/* mov $4,%edi */
	assert_non_null(s);
	s[1] = VMI_CALL_CPUID;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, img, len), (ssize_t)len);
	close(fd);
	o = run_helper(path, "slots");
	unlink(path);
	assert_int_equal(o.failed, 1);
	assert_true(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 1);
}

/* Copy the ROM with the one place matching pat (want exactly one) changed
 * at offset at to rep, run romexec32 mode on it: it must fail. */
static void expect_broken(const unsigned char *pat, size_t plen, size_t at,
			  const unsigned char *rep, size_t rlen, const char *mode)
{
	char path[] = "/tmp/vrom-transport-XXXXXX";
	static unsigned char img[0x8000];
	struct outcome o;
	unsigned char *s = NULL;
	size_t len;
	FILE *f = fopen(VROM_IMAGE, "rb");
	int fd;

	assert_non_null(f);
	len = fread(img, 1, sizeof(img), f);
	fclose(f);
	for (size_t i = 0; i + plen <= len; i++)
		if (!memcmp(img + i, pat, plen)) {
			assert_null(s);	/* exactly one */
			s = img + i;
		}
	assert_non_null(s);
	memcpy(s + at, rep, rlen);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, img, len), (ssize_t)len);
	close(fd);
	o = run_helper(path, mode);
	unlink(path);
	assert_true(o.failed >= 1);
	assert_true(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 1);
}

/* ...and it must notice a queue append that is not atomic with respect to
 * exits: turn the ROM's "cmpxchg %esi,pxe_count(%ecx); jne 1b" into a
 * plain mov (and nops). */
static void test_pxe_helper_catches_breakage(void **state)
{
	static const unsigned char cas[] = { 0x0f, 0xb1, 0x71, VMI_OFF_vmi_shared_page_pxe_count, 0x75 };
	static const unsigned char mov[] = { 0x89, 0x71, VMI_OFF_vmi_shared_page_pxe_count,
					     0x90, 0x90, 0x90 };

	(void)state;
	expect_broken(cas, sizeof(cas), 0, mov, sizeof(mov), "pxe");
}

/* The lifecycle calls' append must be atomic with respect to exits too:
 * "cmpxchg %ebx,pxe_count(%ecx); jne" made a plain mov is noticed. */
static void test_lifecycle_helper_catches_breakage(void **state)
{
	static const unsigned char cas[] = { 0x0f, 0xb1, 0x59, VMI_OFF_vmi_shared_page_pxe_count, 0x75 };
	static const unsigned char mov[] = { 0x89, 0x59, VMI_OFF_vmi_shared_page_pxe_count,
					     0x90, 0x90, 0x90 };

	(void)state;
	expect_broken(cas, sizeof(cas), 0, mov, sizeof(mov), "life");
}

/* F_PIC and F_ALARM (romexec32 tick): the 8259 masks, EOIs and mask
 * reads, the ones that must still enter the hypervisor, and SetAlarm
 * left in the page, single-stepped with an exit after every instruction. */
static void test_pic_and_alarm(void **state)
{
	(void)state;
	expect_clean("tick", TICK_CHECKS);
}

#define LE32(x) (x) & 0xff, ((x) >> 8) & 0xff, ((x) >> 16) & 0xff, ((x) >> 24) & 0xff

/* A specific EOI that clears nothing: "btr %esi,pic_isr(%ecx,%ebx,4);
 * jmp" with the btr turned into nops. */
static void test_pic_helper_catches_breakage(void **state)
{
	static const unsigned char btr[] = { 0x0f, 0xb3, 0xb4, 0x99, LE32(VMI_OFF_vmi_shared_page_pic_isr), 0xeb };
	static const unsigned char nops[] = { 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90 };

	(void)state;
	expect_broken(btr, sizeof(btr), 0, nops, sizeof(nops), "tick");
}

/* A SetAlarm that does not start again when an exit changed the token
 * between its read and the cmpxchg8b: "cmpxchg8b alarm_lazy(%esi,%edi,8);
 * jne 1b" with the jne turned into nops (the alarm is lost). */
static void test_alarm_helper_catches_breakage(void **state)
{
	static const unsigned char cas[] = { 0x0f, 0xc7, 0x8c, 0xfe, LE32(VMI_OFF_vmi_shared_page_alarm_lazy), 0x75 };
	static const unsigned char nops[] = { 0x90, 0x90 };

	(void)state;
	expect_broken(cas, sizeof(cas), 8, nops, sizeof(nops), "tick");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_slot),
		cmocka_unit_test(test_shared_page_fast_paths),
		cmocka_unit_test(test_iret),
		cmocka_unit_test(test_helper_catches_breakage),
		cmocka_unit_test(test_pxe_queue),
		cmocka_unit_test(test_pxe_helper_catches_breakage),
		cmocka_unit_test(test_pxe_lifecycle_calls),
		cmocka_unit_test(test_lifecycle_helper_catches_breakage),
		cmocka_unit_test(test_pic_and_alarm),
		cmocka_unit_test(test_pic_helper_catches_breakage),
		cmocka_unit_test(test_alarm_helper_catches_breakage),
		cmocka_unit_test(test_every_slot_under_qemu_user),
	};
	return cmocka_run_group_tests_name("vrom_transport", tests, NULL, NULL);
}
