/*
 * guest.h - one guest: what all of its vCPUs share.  Its memory (the p2m),
 * the boot state the loader decided, its copy of the VMI ROM, its virtual
 * devices, its statistics and, once it ends, why.  Every virtual device is
 * reached through its guest, so two guests never share one.
 */
#ifndef VMI_HV_GUEST_H
#define VMI_HV_GUEST_H

#include "sysmap.h"
#include <stdint.h>
#include <stdbool.h>
#include "guest_mem.h"
#include "guest_layout.h"
#include "cmdline.h"
#include "multiboot.h"
#include "vpic.h"
#include "vuart.h"
#include "valarm.h"
#include "shadow.h"
#include "guest_set.h"
#include "console.h"
#include "spinlock.h"

/* The state the 32-bit boot protocol promises the kernel at its entry:
 * flat 4 GiB CS (__BOOT_CS 0x10) and DS/ES/SS (__BOOT_DS 0x18), paging
 * and interrupts off, ESI = boot_params, EBP = EDI = EBX = 0. */
struct guest_boot_state {
	uint32_t eip;
	uint32_t esi;
};

/* The PC ports without a device model of their own (vcpu_io.c). */
/* A kind of log line a guest can cause at will: at most GUEST_LOG_LIMIT
 * lines of it per 10 s window, the rest counted (guest_log_take,
 * vcpu_io.c); under the guest's lock. */
struct guest_log_limit {
	uint64_t window_start, dropped;
	unsigned logged;
};

struct guest_ports {
	uint8_t cmos_index;		/* the CMOS RTC's index register (0x70) */
	uint64_t denied;		/* denied accesses, each logged within log */
	struct guest_log_limit log;
};

/* A guest runs until a rule break stops it or it reboots or powers off;
 * then it is dead (as lguest's kill_guest marks it), and the run loop
 * reports it.  A guest that rebooted is started again from its modules
 * (vcpu/life/guest_restart.c) unless the run ends with it (docs/HV.md,
 * "Power-off and reboot"). */
enum guest_state {
	GUEST_RUNNING,
	GUEST_STOPPED,		/* broke a rule; its vCPU holds the reason */
	GUEST_REBOOTED,
	GUEST_SHUT_DOWN,
	/* Rebooted, reported and out of the scheduler: being loaded again
	 * by one CPU without sched_lock (run_reap.c); alive again after. */
	GUEST_RESTARTING,
};

/* The continuous shadow audit (audit= option): when it runs, what it
 * found, and the audit_selftest's planted bug. */
struct guest_audit {
	struct audit_options opt;
	uint32_t since;			/* AUDIT_EVERY: notifications since the last audit */
	uint64_t runs, entries, mismatches, unfilled;
	/* vcpus_at_once: audits that found stale entries while a sibling
	 * vCPU's queued write was in flight, not counted (vcpu_mmu.c). */
	uint64_t inconclusive;
	uint64_t queued_seen;		/* audit_selftest: queued writes drained */
	bool selftest_done;
};

struct vcpu;

struct guest {
	char name[GUEST_NAME_LEN];
	unsigned weight;	/* its share of the CPU against the others' */
	uint32_t cpus;		/* guestN.cpus=: bit c for CPU c; 0: any */
	struct vcpu *vcpus[GUEST_MAX_VCPUS];
	unsigned nr_vcpus;
	uint32_t ap_refused;	/* SetInitialAPState calls refused (ap_start.c) */
	/* Where SetInitialAPState builds a vCPU's state before it becomes
	 * the vCPU's (ap_start.c); with a second vCPU, under the lock. */
	struct vcpu *ap_scratch;
	uint32_t apic_refused;	/* APICRead/APICWrite calls refused (vcpu_lapic.c) */
	uint64_t wakes_requested;	/* vCPUs given wake_requested: the loop looks */
	/* vcpus_at_once=on: its vCPUs run at once on several CPUs (docs/SMP.md,
	 * "Concurrent vCPUs"); the shootdowns that made the others leave
	 * (vcpu_shootdown.c) and the IPIs they sent. */
	bool vcpus_at_once;
	uint64_t shootdowns, shootdown_ipis;
	/* TSC cycles waited for the other CPUs' exits, in all and the longest. */
	uint64_t shootdown_waited, shootdown_longest;
	/* Queues of other vCPUs drained at an exit that relies on them
	 * (vcpu_mmu_drain), and how many of those vCPUs had to be made to
	 * leave guest mode first. */
	uint64_t sibling_drains, sibling_kicks;
	/* Its lock: its vCPU's exit handling, its memory, shadows, vTLB, ROM
	 * copy, devices, alarms, statistics and frame budget
	 * (docs/ARCHITECTURE.md, "Who owns what on several CPUs").  state
	 * is written under it; the run loops read it under sched_lock alone,
	 * and a death is reaped only under both. */
	struct spinlock lock;
	volatile enum guest_state state;
	struct vcpu *ended_by;	/* the vCPU that stopped or ended it */
	bool end_reported;	/* the run loop printed why */
	/* A CPU reports its end (and reloads it after a reboot) with
	 * sched_lock let go: no other reap, the run goes on (run_reap.c).
	 * Under sched_lock. */
	bool reaping;
	/* Machine frames free before the guests first ran, and whether
	 * this guest's run-time frames went back (guest_frames.c). */
	uint32_t frames_free_before;
	bool frames_released;
	/* The frames it holds beyond its memory, against its limit; and
	 * how many of them its load took (a reboot starts again from there). */
	struct frame_budget budget;
	uint32_t load_frames;
	/* Where it was loaded from, to load it again when it reboots: the
	 * multiboot modules are kept (guest_reload). */
	const struct multiboot_info *mbi;
	struct guest_spec spec;
	unsigned nr_guests;
	unsigned reboots;	/* times it was started again */
	struct guest_mem mem;
	struct guest_plan plan;
	struct guest_boot_state boot;
	bool has_vrom;		/* the VMI ROM is copied into its memory */
	bool fastpaths;		/* enable the shared page's ROM fast paths */
	bool strict_pt;		/* strict_pt=on: announced page tables read-only */
	/* vmi_refuse=: calls its ROM copy answers unsupported; and the
	 * calls answered unsupported (refused, or with no code) whose first
	 * answer was logged. */
	struct vmi_refuse_set refuse;
	uint32_t unsupported_logged[VMI_REFUSE_WORDS];
	/* GetWallclockTime was called since the guest (re)started: the
	 * clock has not changed for it since (hypercall.c, WallclockUpdated). */
	bool wallclock_read;
	struct sysmap sysmap;	/* the kernel's System.map, if given (a module) */
	char kernel_version[64];
	/* Shadow page tables from VMI activation on: the guest's page
	 * tables are the guest's, whichever of its vCPUs loads them. */
	struct shadow shadow;
	bool shadow_ready;
	struct guest_audit audit;
	/* Virtual devices. */
	struct vpic vpic;
	struct vuart vuart;
	/* Its console: what its UART sends goes to COM1 (line by line, named,
	 * with several guests) and to its VGA screen (console.c). */
	struct guest_console console;
	struct vga_screen screen;	/* its VGA screen when several guests run */
	struct guest_ports ports;
	/* Exceptions whose delivery failed, and far transfers beyond their
	 * code segment's limit (its #GP): guest-made, so logged within a
	 * limit each (vcpu_exception.c, vcpu.c). */
	struct guest_log_limit delivery_log, cs_limit_log;
	/* VMI Init made again by any of its vCPUs (hypercall.c): the first
	 * is logged, the rest only counted, per vCPU in its statistics. */
	bool init_refusal_logged;
};

static inline bool guest_alive(const struct guest *g)
{
	return g->state == GUEST_RUNNING;
}

/* Not alive, but coming back: the run goes on, the console's focus stays. */
static inline bool guest_restarting(const struct guest *g)
{
	return g->state == GUEST_RESTARTING;
}

/* The devices in their power-on state, wired to this guest's vPIC; each
 * vCPU's alarms too (IRQ0 reaches vCPU 0 alone). */
void guest_devices_reset(struct guest *g);

/* Load the guest from its module pair (spec, one of nr_guests), or stop
 * with a "vmi-hv: error:" line explaining what is wrong with the input
 * (naming the guest when there are several).  The modules stay where
 * they are: a reboot loads the guest from them again. */
void guest_load(const struct multiboot_info *mbi, const struct hv_options *opt,
		const struct guest_spec *spec, unsigned nr_guests, struct guest *g);
/* The guest's reboot: its memory zeroed, then the kernel, initrd, zero
 * page, command line and a new ROM copy put in again from its modules,
 * and read back, exactly as guest_load did. */
void guest_reload(struct guest *g);
/* A zeroed guest named name, in memory of its own. */
struct guest *guest_create(const char *name);

#endif
