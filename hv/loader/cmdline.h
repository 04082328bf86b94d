/*
 * cmdline.h - the hypervisor's own command line (pure logic, unit-tested).
 *
 *   guest_mem=SIZE        guest RAM; SIZE is bytes or with K, M or G suffix,
 *                         a multiple of 4 KiB, at least GUEST_MEM_MIN
 *   loglevel=LEVEL        error, warn, info (default) or debug, or 0-3
 *   after_load=WHAT       run (default): start the guest; stop: stop once
 *                         the guest is loaded and checked; idle: stay up,
 *                         serving serial input, without running the guest
 *   selftest_fault=KIND   deliberately fault after start-up, for the tests
 *                         of the exception dump: page, invalid-opcode,
 *                         divide, double
 *   fastpaths=on|off      the shared page's ROM fast paths (default on)
 *   selftest=two-guests   two guests from one module pair, entered in turn
 *   slice=MS              the scheduler's time slice, 1-1000 ms (default 10);
 *                         a guest of weight W runs W slices in a turn
 *   audit=WHEN            continuous shadow audit of the shadows that changed:
 *                         off (default), exit (at every exit), every=N (every
 *                         N page-table notifications, N >= 1), cr3 (at every
 *                         CR3 load, with the directory loaded)
 *   audit_action=WHAT     at a mismatch: stop (default) the guest with the
 *                         report, or log it and derive the table again
 *   audit_selftest=N      debug: after N queued page-table writes, drop the
 *                         next one that would change a shadow entry (a
 *                         planted hypervisor bug for the audit to find)
 *   vmi_refuse=NAME[,NAME...]
 *                         a test knob: every guest's copy of the ROM answers
 *                         these VMI calls (names of vrom/abi/vmi-13.0.def)
 *                         "unsupported", as a ROM without them would: the
 *                         slot becomes mov $N,%eax; jmp vrom_unsupported and
 *                         the hypervisor lets the report go on (-38 in eax,
 *                         0xffffffff in edx) instead of stopping the guest.
 *                         The header slot, reserved and unsupported slots
 *                         (PAE/long-mode calls, SYSEXIT), Init and IRET
 *                         cannot be refused.
 *   cpus=N                use at most N of the machine's CPUs (1-HV_MAX_CPUS,
 *                         default: every CPU the ACPI MADT or MP table lists)
 *   vcpus=N               every guest's vCPUs, 1-GUEST_MAX_VCPUS (default 1):
 *                         vCPU 0 starts at the kernel's entry, the others
 *                         wait for the guest's SetInitialAPState
 *   vcpus_at_once=on|off  the vCPUs of one guest run at once on several CPUs,
 *                         their shadows kept coherent by shootdowns (default
 *                         on; off: one running vCPU per guest; docs/SMP.md,
 *                         "Concurrent vCPUs")
 *   locks=check|off       check the lock order at every take and that no
 *                         lock is held across a guest entry (default off)
 *   lock_selftest=invert|invert-ap|entry-ap  debug: take two locks in the
 *                         wrong order at boot (on CPU 0), or when CPU 1 joins
 *                         the run, or hold a lock into a guest entry on CPU 1
 *                         (locks=check must catch each)
 *   debug_pick_delay=US   test-only: spin US microseconds (0-10 s) after
 *                         each scheduler pick, before the guest's lock is
 *                         taken to enter the vCPU (docs/HV.md)
 *   debug_halt_delay=US   test-only: spin US microseconds in the handling
 *                         of each halt (hlt, VMI Halt), under the guest's lock
 *   strict_pt=on|off      every page the guest announced as a page table is
 *                         read-only in the shadows: a direct write to it (not
 *                         through the ROM's calls) stops the guest with the
 *                         EIP and the entry (default off; costs: docs/HV.md)
 *
 * Several guests (one bzImage + initrd module pair each, in module order,
 * numbered from 1): guest_mem= is every guest's size, and
 *   guestN.mem=SIZE       guest N's size (overrides guest_mem=)
 *   guestN.name=NAME      1-15 of [A-Za-z0-9._-]; default "guestN"
 *   guestN.weight=W       1-100, its share of the CPU (default 1)
 *   guestN.cpus=LIST      the CPUs guest N's vCPUs may run on, as taskset -c
 *                         or Xen's cpus=: 0, 1-3, 0,2 (0 is the boot CPU)
 *   guestN.vcpus=N        guest N's vCPUs (instead of vcpus=)
 *   guestN.vmi_refuse=NAME[,NAME...]
 *                         guest N's refused calls (instead of vmi_refuse=)
 *
 * Anything else is an error.
 *
 * Kernel and module strings: QEMU's multiboot loader puts the file's path
 * first ("build/hv/vmi-hv.elf guest_mem=64M", "bzImage console=ttyS0");
 * GRUB 2 passes only the arguments; GRUB legacy put "/boot/..." or
 * "(hd0)/..." first.  So the first word is dropped when the loader calls
 * itself "qemu", or when the word starts with '/' or '('.
 */
#ifndef VMI_HV_CMDLINE_H
#define VMI_HV_CMDLINE_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include "vmi_abi.h"

enum selftest_fault {
	FAULT_NONE, FAULT_PAGE, FAULT_INVALID_OPCODE, FAULT_DIVIDE, FAULT_DOUBLE
};

enum after_load { AFTER_LOAD_RUN, AFTER_LOAD_STOP, AFTER_LOAD_IDLE };

/* lock_selftest=: a lock rule broken on purpose (vcpu/smp/lock_selftest.c). */
enum lock_selftest {
	LOCK_SELFTEST_OFF, LOCK_SELFTEST_INVERT, LOCK_SELFTEST_INVERT_AP, LOCK_SELFTEST_ENTRY_AP
};

/* The most guests one hypervisor runs (module pairs). */
#define HV_MAX_GUESTS 16
#define GUEST_NAME_LEN 16		/* with the NUL */
#define GUEST_WEIGHT_MAX 100
/* The most vCPUs one guest has (vcpus=; struct guest's vcpus[]). */
#define GUEST_MAX_VCPUS 8
#define SLICE_MS_DEFAULT 10
#define SLICE_MS_MAX 1000
#define DEBUG_DELAY_US_MAX 10000000u

/* A set of VMI call numbers (vmi_refuse=): bit n of word n / 32. */
#define VMI_REFUSE_WORDS ((NUM_VMI_CALLS + 31) / 32)
struct vmi_refuse_set {
	bool given;
	uint32_t bits[VMI_REFUSE_WORDS];
};

static inline bool vmi_refused(const struct vmi_refuse_set *r, unsigned call)
{
	return call < NUM_VMI_CALLS && (r->bits[call / 32] >> (call % 32) & 1);
}

/* guestN.*: what the command line says about guest N (all optional). */
struct guest_options {
	uint64_t mem;			/* bytes; 0: not given */
	char name[GUEST_NAME_LEN];	/* "": not given */
	unsigned weight;		/* 0: not given */
	struct vmi_refuse_set refuse;	/* guestN.vmi_refuse= */
	uint32_t cpus;			/* guestN.cpus=: bit c for CPU c; 0: any */
	unsigned vcpus;			/* guestN.vcpus=; 0: not given */
};

enum audit_mode { AUDIT_OFF, AUDIT_EXIT, AUDIT_EVERY, AUDIT_CR3 };

struct audit_options {
	enum audit_mode mode;
	uint32_t every;			/* AUDIT_EVERY: notifications between audits, >= 1 */
	bool log_only;			/* audit_action=log: log and resync, do not stop */
	uint32_t selftest;		/* audit_selftest=N, 0 = off */
};

struct hv_options {
	uint64_t guest_mem;		/* bytes */
	bool guest_mem_given;
	int loglevel;			/* enum log_level */
	enum after_load after_load;
	enum selftest_fault fault;
	bool fastpaths;			/* the shared page's ROM fast paths (default on) */
	/* selftest=two-guests: load the guest twice and enter each in turn
	 * (run_selftest_two_guests). */
	bool two_guests;
	struct audit_options audit;
	bool strict_pt;			/* strict_pt=on: announced page tables read-only */
	struct vmi_refuse_set refuse;	/* vmi_refuse=: every guest's, unless guestN.vmi_refuse= */
	struct guest_options guests[HV_MAX_GUESTS];	/* [0] is guest 1 */
	uint32_t slice_ms;		/* the scheduler's time slice */
	unsigned max_cpus;		/* cpus=: at most this many CPUs; 0: all */
	unsigned vcpus;			/* vcpus=: every guest's vCPUs; 0: not given (1) */
	bool vcpus_at_once;		/* vcpus_at_once=on: a guest's vCPUs run at once */
	bool locks_check;		/* locks=check */
	enum lock_selftest lock_selftest;	/* lock_selftest= */
	/* Test-only windows made wide (debug_delay.h); 0: none. */
	uint32_t debug_pick_delay_us, debug_halt_delay_us;
};

/* Parse "123", "64K", "128M", "1G" (case-insensitive suffix).  false on
 * anything else, including overflow past 4 GiB. */
bool parse_size(const char *s, size_t len, uint64_t *out);

/* Returns true on success; else writes one line (no prefix, no newline)
 * saying what is wrong into err. */
bool hv_parse_cmdline(const char *cmdline, bool path_first,
		      struct hv_options *o, char *err, size_t errlen);

/* Does this boot loader (multiboot boot_loader_name) put the path first? */
bool loader_puts_path_first(const char *loader_name);

/* Where the arguments start in a kernel or module string. */
const char *skip_image_path(const char *s, bool path_first);

#endif
