/*
 * test_vmi_abi_sync.c -- every copy of the VMI ABI agrees with
 * vrom/abi/vmi-13.0.def.
 *
 *  - build/include/vmi_abi.h and the kernel header are what the definition
 *    generates now (not stale);
 *  - the kernel header carried by the guest patch series (guest/patches) is
 *    byte-identical (and one patch must carry it);
 *  - any other vmi_abi.h in the repository or the build tree is identical;
 *  - the generator refuses a definition that drifted, and agrees with the
 *    VMware seed when the seed is available (a skip, with the reason, when
 *    ../shared is not next to the checkout).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "unit_cmd.h"

static char tmpdir[] = "/tmp/vmi-abi-sync-XXXXXX";

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

/* First differing line, for a message a human can act on. */
static void explain_difference(const char *what, const char *a, const char *b)
{
	int line = 1;

	while (*a && *a == *b) {
		if (*a == '\n')
			line++;
		a++;
		b++;
	}
	fail_msg("%s differs from the definition at line %d", what, line);
}

static void assert_same_file(const char *path, const char *reference, const char *hint)
{
	char *a = slurp(path, NULL), *b = slurp(reference, NULL);

	if (!a || !b)
		fail_msg("cannot read %s or %s", path, reference);
	if (strcmp(a, b)) {
		print_error("%s: %s\n", path, hint);
		explain_difference(path, a, b);
	}
	free(a);
	free(b);
}

static int run(const char *cmd)
{
	int st = system(cmd);

	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int make_tmp(void **state)
{
	(void)state;
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int rm_tmp(void **state)
{
	char cmd[8192];

	(void)state;
	CMD(cmd, "rm -rf %s", tmpdir);
	return run(cmd);
}

static void test_generated_headers_current(void **state)
{
	char cmd[8192], hv[256], k[256];

	(void)state;
	snprintf(hv, sizeof(hv), "%s/hv.h", tmpdir);
	snprintf(k, sizeof(k), "%s/k.h", tmpdir);
	CMD(cmd, "python3 %s %s --hv-header %s --kernel-header %s",
		 VROM_GEN, VROM_DEF, hv, k);
	assert_int_equal(run(cmd), 0);
	assert_same_file(VROM_HV_HDR, hv, "stale; run make -C vrom");
	assert_same_file(VROM_K_HDR, k, "stale; run make -C vrom");
}

/* The kernel header must build in C (with kernel-style u8..u64 types) and in
 * assembly (entry_32.S includes it for VMI_CALL_IRET); so must the hv one. */
static void test_headers_compile(void **state)
{
	char cmd[8192];

	(void)state;
	CMD(cmd,
		 "mkdir -p %s/linux && printf '%%s\\n' '#include <stdint.h>' "
		 "'typedef uint8_t u8; typedef int8_t s8; typedef uint16_t u16;' "
		 "'typedef uint32_t u32; typedef uint64_t u64;' > %s/linux/types.h && "
		 "echo '#include <asm/vmi_abi.h>' | gcc -m32 -std=gnu11 -Wall -Werror -fsyntax-only "
		 "-I%s -I%s/kernel/arch/x86/include -x c - && "
		 "printf '#include <asm/vmi_abi.h>\\nmovl $VMI_CALL_IRET, %%%%eax\\n' | "
		 "gcc -m32 -D__ASSEMBLY__ -I%s/kernel/arch/x86/include -c -o /dev/null "
		 "-x assembler-with-cpp - && "
		 "echo '#include \"%s\"' | gcc -m32 -ffreestanding -std=gnu11 -Wall -Wextra -Werror "
		 "-fsyntax-only -x c -",
		 tmpdir, tmpdir, tmpdir, VROM_INC, VROM_INC, VROM_HV_HDR);
	assert_int_equal(run(cmd), 0);
}

/*
 * Pull the new file VROM_K_PATH out of a patch: the "+++ b/<path>" header,
 * then one "@@ -0,0 +1,N @@" hunk of N added lines.  Returns 1 and the text
 * in *out if the patch creates it, 0 if it does not mention it, -1 (with a
 * message) if it touches it in a way we cannot compare.
 */
static int extract_from_patch(const char *patch, char **out, char *why, size_t whylen)
{
	char *text = slurp(patch, NULL), *p, *nl, *res;
	char marker[300];
	int count;
	size_t used = 0;

	if (!text)
		return snprintf(why, whylen, "cannot read %s", patch), -1;
	snprintf(marker, sizeof(marker), "\n+++ b/%s\n", VROM_K_PATH);
	p = strstr(text, marker);
	if (!p) {
		free(text);
		return 0;
	}
	p += strlen(marker);
	if (sscanf(p, "@@ -0,0 +1,%d @@", &count) != 1 &&
	    !(sscanf(p, "@@ -0,0 +%d @@", &count) == 1 && count == 1)) {
		free(text);
		snprintf(why, whylen, "%s modifies %s instead of creating it in one hunk; "
			 "carry the generated file whole", patch, VROM_K_PATH);
		return -1;
	}
	res = calloc(strlen(p) + 1, 1);
	p = strchr(p, '\n') + 1;
	for (int i = 0; i < count; i++) {
		nl = strchr(p, '\n');
		if (!nl || *p != '+') {
			free(text);
			free(res);
			snprintf(why, whylen, "%s: hunk for %s is truncated", patch, VROM_K_PATH);
			return -1;
		}
		memcpy(res + used, p + 1, (size_t)(nl - p));	/* text and its newline */
		used += (size_t)(nl - p);
		p = nl + 1;
	}
	free(text);
	*out = res;
	return 1;
}

static void test_guest_patch_copy(void **state)
{
	char dir[512], path[1024], why[2048];
	char *want = slurp(VROM_K_HDR, NULL), *got = NULL;
	struct dirent *de;
	int found = 0, patches = 0;
	DIR *d;

	(void)state;
	assert_non_null(want);
	snprintf(dir, sizeof(dir), "%s/guest/patches", VROM_REPO);
	d = opendir(dir);
	if (!d)
		fail_msg("cannot open %s", dir);
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		int r;

		if (n < 7 || strcmp(de->d_name + n - 6, ".patch"))
			continue;
		patches++;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		r = extract_from_patch(path, &got, why, sizeof(why));
		if (r < 0)
			fail_msg("%s", why);
		if (r == 0)
			continue;
		found++;
		if (strcmp(got, want)) {
			print_error("%s carries a %s that is not the generated one; "
				    "regenerate with make -C vrom kheader\n", path, VROM_K_PATH);
			explain_difference(path, got, want);
		}
		print_message("# %s carries %s: identical\n", de->d_name, VROM_K_PATH);
		free(got);
	}
	closedir(d);
	free(want);
	if (!found)	/* the series must carry the ABI header (0003) */
		fail_msg("none of the %d patches in guest/patches creates %s", patches, VROM_K_PATH);
}

/* Any other vmi_abi.h lying around (committed, or in an unpacked kernel tree
 * under build/) must be one of the two generated files.  build/bench-base
 * holds other revisions' builds (tests/lib/base_build.py), with headers
 * of their own time: not copies of this one. */
static void test_other_copies(void **state)
{
	char cmd[8192], line[1024];
	int compared = 0;
	FILE *p;

	(void)state;
	CMD(cmd,
		 "cd %s && { git ls-files 2>/dev/null; "
		 "find build -path build/bench-base -prune -o -name vmi_abi.h -print 2>/dev/null; } "
		 "| grep '\\(^\\|/\\)vmi_abi\\.h$' | sort -u", VROM_REPO);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		char full[2048];
		size_t n = strlen(line);

		line[n - 1] = 0;
		snprintf(full, sizeof(full), "%s/%s", VROM_REPO, line);
		if (!strcmp(full, VROM_HV_HDR) || !strcmp(full, VROM_K_HDR))
			continue;
		n = strlen(full);
		if (n >= strlen(VROM_K_PATH) && !strcmp(full + n - strlen(VROM_K_PATH), VROM_K_PATH))
			assert_same_file(full, VROM_K_HDR, "kernel copy is not the generated header");
		else
			assert_same_file(full, VROM_HV_HDR, "copy is not the generated header");
		compared++;
	}
	pclose(p);
	print_message("# %d other copies of vmi_abi.h compared\n", compared);
}

/* A definition whose numbering or layout drifted must not generate. */
static void test_generator_rejects_drift(void **state)
{
	char cmd[8192];

	(void)state;
	/* Swap the numbers of Init and CPUID. */
	CMD(cmd,
		 "sed -e 's/^call 4  Init /call 5  Init /' -e 's/^call 5  CPUID /call 4  CPUID /' "
		 "%s > %s/swapped.def && ! grep -q '^call 4  Init ' %s/swapped.def && "
		 "python3 %s %s/swapped.def --hv-header %s/x.h 2>%s/err; "
		 "test $? -ne 0 && grep -q 'Init is numbered 5 but is entry 4' %s/err",
		 VROM_DEF, tmpdir, tmpdir, VROM_GEN, tmpdir, tmpdir, tmpdir, tmpdir);
	assert_int_equal(run(cmd), 0);
	/* Move a VROMHeader field. */
	CMD(cmd,
		 "sed -e 's/^field 0x14 u32  reserved3/field 0x18 u32  reserved3/' %s > %s/moved.def && "
		 "python3 %s %s/moved.def --hv-header %s/x.h 2>%s/err; "
		 "test $? -ne 0 && grep -q 'VROMHeader.reserved3 at 0x18' %s/err",
		 VROM_DEF, tmpdir, VROM_GEN, tmpdir, tmpdir, tmpdir, tmpdir);
	assert_int_equal(run(cmd), 0);	/* A private field (ROM and hypervisor only) must be followed by the
	 * public byte array the kernel header shows in its place. */
	CMD(cmd,
		 "sed -e 's/^field \\(0x[0-9a-f]*\\) \\(u8\\[[0-9]*\\]\\) reserved /private field \\1 \\2 reserved /' "
		 "%s > %s/private.def && grep -q '^private field 0x[0-9a-f]* u8.[0-9]*. reserved ' %s/private.def && "
		 "python3 %s %s/private.def --hv-header %s/x.h 2>%s/err; "
		 "test $? -ne 0 && grep -q 'is private but no public byte array follows it' %s/err",
		 VROM_DEF, tmpdir, tmpdir, VROM_GEN, tmpdir, tmpdir, tmpdir, tmpdir);
	assert_int_equal(run(cmd), 0);
}

static void test_seed_agreement(void **state)
{
	const char *seed = getenv("VMI_SEED") ? getenv("VMI_SEED") : VROM_SEED;
	char cmd[8192];

	(void)state;
	if (access(seed, R_OK)) {
		print_message("# SKIP: the VMware seed %s is not readable: the seeds live in "
			      "../shared next to the checkout (or set VMI_SEED)\n", seed);
		skip();
	}
	CMD(cmd, "python3 %s %s --check-seed %s >/dev/null", VROM_GEN,
		 VROM_DEF, seed);
	assert_int_equal(run(cmd), 0);
	/* and the comparison does notice a changed constant */
	CMD(cmd,
		 "sed 's/^+#define VMI_FLUSH_GLOBAL         0x02/+#define VMI_FLUSH_GLOBAL 0x04/' %s "
		 "> %s/seed.patch && ! cmp -s %s %s/seed.patch && "
		 "! python3 %s %s --check-seed %s/seed.patch 2>/dev/null",
		 seed, tmpdir, seed, tmpdir, VROM_GEN, VROM_DEF, tmpdir);
	assert_int_equal(run(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generated_headers_current),
		cmocka_unit_test(test_headers_compile),
		cmocka_unit_test(test_guest_patch_copy),
		cmocka_unit_test(test_other_copies),
		cmocka_unit_test(test_generator_rejects_drift),
		cmocka_unit_test(test_seed_agreement),
	};
	return cmocka_run_group_tests_name("vmi_abi_sync", tests, make_tmp, rm_tmp);
}
