/*
 * test_vrom_image.c -- build/vrom/vmi.rom verifies, and romtool rejects
 * corrupted copies with a message that names the problem.
 *
 * Uses romcheck.c (the code inside romtool) directly, and also runs the real
 * romtool binary on a corrupted file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "unit_cmd.h"

#include "romcheck.h"
#include "vmi_abi.h"

static uint8_t rom[ROMCHECK_MAX_IMAGE];
static uint8_t img[ROMCHECK_MAX_IMAGE];
static size_t rom_len;

static int load_rom(void **state)
{
	FILE *f = fopen(VROM_IMAGE, "rb");

	(void)state;
	if (!f) {
		print_error("cannot open %s: build it with make -C vrom\n", VROM_IMAGE);
		return -1;
	}
	rom_len = fread(rom, 1, sizeof(rom), f);
	fclose(f);
	return rom_len ? 0 : -1;
}

/* Fresh copy for each corruption; fixsum keeps the checksum right so that a
 * later check is the one that must fire. */
static void copy(void) { memcpy(img, rom, rom_len); }
static void fixsum(void)
{
	img[rom_len - 1] = 0;
	img[rom_len - 1] = (uint8_t)-romcheck_sum(img, rom_len);
}

static void expect_rejected(const char *needle)
{
	char err[ROMCHECK_ERRLEN] = "";

	assert_int_equal(romcheck_verify(img, rom_len, err, sizeof(err)), -1);
	if (!strstr(err, needle))
		fail_msg("message \"%s\" does not mention \"%s\"", err, needle);
}

static void test_image_verifies(void **state)
{
	char err[ROMCHECK_ERRLEN] = "";

	(void)state;
	if (romcheck_verify(rom, rom_len, err, sizeof(err)))
		fail_msg("%s: %s", VROM_IMAGE, err);
	assert_int_equal(rom_len % 512, 0);
	assert_int_equal((uint8_t)((VROMHeader *)rom)->romLength * 512, rom_len);
}

static void test_checksum_zero(void **state)
{
	(void)state;
	assert_int_equal(romcheck_sum(rom, rom_len), 0);
}

/* Slot N starts at N*32, ends in ret/jmp/ud2 within its 32 bytes, and the
 * rest of it is int3. */
static void test_slots_aligned_no_fallthrough(void **state)
{
	char err[ROMCHECK_ERRLEN];
	struct slot_info si;

	(void)state;
	for (unsigned int n = 1; n < NUM_VMI_CALLS; n++) {
		const uint8_t *s = rom + n * VROM_CALL_LEN;

		if (romcheck_decode_slot(rom, rom_len, n, &si, err, sizeof(err)))
			fail_msg("%s", err);
		assert_true(si.code_len > 0 && si.code_len <= VROM_CALL_LEN);
		for (unsigned int i = si.code_len; i < VROM_CALL_LEN; i++)
			assert_int_equal(s[i], 0xcc);
	}
	assert_int_equal(VMI_CALL_Init * VROM_CALL_LEN, 0x80);
}

static void test_reject_checksum(void **state)
{
	(void)state;
	copy();
	img[0x300] ^= 0x01;
	expect_rejected("checksum wrong");
}

static void test_reject_signatures(void **state)
{
	(void)state;
	copy();
	img[0] = 0x56;
	fixsum();
	expect_rejected("option ROM signature");
	copy();
	((VROMHeader *)img)->vRomSignature = 0x696d5664;
	fixsum();
	expect_rejected("VMI signature");
	copy();
	((VROMHeader *)img)->APIVersionMajor = 3;
	fixsum();
	expect_rejected("API version 3.0");
}

static void test_reject_length(void **state)
{
	(void)state;
	copy();
	((VROMHeader *)img)->romLength++;
	fixsum();
	expect_rejected("romLength");
}

static void test_reject_pci_pnp(void **state)
{
	VROMHeader *h = (VROMHeader *)img;

	(void)state;
	copy();
	img[h->pciHeaderOffset] = 'X';
	fixsum();
	expect_rejected("PCIR");
	copy();
	img[h->pnpHeaderOffset + 9] ^= 0xff;	/* PnP checksum byte */
	fixsum();
	expect_rejected("$PnP header checksum");
}

static void test_reject_fallthrough(void **state)
{
	(void)state;
	copy();
	memset(img + VMI_CALL_Init * VROM_CALL_LEN, 0x50, VROM_CALL_LEN);	/* push %eax x32 */
	fixsum();
	expect_rejected("slot 4 (Init) at 0x80 falls through into slot 5");
}

static void test_reject_bad_padding(void **state)
{
	(void)state;
	copy();
	img[VMI_CALL_Init * VROM_CALL_LEN + 31] = 0x90;
	fixsum();
	expect_rejected("padding must be int3");
}

static void test_reject_wrong_call_number(void **state)
{
	uint8_t *s;

	(void)state;
	copy();
	s = memchr(img + VMI_CALL_SetCR3 * VROM_CALL_LEN, 0xbf, VROM_CALL_LEN);	/* mov $n,%edi */
	assert_non_null(s);
	s[1] = VMI_CALL_SetCR4;
	fixsum();
	expect_rejected("slot 22 (SetCR3): passes call number 23");
}

static void test_reject_jump_outside(void **state)
{
	uint8_t *s = img + VMI_CALL_EnableInterrupts * VROM_CALL_LEN;

	(void)state;
	copy();
	assert_true(s[0] == 0xe9 || s[0] == 0xeb);
	if (s[0] == 0xe9)
		memcpy(s + 1, &(int32_t){ 0x100 }, 4);	/* into slot 43's neighbourhood */
	else
		s[1] = 0x40;
	fixsum();
	expect_rejected("outside the ROM body");
}

static void test_reject_kind_mismatch(void **state)
{
	(void)state;
	copy();
	/* Put Init's inline hypercall into the reserved slot 1 (number fixed). */
	memcpy(img + 1 * VROM_CALL_LEN, img + VMI_CALL_Init * VROM_CALL_LEN, VROM_CALL_LEN);
	img[1 * VROM_CALL_LEN + 2] = 1;		/* push %edi; mov $1,%edi */
	fixsum();
	expect_rejected("the ABI definition wants");
}

/* Sealing the linked blob again gives the same ROM. */
static void test_seal_reproduces(void **state)
{
	char err[ROMCHECK_ERRLEN];
	size_t len = rom_len - 1;

	(void)state;
	copy();
	((VROMHeader *)img)->romLength = 0;
	if (romcheck_seal(img, sizeof(img), &len, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(len, rom_len);
	assert_memory_equal(img, rom, rom_len);
}

/* The real binary: exit status 1 and a clear message on stderr. */
static void test_romtool_binary_rejects(void **state)
{
	char path[] = "/tmp/vrom-corrupt-XXXXXX", cmd[8192], out[512] = "";
	FILE *p;
	int fd, status;
	size_t n;

	(void)state;
	copy();
	img[0x200] ^= 0x5a;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, img, rom_len), (ssize_t)rom_len);
	close(fd);

	CMD(cmd, "%s verify %s 2>&1", VROM_ROMTOOL, path);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	status = pclose(p);
	unlink(path);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
	if (!strstr(out, "INVALID: checksum wrong"))
		fail_msg("romtool said: %s", out);

	/* and the intact image passes through the same binary */
	CMD(cmd, "%s verify %s >/dev/null 2>&1", VROM_ROMTOOL, VROM_IMAGE);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_image_verifies),
		cmocka_unit_test(test_checksum_zero),
		cmocka_unit_test(test_slots_aligned_no_fallthrough),
		cmocka_unit_test(test_reject_checksum),
		cmocka_unit_test(test_reject_signatures),
		cmocka_unit_test(test_reject_length),
		cmocka_unit_test(test_reject_pci_pnp),
		cmocka_unit_test(test_reject_fallthrough),
		cmocka_unit_test(test_reject_bad_padding),
		cmocka_unit_test(test_reject_wrong_call_number),
		cmocka_unit_test(test_reject_jump_outside),
		cmocka_unit_test(test_reject_kind_mismatch),
		cmocka_unit_test(test_seal_reproduces),
		cmocka_unit_test(test_romtool_binary_rejects),
	};
	return cmocka_run_group_tests_name("vrom_image", tests, load_rom, NULL);
}
