/* test_guest_desc.c - a guest's descriptors as the CPU gets them. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "guest_desc.h"
#include "segments.h"

#define FLAT_CODE0  0x00cf9a000000ffffull	/* DPL 0 exec/read */
#define FLAT_DATA0  0x00cf92000000ffffull	/* DPL 0 read/write */
#define FLAT_CODE3  0x00cffa000000ffffull
#define FLAT_DATA3  0x00cff2000000ffffull
#define TSS32       0x0000890010000067ull	/* available 32-bit TSS */
#define LDT         0x0000820020000fffull
#define CALL_GATE3  0xc000ec0000601000ull	/* DPL 3 call gate to 0x60 */
#define INT_GATE0   0xc0008e0000601000ull

static void kernel_segments_move_to_ring1_accessed(void **state)
{
	assert_int_equal(guest_desc_convert(FLAT_CODE0), 0x00cfbb000000ffffull);
	assert_int_equal(guest_desc_convert(FLAT_DATA0), 0x00cfb3000000ffffull);
}

static void user_segments_stay_ring3(void **state)
{
	assert_int_equal(guest_desc_convert(FLAT_CODE3), FLAT_CODE3 | (1ull << 40));
	assert_int_equal(guest_desc_convert(FLAT_DATA3), FLAT_DATA3 | (1ull << 40));
}

static void system_descriptors_and_gates_refused(void **state)
{
	assert_int_equal(guest_desc_convert(TSS32), 0);
	assert_int_equal(guest_desc_convert(LDT), 0);
	assert_int_equal(guest_desc_convert(CALL_GATE3), 0);
	assert_int_equal(guest_desc_convert(INT_GATE0), 0);
	assert_int_equal(guest_desc_convert(0), 0);
}

static void dpl1_and_dpl2_refused(void **state)
{
	assert_int_equal(guest_desc_convert(0x00cfba000000ffffull), 0);	/* DPL 1 code */
	assert_int_equal(guest_desc_convert(0x00cfd2000000ffffull), 0);	/* DPL 2 data */
}

static void not_present_kept_not_present(void **state)
{
	uint64_t d = guest_desc_convert(FLAT_DATA0 & ~DESC_P);

	assert_false(d & DESC_P);
	assert_int_equal(DESC_DPL(d), 1);
	assert_false(guest_desc_usable(d, 0x18, SEG_USE_DATA, 1));
}

static void base_from_three_fields(void **state)
{
	/* Linux's per-CPU segment: base 0xc1234567. */
	uint64_t d = 0xc1cf92234567ffffull;

	assert_int_equal(guest_desc_base(d), 0xc1234567u);
	assert_int_equal(guest_desc_base(FLAT_CODE0), 0);
}

static void limit_scaled_by_granularity(void **state)
{
	assert_int_equal(guest_desc_limit(FLAT_CODE0), 0xffffffffu);
	/* 0x1fff pages: 32 MiB - 1. */
	assert_int_equal(guest_desc_limit(0x00c09a0000001fffull), 0x01ffffffu);
	/* Byte granular, limit 19:16 in the high dword. */
	assert_int_equal(guest_desc_limit(0x00409a000000ffffull), 0x0000ffffu);
	assert_int_equal(guest_desc_limit(0x004a9a0000001234ull), 0x000a1234u);
}

static void hypervisor_slots(void **state)
{
	assert_true(guest_desc_hv_slot(HV_GDT_CS_INDEX));
	assert_true(guest_desc_hv_slot(HV_GDT_DS_INDEX));
	assert_true(guest_desc_hv_slot(HV_GDT_TSS_INDEX));
	assert_true(guest_desc_hv_slot(HV_GDT_DFTSS_INDEX));
	/* Linux's boot and kernel selectors are the guest's. */
	assert_false(guest_desc_hv_slot(0x10 >> 3));
	assert_false(guest_desc_hv_slot(0x18 >> 3));
	assert_false(guest_desc_hv_slot(0x60 >> 3));
	assert_false(guest_desc_hv_slot(0x68 >> 3));
}

static void code_and_stack_need_dpl_rpl_cpl_equal(void **state)
{
	uint64_t c1 = guest_desc_convert(FLAT_CODE0), d1 = guest_desc_convert(FLAT_DATA0);
	uint64_t c3 = guest_desc_convert(FLAT_CODE3), d3 = guest_desc_convert(FLAT_DATA3);

	assert_true(guest_desc_usable(c1, 0x61, SEG_USE_CODE, 1));
	assert_false(guest_desc_usable(c1, 0x60, SEG_USE_CODE, 0));	/* never ring 0 */
	assert_false(guest_desc_usable(c1, 0x63, SEG_USE_CODE, 3));
	assert_true(guest_desc_usable(c3, 0x73, SEG_USE_CODE, 3));
	assert_false(guest_desc_usable(d1, 0x69, SEG_USE_CODE, 1));	/* data as code */
	assert_true(guest_desc_usable(d1, 0x69, SEG_USE_STACK, 1));
	assert_false(guest_desc_usable(d1, 0x68, SEG_USE_STACK, 1));	/* RPL 0 != CPL 1 */
	assert_false(guest_desc_usable(c1, 0x61, SEG_USE_STACK, 1));	/* code as stack */
	assert_true(guest_desc_usable(d3, 0x7b, SEG_USE_STACK, 3));
	assert_false(guest_desc_usable(d1, 0x69, SEG_USE_STACK, 3));
}

static void data_segments_privilege(void **state)
{
	uint64_t d1 = guest_desc_convert(FLAT_DATA0), d3 = guest_desc_convert(FLAT_DATA3);
	uint64_t exec_only = guest_desc_convert(0x00cf98000000ffffull);
	uint64_t conforming = guest_desc_convert(0x00cf9e000000ffffull);

	assert_true(guest_desc_usable(d1, 0x68, SEG_USE_DATA, 1));	/* RPL 0, DPL 1, CPL 1 */
	assert_false(guest_desc_usable(d1, 0x6b, SEG_USE_DATA, 1));	/* RPL 3 > DPL 1 */
	assert_false(guest_desc_usable(d1, 0x68, SEG_USE_DATA, 3));	/* kernel data from user */
	assert_true(guest_desc_usable(d3, 0x7b, SEG_USE_DATA, 3));
	assert_true(guest_desc_usable(d3, 0x7b, SEG_USE_DATA, 1));
	assert_false(guest_desc_usable(exec_only, 0x60, SEG_USE_DATA, 1));
	assert_true(guest_desc_usable(conforming, 0x63, SEG_USE_DATA, 3));
}

/* What the emulated loads check (docs/HV.md, "What the guest can reach"): a ring-3 program must get the
 * CPU's fault, never the guest kernel's privilege. */
static void far_transfer_privilege(void **state)
{
	uint64_t c1 = guest_desc_convert(FLAT_CODE0), c3 = guest_desc_convert(FLAT_CODE3);
	uint64_t d1 = guest_desc_convert(FLAT_DATA0);
	uint64_t conf1 = guest_desc_convert(0x00cf9e000000ffffull);	/* conforming, DPL 0 */
	uint16_t sel = 0;

	/* The guest kernel's own ljmp $0x10 / $0x60 (RPL 0): ring 1. */
	assert_int_equal(guest_desc_load_check(c1, 0x60, SEG_LOAD_CS_TRANSFER, 1, &sel), 0);
	assert_int_equal(sel, 0x61);
	/* Ring 3 to the kernel's code: #GP, whatever the RPL. */
	assert_int_equal(guest_desc_load_check(c1, 0x60, SEG_LOAD_CS_TRANSFER, 3, &sel), 13);
	assert_int_equal(guest_desc_load_check(c1, 0x63, SEG_LOAD_CS_TRANSFER, 3, &sel), 13);
	/* The kernel cannot jump (only return) to user code. */
	assert_int_equal(guest_desc_load_check(c3, 0x73, SEG_LOAD_CS_TRANSFER, 1, &sel), 13);
	assert_int_equal(guest_desc_load_check(c3, 0x73, SEG_LOAD_CS_TRANSFER, 3, &sel), 0);
	assert_int_equal(sel, 0x73);
	/* RPL above CPL to non-conforming code: #GP. */
	assert_int_equal(guest_desc_load_check(c1, 0x63, SEG_LOAD_CS_TRANSFER, 1, &sel), 13);
	/* Data as code, unusable, not present. */
	assert_int_equal(guest_desc_load_check(d1, 0x68, SEG_LOAD_CS_TRANSFER, 1, &sel), 13);
	assert_int_equal(guest_desc_load_check(0, 0x50, SEG_LOAD_CS_TRANSFER, 3, &sel), 13);
	assert_int_equal(guest_desc_load_check(c1 & ~DESC_P, 0x60, SEG_LOAD_CS_TRANSFER, 1, &sel), 11);
	/* Conforming kernel code from ring 3 runs at ring 3, never 1. */
	assert_int_equal(guest_desc_load_check(conf1, 0x60, SEG_LOAD_CS_TRANSFER, 3, &sel), 0);
	assert_int_equal(sel, 0x63);
}

static void return_privilege(void **state)
{
	uint64_t c1 = guest_desc_convert(FLAT_CODE0), c3 = guest_desc_convert(FLAT_CODE3);
	uint64_t conf1 = guest_desc_convert(0x00cf9e000000ffffull);
	uint16_t sel = 0;

	assert_int_equal(guest_desc_load_check(c1, 0x60, SEG_LOAD_CS_RETURN, 1, &sel), 0);
	assert_int_equal(sel, 0x61);
	assert_int_equal(guest_desc_load_check(c3, 0x73, SEG_LOAD_CS_RETURN, 1, &sel), 0);
	assert_int_equal(sel, 0x73);
	/* Ring 3 returning to kernel code: RPL 0/1 below CPL, or RPL 3 on DPL 1. */
	assert_int_equal(guest_desc_load_check(c1, 0x60, SEG_LOAD_CS_RETURN, 3, &sel), 13);
	assert_int_equal(guest_desc_load_check(c1, 0x61, SEG_LOAD_CS_RETURN, 3, &sel), 13);
	assert_int_equal(guest_desc_load_check(c1, 0x63, SEG_LOAD_CS_RETURN, 3, &sel), 13);
	assert_int_equal(guest_desc_load_check(conf1, 0x63, SEG_LOAD_CS_RETURN, 3, &sel), 0);
	assert_int_equal(sel, 0x63);
}

static void stack_and_data_privilege(void **state)
{
	uint64_t c1 = guest_desc_convert(FLAT_CODE0), d1 = guest_desc_convert(FLAT_DATA0);
	uint64_t d3 = guest_desc_convert(FLAT_DATA3);
	uint64_t ro3 = guest_desc_convert(0x00cff0000000ffffull);	/* read-only data, DPL 3 */
	uint16_t sel = 0;

	assert_int_equal(guest_desc_load_check(d1, 0x68, SEG_LOAD_SS, 1, &sel), 0);
	assert_int_equal(sel, 0x69);
	assert_int_equal(guest_desc_load_check(d1, 0x68, SEG_LOAD_SS, 3, &sel), 13);
	assert_int_equal(guest_desc_load_check(d1, 0x6b, SEG_LOAD_SS, 3, &sel), 13);
	assert_int_equal(guest_desc_load_check(d3, 0x7b, SEG_LOAD_SS, 3, &sel), 0);
	assert_int_equal(guest_desc_load_check(d3, 0x7b, SEG_LOAD_SS, 1, &sel), 13);
	assert_int_equal(guest_desc_load_check(ro3, 0x7b, SEG_LOAD_SS, 3, &sel), 13);
	assert_int_equal(guest_desc_load_check(d3 & ~DESC_P, 0x7b, SEG_LOAD_SS, 3, &sel), 12);

	assert_int_equal(guest_desc_load_check(d1, 0x68, SEG_LOAD_DATA, 1, &sel), 0);
	assert_int_equal(sel, 0x68);
	assert_int_equal(guest_desc_load_check(d1, 0x68, SEG_LOAD_DATA, 3, &sel), 13);
	assert_int_equal(guest_desc_load_check(d1, 0x6b, SEG_LOAD_DATA, 3, &sel), 13);
	assert_int_equal(guest_desc_load_check(c1, 0x60, SEG_LOAD_DATA, 3, &sel), 13);
	assert_int_equal(guest_desc_load_check(d3, 0x7b, SEG_LOAD_DATA, 3, &sel), 0);
	assert_int_equal(guest_desc_load_check(d3 & ~DESC_P, 0x7b, SEG_LOAD_DATA, 3, &sel), 11);
	assert_int_equal(guest_desc_load_check(0, 0xd8, SEG_LOAD_DATA, 3, &sel), 13);
}

/* lldt / SetLDT: only a present LDT descriptor, its size in entries. */
static void ldt_descriptors(void **state)
{
	uint32_t base = 0;
	unsigned count = 0;

	/* Linux's set_tssldt_descriptor: 3 entries at 0xc1234000. */
	assert_int_equal(guest_desc_ldt(0xc100822340000017ull, &base, &count), 0);
	assert_int_equal(base, 0xc1234000u);
	assert_int_equal(count, 3);
	assert_int_equal(guest_desc_ldt(LDT, &base, &count), 0);
	assert_int_equal(count, 512);
	assert_int_equal(guest_desc_ldt(LDT & ~DESC_P, &base, &count), 11);
	assert_int_equal(guest_desc_ldt(TSS32, &base, &count), 13);
	assert_int_equal(guest_desc_ldt(FLAT_DATA0, &base, &count), 13);
	assert_int_equal(guest_desc_ldt(CALL_GATE3, &base, &count), 13);
	/* A 4 GiB page-granular limit still indexes 8192 entries at most. */
	assert_int_equal(guest_desc_ldt(0x00808200000fffffull, &base, &count), 0);
	assert_int_equal(count, GUEST_LDT_MAX);
	/* Ours: base and limit as given, DPL 0, round trip. */
	assert_int_equal(guest_desc_ldt(guest_desc_make_ldt(0xffd04000u, 2), &base, &count), 0);
	assert_int_equal(base, 0xffd04000u);
	assert_int_equal(count, 2);
	assert_int_equal(DESC_DPL(guest_desc_make_ldt(0xffd04000u, 8192)), 0);
	assert_int_equal(guest_desc_limit(guest_desc_make_ldt(0xffd04000u, 8192)), 0xffffu);
	/* LDT entries convert like GDT entries. */
	assert_int_equal(guest_desc_convert(CALL_GATE3), 0);
	assert_int_equal(DESC_DPL(guest_desc_convert(FLAT_CODE0)), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(kernel_segments_move_to_ring1_accessed),
		cmocka_unit_test(user_segments_stay_ring3),
		cmocka_unit_test(system_descriptors_and_gates_refused),
		cmocka_unit_test(dpl1_and_dpl2_refused),
		cmocka_unit_test(not_present_kept_not_present),
		cmocka_unit_test(base_from_three_fields),
		cmocka_unit_test(limit_scaled_by_granularity),
		cmocka_unit_test(hypervisor_slots),
		cmocka_unit_test(code_and_stack_need_dpl_rpl_cpl_equal),
		cmocka_unit_test(data_segments_privilege),
		cmocka_unit_test(far_transfer_privilege),
		cmocka_unit_test(return_privilege),
		cmocka_unit_test(stack_and_data_privilege),
		cmocka_unit_test(ldt_descriptors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
