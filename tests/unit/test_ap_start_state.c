/* Unit tests for SetInitialAPState's own checks (hv/vcpu/smp/ap_start_state.c):
 * a Linux-like AP state passes; each field a guest could set wrong is
 * refused with a reason naming it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "ap_start_state.h"

static char why[128];

static APState linux_like(void)
{
	APState s;

	memset(&s, 0, sizeof(s));
	s.cr0 = 0x80050033;
	s.cr3 = 0x1000;
	s.eip = 0xc0100000;
	s.eflags = 0x2;
	s.esp = 0xc0200000;
	s.cs = 0x61;
	s.ss = 0x69;
	s.ds = s.es = 0x7b;
	s.gdtr_base = 0xc0300000;
	s.gdtr_limit = 0xff;
	s.idtr_base = 0xc0301000;
	s.idtr_limit = 0x7ff;
	return s;
}

static void refused(APState s, const char *word)
{
	why[0] = 0;
	assert_false(ap_start_state_check(&s, why, sizeof(why)));
	assert_non_null(strstr(why, word));
}

static void good_state_passes(void **state)
{
	APState s = linux_like();

	assert_true(ap_start_state_check(&s, why, sizeof(why)));
	s.eflags |= 0x200 | 0x3000;	/* IF, and an IOPL (virtual) */
	assert_true(ap_start_state_check(&s, why, sizeof(why)));
}

static void bad_fields_refused(void **state)
{
	APState s;

	s = linux_like(); s.efer = 0x500; refused(s, "efer");
	s = linux_like(); s.cr0 = 0; refused(s, "cr0");
	s = linux_like(); s.cs = 0x60; refused(s, "cs 0060");		/* ring 0 */
	s = linux_like(); s.cs = 0x63; refused(s, "cs 0063");		/* ring 3 */
	s = linux_like(); s.cs = 0x01; refused(s, "cs 0001");		/* null */
	s = linux_like(); s.ss = 0x68; refused(s, "ss");
	s = linux_like(); s.eflags = 0x20002; refused(s, "eflags");	/* VM */
	s = linux_like(); s.eflags = 0x4002; refused(s, "eflags");	/* NT */
	s = linux_like(); s.eflags = 0; refused(s, "eflags");		/* bit 1 clear */
	s = linux_like(); s.ldtr = 0x88; refused(s, "ldtr");
	s = linux_like(); s.gdtr_limit = 7; refused(s, "gdtr");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(good_state_passes),
		cmocka_unit_test(bad_fields_refused),
	};
	return cmocka_run_group_tests(tests, 0, 0);
}
