/* Unit tests for the hypervisor command line (hv/loader/cmdline.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>
#include "cmdline.h"
#include "layout.h"

static struct hv_options o;
static char err[256];

static void defaults(void **state)
{
	assert_true(hv_parse_cmdline(NULL, false, &o, err, sizeof(err)));
	assert_int_equal(o.guest_mem, GUEST_MEM_DEFAULT);
	assert_false(o.guest_mem_given);
	assert_int_equal(o.loglevel, 2);
	assert_true(hv_parse_cmdline("/boot/vmi-hv.elf", false, &o, err, sizeof(err)));
	assert_true(hv_parse_cmdline("vmi-hv.elf", true, &o, err, sizeof(err)));
	assert_true(hv_parse_cmdline("", false, &o, err, sizeof(err)));
}

static void all_options(void **state)
{
	assert_true(hv_parse_cmdline("/boot/vmi-hv.elf guest_mem=256M loglevel=debug after_load=idle selftest_fault=double",
				     false, &o, err, sizeof(err)));
	assert_int_equal(o.guest_mem, 256u << 20);
	assert_true(o.guest_mem_given);
	assert_int_equal(o.loglevel, 3);
	assert_int_equal(o.after_load, AFTER_LOAD_IDLE);
	assert_int_equal(o.fault, FAULT_DOUBLE);
}

static void no_path_first(void **state)
{
	assert_true(hv_parse_cmdline("guest_mem=64M  loglevel=0", false, &o, err, sizeof(err)));
	assert_int_equal(o.guest_mem, 64u << 20);
	assert_int_equal(o.loglevel, 0);
}

static void unknown_option(void **state)
{
	assert_false(hv_parse_cmdline("build/hv/vmi-hv.elf frobnicate=1", true, &o, err, sizeof(err)));
	assert_non_null(strstr(err, "unknown hypervisor option 'frobnicate=1'"));
	assert_false(hv_parse_cmdline("/vmi-hv.elf bogus", false, &o, err, sizeof(err)));
	assert_non_null(strstr(err, "'bogus'"));
}

/* The message lists every option (it is built from the parser's tables). */
static void unknown_option_lists_every_key(void **state)
{
	char big[512];

	assert_false(hv_parse_cmdline("x frobnicate=1", true, &o, big, sizeof(big)));
	assert_string_equal(big,
		"unknown hypervisor option 'frobnicate=1' (options are guest_mem=, loglevel=, after_load=, "
		"selftest_fault=, fastpaths=, selftest=, slice=, audit=, audit_action=, audit_selftest=, "
		"strict_pt=, vmi_refuse=, cpus=, vcpus=, vcpus_at_once=, locks=, lock_selftest=, debug_pick_delay=, debug_halt_delay=, guestN.mem=, guestN.name=, guestN.weight=, guestN.vmi_refuse=, "
		"guestN.cpus=, guestN.vcpus=)");
	assert_false(hv_parse_cmdline("x guest2.colour=red", true, &o, big, sizeof(big)));
	assert_string_equal(big,
		"unknown hypervisor option 'guest2.colour=red' (a guest's options are guestN.mem=, "
		"guestN.name=, guestN.weight=, guestN.vmi_refuse=, guestN.cpus=, guestN.vcpus=)");
	/* A key that is a prefix of a known one is not that one. */
	assert_false(hv_parse_cmdline("x audit_act=stop", true, &o, big, sizeof(big)));
	assert_non_null(strstr(big, "unknown hypervisor option 'audit_act=stop'"));
}

/* Each word option: every word stores its value, a bad one names the words. */
static void word_options(void **state)
{
	static const struct { const char *line, *error; } bad[] = {
		{ "x fastpaths=maybe", "malformed option 'fastpaths=maybe': fastpaths is on or off" },
		{ "x strict_pt=1", "malformed option 'strict_pt=1': strict_pt is on or off" },
		{ "x selftest=three-guests", "malformed option 'selftest=three-guests': selftest is two-guests" },
		{ "x audit_action=", "malformed option 'audit_action=': audit_action is stop or log" },
		{ "x loglevel=4", "malformed option 'loglevel=4': loglevel is error, warn, info, debug or 0-3" },
		{ "x after_load=runs", "malformed option 'after_load=runs': after_load is run, stop or idle" },
		{ "x selftest_fault=Page",
		  "malformed option 'selftest_fault=Page': selftest_fault is page, invalid-opcode, divide or double" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_false(hv_parse_cmdline(bad[i].line, true, &o, err, sizeof(err)));
		assert_string_equal(err, bad[i].error);
	}
	assert_true(hv_parse_cmdline("x fastpaths=off strict_pt=on selftest=two-guests audit_action=log "
				     "loglevel=warn after_load=stop selftest_fault=invalid-opcode",
				     true, &o, err, sizeof(err)));
	assert_false(o.fastpaths);
	assert_true(o.strict_pt);
	assert_true(o.two_guests);
	assert_true(o.audit.log_only);
	assert_int_equal(o.loglevel, 1);
	assert_int_equal(o.after_load, AFTER_LOAD_STOP);
	assert_int_equal(o.fault, FAULT_INVALID_OPCODE);
	assert_true(hv_parse_cmdline("x fastpaths=on strict_pt=off audit_action=stop loglevel=1 selftest_fault=divide",
				     true, &o, err, sizeof(err)));
	assert_true(o.fastpaths);
	assert_false(o.strict_pt);
	assert_false(o.audit.log_only);
	assert_int_equal(o.loglevel, 1);
	assert_int_equal(o.fault, FAULT_DIVIDE);
	/* A later word wins; the option's neighbours in the struct are untouched. */
	assert_true(hv_parse_cmdline("x slice=7 selftest=two-guests strict_pt=on", true, &o, err, sizeof(err)));
	assert_int_equal(o.slice_ms, 7);
	assert_true(o.fastpaths);
	/* The test-only delays: none unless given, microseconds up to 10 s. */
	assert_int_equal(o.debug_pick_delay_us, 0);
	assert_true(hv_parse_cmdline("x debug_pick_delay=2000 debug_halt_delay=10000000", true, &o, err, sizeof(err)));
	assert_int_equal(o.debug_pick_delay_us, 2000);
	assert_int_equal(o.debug_halt_delay_us, 10000000);
	assert_false(hv_parse_cmdline("x debug_halt_delay=10000001", true, &o, err, sizeof(err)));
	assert_string_equal(err, "malformed option 'debug_halt_delay=10000001': a debug delay is microseconds, 0-10000000");
	assert_true(hv_parse_cmdline("x slice=7", true, &o, err, sizeof(err)));
	/* cpus=: every CPU the firmware lists unless limited (0: no limit). */
	assert_int_equal(o.max_cpus, 0);
	assert_true(hv_parse_cmdline("x cpus=1", true, &o, err, sizeof(err)));
	assert_int_equal(o.max_cpus, 1);
	assert_true(hv_parse_cmdline("x cpus=8", true, &o, err, sizeof(err)));
	assert_int_equal(o.max_cpus, 8);
	assert_false(hv_parse_cmdline("x cpus=0", true, &o, err, sizeof(err)));
	assert_string_equal(err, "malformed option 'cpus=0': cpus is how many CPUs to use, 1-8");
	assert_false(hv_parse_cmdline("x cpus=9", true, &o, err, sizeof(err)));
	assert_false(hv_parse_cmdline("x cpus=two", true, &o, err, sizeof(err)));
	/* vcpus= and guestN.vcpus=: a guest's vCPUs, 1-GUEST_MAX_VCPUS (0:
	 * not given, one). */
	assert_int_equal(o.vcpus, 0);
	/* A guest's vCPUs run at once on several CPUs unless told not to. */
	assert_true(o.vcpus_at_once);
	assert_true(hv_parse_cmdline("x vcpus_at_once=off", true, &o, err, sizeof(err)));
	assert_false(o.vcpus_at_once);
	assert_true(hv_parse_cmdline("x", true, &o, err, sizeof(err)));
	assert_true(hv_parse_cmdline("x vcpus=2 guest3.vcpus=8", true, &o, err, sizeof(err)));
	assert_int_equal(o.vcpus, 2);
	assert_int_equal(o.guests[2].vcpus, 8);
	assert_int_equal(o.guests[0].vcpus, 0);
	assert_false(hv_parse_cmdline("x vcpus=9", true, &o, err, sizeof(err)));
	assert_string_equal(err, "malformed option 'vcpus=9': vcpus is how many vCPUs a guest has, 1-8");
	assert_false(hv_parse_cmdline("x guest1.vcpus=0", true, &o, err, sizeof(err)));
	assert_string_equal(err, "malformed option 'guest1.vcpus=0': vcpus is how many vCPUs a guest has, 1-8");
	assert_false(hv_parse_cmdline("x vcpus=", true, &o, err, sizeof(err)));
	assert_false(o.locks_check);
	assert_true(hv_parse_cmdline("x locks=check lock_selftest=invert", true, &o, err, sizeof(err)));
	assert_true(o.locks_check);
	assert_true(o.lock_selftest);
	assert_false(hv_parse_cmdline("x locks=on", true, &o, err, sizeof(err)));
}

static void malformed_sizes(void **state)
{
	const char *bad[] = {
		"x guest_mem=", "x guest_mem=abc", "x guest_mem=12Q", "x guest_mem=M",
		"x guest_mem=128MB", "x guest_mem=99999999999", "x guest_mem=5G",
		"x guest_mem=1000", "x guest_mem=8M", "x loglevel=loud",
		"x after_load=maybe", "x selftest_fault=x",
		"x audit=", "x audit=on", "x audit=every=", "x audit=every=0", "x audit=every=x",
		"x audit=every=4294967296", "x audit=every=1k", "x audit=every", "x audit_action=panic",
		"x audit_selftest=0", "x audit_selftest=", "x audit_selftest=-1",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_false(hv_parse_cmdline(bad[i], true, &o, err, sizeof(err)));
		assert_true(strlen(err) > 10);
	}
}

static void sizes(void **state)
{
	uint64_t v;

	assert_true(parse_size("4096", 4, &v));
	assert_int_equal(v, 4096);
	assert_true(parse_size("64k", 3, &v));
	assert_int_equal(v, 65536);
	assert_true(parse_size("1G", 2, &v));
	assert_int_equal(v, 1u << 30);
	assert_true(parse_size("4095M", 5, &v));
	assert_false(parse_size("4G", 2, &v));		/* > 32 bits */
	assert_false(parse_size("", 0, &v));
	assert_false(parse_size("1 M", 3, &v));
}

static void image_path_skipping(void **state)
{
	/* QEMU: the path always comes first. */
	assert_string_equal(skip_image_path("bzImage quiet", true), "quiet");
	assert_string_equal(skip_image_path("/x/bzImage console=ttyS0", true), "console=ttyS0");
	/* GRUB 2: arguments only, even ones without '='. */
	assert_string_equal(skip_image_path("quiet console=ttyS0", false), "quiet console=ttyS0");
	assert_string_equal(skip_image_path("console=ttyS0", false), "console=ttyS0");
	/* GRUB legacy style paths are recognised anyway. */
	assert_string_equal(skip_image_path("/boot/bzImage ro", false), "ro");
	assert_string_equal(skip_image_path("(hd0)/boot/bzImage ro", false), "ro");
	assert_string_equal(skip_image_path("", true), "");
	assert_true(loader_puts_path_first("qemu"));
	assert_false(loader_puts_path_first("GRUB 2.06-13+deb12u2"));
	assert_false(loader_puts_path_first(NULL));
}

static void audit_options(void **state)
{
	assert_true(hv_parse_cmdline("x", true, &o, err, sizeof(err)));
	assert_int_equal(o.audit.mode, AUDIT_OFF);
	assert_false(o.audit.log_only);
	assert_int_equal(o.audit.selftest, 0);
	assert_true(hv_parse_cmdline("x audit=exit", true, &o, err, sizeof(err)));
	assert_int_equal(o.audit.mode, AUDIT_EXIT);
	assert_true(hv_parse_cmdline("x audit=cr3 audit_action=log", true, &o, err, sizeof(err)));
	assert_int_equal(o.audit.mode, AUDIT_CR3);
	assert_true(o.audit.log_only);
	assert_true(hv_parse_cmdline("x audit=every=1 audit_selftest=300", true, &o, err, sizeof(err)));
	assert_int_equal(o.audit.mode, AUDIT_EVERY);
	assert_int_equal(o.audit.every, 1);
	assert_int_equal(o.audit.selftest, 300);
	assert_false(o.audit.log_only);		/* every parse starts from the defaults */
	assert_true(hv_parse_cmdline("x audit=every=4294967295 audit=off", true, &o, err, sizeof(err)));
	assert_int_equal(o.audit.mode, AUDIT_OFF);
	assert_false(hv_parse_cmdline("x audit=every=0", true, &o, err, sizeof(err)));
	assert_non_null(strstr(err, "audit=every=N takes a count"));
	assert_false(hv_parse_cmdline("x audit=sometimes", true, &o, err, sizeof(err)));
	assert_non_null(strstr(err, "audit is off, exit, every=N or cr3"));
}

static void bare_word_without_path_is_an_error(void **state)
{
	/* Under GRUB 2 there is no path, so a bare first word is an option. */
	assert_false(hv_parse_cmdline("bogus guest_mem=64M", false, &o, err, sizeof(err)));
	assert_non_null(strstr(err, "'bogus'"));
}

static void vmi_refuse(void **state)
{
	assert_true(hv_parse_cmdline("x vmi_refuse=GetWallclockTime,IODelay guest2.vmi_refuse=GetCR2",
				     true, &o, err, sizeof(err)));
	assert_true(o.refuse.given);
	assert_true(vmi_refused(&o.refuse, VMI_CALL_GetWallclockTime));
	assert_true(vmi_refused(&o.refuse, VMI_CALL_IODelay));
	assert_false(vmi_refused(&o.refuse, VMI_CALL_GetCR2));
	assert_false(vmi_refused(&o.refuse, NUM_VMI_CALLS));
	assert_false(o.guests[0].refuse.given);
	assert_true(o.guests[1].refuse.given);
	assert_true(vmi_refused(&o.guests[1].refuse, VMI_CALL_GetCR2));
	assert_false(vmi_refused(&o.guests[1].refuse, VMI_CALL_IODelay));
	/* every call that can be refused, one at a time */
	for (unsigned c = 0; c < NUM_VMI_CALLS; c++) {
		char line[80];
		bool ok;

		snprintf(line, sizeof(line), "x vmi_refuse=%s", vmi_call_name(c));
		ok = hv_parse_cmdline(line, true, &o, err, sizeof(err));
		assert_int_equal(ok, !(c == VMI_CALL_RESERVED0 || c == VMI_CALL_RESERVED1 || c == VMI_CALL_RESERVED2 ||
				       c == VMI_CALL_RESERVED3 || c == VMI_CALL_Init || c == VMI_CALL_IRET ||
				       c == VMI_CALL_SYSEXIT || c == VMI_CALL_SetPxELong || c == VMI_CALL_GetPxELong ||
				       c == VMI_CALL_SwapPxELongAtomic || c == VMI_CALL_DeactivatePxELongAtomic ||
				       c == VMI_CALL_TestAndSetPxELongBit || c == VMI_CALL_TestAndClearPxELongBit));
		if (ok)
			assert_true(vmi_refused(&o.refuse, c));
		else
			assert_non_null(strstr(err, "cannot be refused: "));
	}
	/* not given: nothing refused */
	assert_true(hv_parse_cmdline("x guest_mem=64M", true, &o, err, sizeof(err)));
	assert_false(o.refuse.given);
	assert_false(vmi_refused(&o.refuse, VMI_CALL_IODelay));
}

static void vmi_refuse_errors(void **state)
{
	assert_false(hv_parse_cmdline("x vmi_refuse=GetWallclockTime,Frobnicate", true, &o, err, sizeof(err)));
	assert_string_equal(err, "option 'vmi_refuse=GetWallclockTime,Frobnicate': 'Frobnicate' is not a VMI call "
			    "(the names of vrom/abi/vmi-13.0.def, e.g. GetWallclockTime)");
	assert_false(hv_parse_cmdline("x vmi_refuse=getwallclocktime", true, &o, err, sizeof(err)));
	assert_non_null(strstr(err, "'getwallclocktime' is not a VMI call"));
	assert_false(hv_parse_cmdline("x vmi_refuse=", true, &o, err, sizeof(err)));
	assert_non_null(strstr(err, "malformed option 'vmi_refuse=': vmi_refuse takes VMI call names"));
	assert_false(hv_parse_cmdline("x vmi_refuse=IODelay,,GetCR2", true, &o, err, sizeof(err)));
	assert_non_null(strstr(err, "an empty name between commas"));
	assert_false(hv_parse_cmdline("x vmi_refuse=IODelay,", true, &o, err, sizeof(err)));
	assert_non_null(strstr(err, "an empty name between commas"));
	assert_false(hv_parse_cmdline("x vmi_refuse=IRET", true, &o, err, sizeof(err)));
	assert_non_null(strstr(err, "option 'vmi_refuse=IRET': VMI call "));
	assert_non_null(strstr(err, "(IRET) cannot be refused: it is entered with jmp"));
	assert_false(hv_parse_cmdline("x guest1.vmi_refuse=RESERVED0", true, &o, err, sizeof(err)));
	assert_non_null(strstr(err, "(RESERVED0) cannot be refused: slot 0 is the ROM header"));
	assert_false(hv_parse_cmdline("x guest17.vmi_refuse=IODelay", true, &o, err, sizeof(err)));
	assert_non_null(strstr(err, "at most 16 guests"));
	/* guestN.cpus=, in taskset -c's style. */
	assert_true(hv_parse_cmdline("x guest1.cpus=0 guest2.cpus=1-3 guest3.cpus=0,2-3,7", true, &o, err, sizeof(err)));
	assert_int_equal(o.guests[0].cpus, 0x1);
	assert_int_equal(o.guests[1].cpus, 0xe);
	assert_int_equal(o.guests[2].cpus, 0x8d);
	{
		const char *bad[] = { "x guest1.cpus=", "x guest1.cpus=8", "x guest1.cpus=3-1", "x guest1.cpus=0,",
				      "x guest1.cpus=,0", "x guest1.cpus=a", "x guest1.cpus=0-", "x guest1.cpus=1;2",
				      "x guest1.cpus=100" };

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			assert_false(hv_parse_cmdline(bad[i], true, &o, err, sizeof(err)));
		assert_string_equal(err, "malformed option 'guest1.cpus=100': cpus is a list of CPU numbers 0-7 such as 0, 1-3 or 0,2");
	}
	assert_true(hv_parse_cmdline("x guest16.weight=3 guest10.name=ten", true, &o, err, sizeof(err)));
	assert_int_equal(o.guests[15].weight, 3);
	assert_string_equal(o.guests[9].name, "ten");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults),
		cmocka_unit_test(all_options),
		cmocka_unit_test(no_path_first),
		cmocka_unit_test(unknown_option),
		cmocka_unit_test(unknown_option_lists_every_key),
		cmocka_unit_test(word_options),
		cmocka_unit_test(malformed_sizes),
		cmocka_unit_test(sizes),
		cmocka_unit_test(image_path_skipping),
		cmocka_unit_test(bare_word_without_path_is_an_error),
		cmocka_unit_test(audit_options),
		cmocka_unit_test(vmi_refuse),
		cmocka_unit_test(vmi_refuse_errors),
	};
	return cmocka_run_group_tests_name("cmdline", tests, NULL, NULL);
}
