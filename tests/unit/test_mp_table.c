/* Unit tests for the guest's MP table (hv/loader/mp_table.c): both
 * checksums, the floating pointer's pointer, one enabled processor entry
 * per vCPU with APIC IDs 0..N-1 and vCPU 0 the bootstrap processor, the
 * ISA bus, no I/O APIC; refusals leave the buffer untouched. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "mp_table.h"

#define GPA 0xf0000u
#define SIG 0x00000663u		/* family 6 model 6 stepping 3 */
#define FEAT 0x0781abfdu

static uint32_t get32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint8_t sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;

	while (n--)
		s = (uint8_t)(s + *p++);
	return s;
}

/* What Linux's mpparse.c checks, and what it reads, for nr vCPUs. */
static void check_table(const uint8_t *buf, size_t size, unsigned nr)
{
	const uint8_t *mpf = buf, *mpc, *e;
	uint16_t len;

	assert_int_equal(size, mp_table_size(nr));
	assert_memory_equal(mpf, "_MP_", 4);
	assert_int_equal(mpf[8], 1);
	assert_true(mpf[9] == 1 || mpf[9] == 4);
	assert_int_equal(sum(mpf, 16), 0);
	assert_int_equal(mpf[11], 0);		/* a table, not a default configuration */
	assert_int_equal(mpf[12] & 0x80, 0);	/* no IMCR: virtual wire */
	assert_int_equal(get32(mpf + 4), GPA + 16);

	mpc = buf + (get32(mpf + 4) - GPA);
	assert_memory_equal(mpc, "PCMP", 4);
	len = (uint16_t)(mpc[4] | mpc[5] << 8);
	assert_int_equal(len, size - 16);
	assert_int_equal(sum(mpc, len), 0);
	assert_int_equal(mpc[6], 4);
	assert_int_equal(get32(mpc + 36), 0xfee00000u);
	assert_int_equal(mpc[34] | mpc[35] << 8, nr + 1);

	e = mpc + 44;
	for (unsigned i = 0; i < nr; i++, e += 20) {
		assert_int_equal(e[0], 0);			/* processor */
		assert_int_equal(e[1], i);			/* APIC ID */
		assert_int_equal(e[2], 0x14);
		assert_int_equal(e[3], i == 0 ? 3 : 1);	/* enabled, BSP */
		assert_int_equal(get32(e + 4), SIG);
		assert_int_equal(get32(e + 8), FEAT);
	}
	assert_int_equal(e[0], 1);				/* the bus */
	assert_memory_equal(e + 2, "ISA   ", 6);
	assert_ptr_equal(e + 8, mpc + len);			/* nothing else: no I/O APIC */
}

static void one_to_eight_vcpus(void **state)
{
	for (unsigned nr = 1; nr <= 8; nr++) {
		uint8_t buf[512];
		size_t n;

		memset(buf, 0xa5, sizeof(buf));
		n = mp_table_build(buf, sizeof(buf), GPA, nr, SIG, FEAT);
		check_table(buf, n, nr);
		assert_int_equal(buf[n], 0xa5);		/* nothing written past it */
	}
}

static void refused(void **state)
{
	uint8_t buf[512], before[512];

	memset(buf, 0x5a, sizeof(buf));
	memcpy(before, buf, sizeof(buf));
	assert_int_equal(mp_table_build(buf, sizeof(buf), GPA, 0, SIG, FEAT), 0);
	assert_int_equal(mp_table_build(buf, sizeof(buf), GPA, 256, SIG, FEAT), 0);
	assert_int_equal(mp_table_build(buf, sizeof(buf), GPA + 4, 2, SIG, FEAT), 0);
	assert_int_equal(mp_table_build(buf, mp_table_size(2) - 1, GPA, 2, SIG, FEAT), 0);
	assert_int_equal(mp_table_build(buf, sizeof(buf), 0xfffffff0u, 2, SIG, FEAT), 0);
	assert_memory_equal(buf, before, sizeof(buf));
	/* Exactly enough room is enough. */
	assert_int_equal(mp_table_build(buf, mp_table_size(2), GPA, 2, SIG, FEAT), mp_table_size(2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_to_eight_vcpus),
		cmocka_unit_test(refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
