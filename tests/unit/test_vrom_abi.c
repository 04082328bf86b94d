/*
 * test_vrom_abi.c -- the generated ABI header matches VMware's seed.
 *
 * The expected numbers below are typed in from seed 002-patch
 * (paravirtualInterface.h, vmiCalls.h), independently of vmi-13.0.def, so a
 * wrong edit of the definition shows up here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "vmi_abi.h"

/* VROMHeader: u16, s8, u8[4], u8, u32, u8, u8, u8, u8, u32, u32, u16, u16,
 * u32, VROMCallEntry[3] -- offsets as the seed's struct lays them out. */
static void test_header_layout(void **state)
{
	(void)state;
	assert_int_equal(sizeof(VROMHeader), 0x80);
	assert_int_equal(sizeof(VROMCallEntry), 32);
	assert_int_equal(offsetof(VROMHeader, romSignature), 0x00);
	assert_int_equal(offsetof(VROMHeader, romLength), 0x02);
	assert_int_equal(offsetof(VROMHeader, romEntry), 0x03);
	assert_int_equal(offsetof(VROMHeader, romPad0), 0x07);
	assert_int_equal(offsetof(VROMHeader, vRomSignature), 0x08);
	assert_int_equal(offsetof(VROMHeader, APIVersionMinor), 0x0c);
	assert_int_equal(offsetof(VROMHeader, APIVersionMajor), 0x0d);
	assert_int_equal(offsetof(VROMHeader, reserved0), 0x0e);
	assert_int_equal(offsetof(VROMHeader, reserved1), 0x0f);
	assert_int_equal(offsetof(VROMHeader, reserved2), 0x10);
	assert_int_equal(offsetof(VROMHeader, reserved3), 0x14);
	/* 0x18/0x1a are where the PCI and PnP specs expect these pointers */
	assert_int_equal(offsetof(VROMHeader, pciHeaderOffset), 0x18);
	assert_int_equal(offsetof(VROMHeader, pnpHeaderOffset), 0x1a);
	assert_int_equal(offsetof(VROMHeader, romPad3), 0x1c);
	assert_int_equal(offsetof(VROMHeader, romCallReserved), 0x20);
	/* the asm-side offsets are the same numbers */
	assert_int_equal(VMI_OFF_VROMHeader_reserved3, offsetof(VROMHeader, reserved3));
	assert_int_equal(VMI_SIZEOF_VROMHeader, sizeof(VROMHeader));
}

static void test_call_numbers(void **state)
{
	(void)state;
	assert_int_equal(NUM_VMI_CALLS, 85);
	assert_int_equal(VMI_CALL_RESERVED0, 0);
	assert_int_equal(VMI_CALL_RESERVED3, 3);
	assert_int_equal(VMI_CALL_Init, 4);
	assert_int_equal(VMI_CALL_CPUID, 5);
	assert_int_equal(VMI_CALL_UpdateKernelStack, 19);
	assert_int_equal(VMI_CALL_SetCR3, 22);
	assert_int_equal(VMI_CALL_EnableInterrupts, 35);
	assert_int_equal(VMI_CALL_IRET, 39);
	assert_int_equal(VMI_CALL_SetPxE, 45);
	assert_int_equal(VMI_CALL_AllocatePage, 53);
	assert_int_equal(VMI_CALL_ReleasePage, 54);
	assert_int_equal(VMI_CALL_SetLinearMapping, 58);
	assert_int_equal(VMI_CALL_SetIOPLMask, 71);
	assert_int_equal(VMI_CALL_IODelay, 78);
	assert_int_equal(VMI_CALL_SetAlarm, 81);
	assert_int_equal(VMI_CALL_WallclockUpdated, 84);
	/* Init's slot is at 0x80, right after the header */
	assert_int_equal(VMI_CALL_Init * VROM_CALL_LEN, sizeof(VROMHeader));
}

/* The X-macro list, the #defines and the name table agree entry by entry. */
static void test_call_list_consistent(void **state)
{
	static const struct { unsigned int num; const char *name; } list[] = {
#define V(num, name, kind, ret, words, sw) { num, #name },
		VMI_CALL_LIST(V)
#undef V
	};
	(void)state;
	assert_int_equal(sizeof(list) / sizeof(list[0]), NUM_VMI_CALLS);
	for (unsigned int i = 0; i < NUM_VMI_CALLS; i++) {
		assert_int_equal(list[i].num, i);
		assert_string_equal(vmi_call_name(i), list[i].name);
	}
	assert_null(vmi_call_name(NUM_VMI_CALLS));
}

static void test_constants(void **state)
{
	(void)state;
	assert_int_equal(VMI_SIGNATURE, 0x696d5663);
	assert_memory_equal(&(unsigned int){ VMI_SIGNATURE }, "cVmi", 4);
	assert_int_equal(VMI_API_REV_MAJOR, 13);
	assert_int_equal(VMI_API_REV_MINOR, 0);
	assert_int_equal(VMI_PAGE_PT, 0x01);
	assert_int_equal(VMI_PAGE_PD, 0x02);
	assert_int_equal(VMI_PAGE_PAE, 0x04);
	assert_int_equal(VMI_PAGE_PDP, 0x04);
	assert_int_equal(VMI_PAGE_PML4, 0x08);
	assert_int_equal(VMI_FLUSH_TLB, 0x01);
	assert_int_equal(VMI_FLUSH_GLOBAL, 0x02);
	assert_int_equal(VMI_FLUSH_PT_UPDATES, 0x80);
	assert_int_equal(VMI_CYCLES_REAL, 0);
	assert_int_equal(VMI_CYCLES_AVAILABLE, 1);
	assert_int_equal(VMI_CYCLES_STOLEN, 2);
	assert_int_equal(VMI_ALARM_WIRED_LVTT, 0x10000);
	assert_int_equal(VMI_ALARM_IS_PERIODIC, 0x100);
	assert_int_equal(VMI_ALARM_COUNTER_MASK, 0xff);
	assert_int_equal(VMI_REBOOT_HARD, 1);
	assert_int_equal(VROM_CALL_LEN, 32);
}

/* The shared page is one page, and the fields the ROM's fast paths touch
 * sit where vmi.S's offsets say. */
static void test_shared_page_layout(void **state)
{
	(void)state;
	assert_int_equal(sizeof(vmi_shared_page), 4096);
	assert_int_equal(offsetof(vmi_shared_page, features), VMI_OFF_vmi_shared_page_features);
	assert_int_equal(offsetof(vmi_shared_page, eflags_if), VMI_OFF_vmi_shared_page_eflags_if);
	assert_int_equal(offsetof(vmi_shared_page, irq_pending),
			 VMI_OFF_vmi_shared_page_irq_pending);
	assert_int_equal(offsetof(vmi_shared_page, cr2), VMI_OFF_vmi_shared_page_cr2);
	assert_int_equal(VMI_EFLAGS_IF, 0x200);
	/* the transport vector is not an exception vector */
	assert_true(VMI_HYPERCALL_VECTOR >= 32 && VMI_HYPERCALL_VECTOR < 256);
	/* the report code cannot be mistaken for a call number */
	assert_true(VMI_HC_REPORT_UNSUPPORTED >= NUM_VMI_CALLS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_layout),
		cmocka_unit_test(test_call_numbers),
		cmocka_unit_test(test_call_list_consistent),
		cmocka_unit_test(test_constants),
		cmocka_unit_test(test_shared_page_layout),
	};
	return cmocka_run_group_tests_name("vrom_abi", tests, NULL, NULL);
}
