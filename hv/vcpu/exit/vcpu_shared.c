/*
 * vcpu_shared.c - the VMI shared page around each entry: what the ROM's
 * fast paths read is published before the guest runs, what they changed
 * is taken back after it exits, and an exit that caught the ROM inside
 * its IRET window finishes that IRET (docs/VROM.md "Shared page",
 * docs/MEMORY.md "The VMI shared page" and "The ROM's IRET").
 */
#include "vcpu_state.h"
#include "guest_stop.h"
#include "vcpu_desc.h"
#include "vcpu_exception.h"
#include "vcpu_mem.h"
#include "vcpu_mmu.h"
#include "vcpu_shared.h"
#include "vpic.h"
#include "valarm.h"
#include "vuart.h"
#include "timer.h"
#include "pcpu.h"
#include "io.h"
#include "layout.h"
#include "console.h"
#include "hvlib.h"
#include "vmi_abi.h"
#include "vrom_syms.h"

_Static_assert(VROM_OFF_iret_window / 4096 == (VROM_OFF_iret_window_end - 1) / 4096,
	       "the ROM's IRET window must not cross a page: the check looks at one page");

/* Every fast path the hypervisor honours (fastpaths=on); F_PXE, F_IRET
 * need F_VIF (the ROM masks or restores the virtual IF in the page),
 * F_FLUSH and F_PTLIFE need F_PXE (they look at or add to the queue).
 * F_INVAL is added once the shadows serve (vcpu_mmu_activate). */
#define SHARED_FEATURES_ALL (VMI_SHARED_F_VIF | VMI_SHARED_F_CR2 | VMI_SHARED_F_PXE | \
			     VMI_SHARED_F_TIME | VMI_SHARED_F_INB | VMI_SHARED_F_IRET | \
			     VMI_SHARED_F_FLUSH | VMI_SHARED_F_INT80 | VMI_SHARED_F_PTLIFE | \
			     VMI_SHARED_F_PIC | VMI_SHARED_F_ALARM)

void vcpu_shared_init(struct vcpu *v, bool fastpaths)
{
	v->shared->magic = VMI_SHARED_MAGIC;
	v->shared->version = VMI_SHARED_VERSION;
	v->shared->vcpu_id = v->index;	/* vmi-13.0.def: the owning vCPU's index */
	v->shared->features = fastpaths ? SHARED_FEATURES_ALL : 0;
	/* strict_pt: announced page tables are read-only in the shadows, so
	 * the ROM must not write entries itself; its page-table calls become
	 * hypercalls, and the hypervisor writes the entries. */
	if (v->guest->strict_pt)
		v->shared->features &= ~(uint32_t)(VMI_SHARED_F_PXE | VMI_SHARED_F_FLUSH |
						   VMI_SHARED_F_PTLIFE);
}

/* The ports whose reads have no side effect, and their values now; again
 * only when the vUART changed since (most exits leave it alone). */
static void publish_ports(struct vcpu *v)
{
	uint16_t ports[VMI_SHARED_INB_CACHE_LEN];
	uint8_t vals[VMI_SHARED_INB_CACHE_LEN];
	const struct vuart *u = &v->guest->vuart;
	unsigned n;

	if (v->published_ports && v->published_ports_gen == u->gen)
		return;
	v->published_ports = true;
	v->published_ports_gen = u->gen;
	n = vuart_plain_reads(u, ports, vals, VMI_SHARED_INB_CACHE_LEN);

	for (unsigned i = 0; i < VMI_SHARED_INB_CACHE_LEN; i++)
		v->shared->inb_cache[i] = i < n ?
			VMI_SHARED_INB_VALID | (uint32_t)ports[i] << 8 | vals[i] : 0;
}

/*
 * STOLEN for the ROM's GetCycleCounter: constant while this vCPU runs,
 * which is only true when the scheduler has it running; otherwise the
 * ROM asks (F_TIME off for this entry).  time_seq moves with every
 * publication, so a ROM read that an exit interrupted is redone.
 */
static void publish_time(struct vcpu *v)
{
	struct vmi_shared_page *sh = v->shared;

	if (v->sched.state != SCHED_RUNNING) {
		sh->features &= ~VMI_SHARED_F_TIME;
		return;
	}
	sh->stolen = sched_stolen(&v->sched, rdtsc());
	sh->time_seq++;
	sh->features |= VMI_SHARED_F_TIME;
}

/*
 * A floor is a promise to look by then, so the timer must be armed for
 * it now: the run loop armed it before this entry's interrupt took
 * IRQ0's request, while the request still kept the alarms off the timer
 * (valarm_next), and the guest may make no exit before.  (Only for a
 * promise: a periodic alarm keeps the run loop's arming, which a guest
 * flooded by its own ticks relies on to reach its halt.)  For the same
 * floors, a shot this CPU still has due no later than the one armed for
 * them keeps it: the timer's deadline only moves earlier until it fires,
 * and an AVAILABLE time only later.
 */
static void arm_for_promise(struct vcpu *v, bool same)
{
	struct pcpu *c = this_pcpu();
	uint64_t at;

	if (same && v->alarm_armed_cpu == c && c->timer_deadline &&
	    c->timer_deadline <= v->alarm_armed_at)
		return;
	at = valarm_next(&v->valarm, &v->sched, rdtsc());
	if (at != UINT64_MAX)
		hv_timer_arm(at);
	v->alarm_armed_cpu = c;
	v->alarm_armed_at = at;
}

/*
 * F_ALARM: per counter, the least one-shot expiry the ROM may leave in
 * the page, and a fresh token in alarm_lazy: the ROM stores an expiry
 * only over the token it read before the floor, so one stored after
 * this entry's floor went stale (an exit came in between and published
 * another) is not stored (vmi.S, fast_SetAlarm).  Floors the same as
 * those published keep the token: an expiry checked against them is
 * as good after the exit as before it.
 */
static void publish_alarm(struct vcpu *v)
{
	struct vmi_shared_page *sh = v->shared;
	uint64_t floor[VMI_ALARM_COUNTERS];
	bool promised = valarm_floors(&v->valarm, floor), same = v->alarm_published;

	for (unsigned c = 0; c < VMI_ALARM_COUNTERS; c++)
		same &= floor[c] == v->alarm_floor[c];
	if (!same) {
		v->alarm_published = true;
		v->alarm_token++;
		v->stats.rom_alarm_published++;
		for (unsigned c = 0; c < VMI_ALARM_COUNTERS; c++) {
			v->alarm_floor[c] = sh->alarm_floor[c] = floor[c];
			sh->alarm_lazy[c] = (uint64_t)VMI_SHARED_ALARM_EMPTY_HI << 32 | v->alarm_token;
		}
	}
	if (promised)
		arm_for_promise(v, same);
}

/*
 * F_PIC, vCPU 0's page: the 8259s' state, only when it changed since the
 * last publication (or an exit took something back: vpic_rom_take made
 * the page and the chips part ways).  The 8259 is vCPU 0's: another
 * vCPU's ROM makes the calls (its page's copy could be stale, and is
 * never taken back).
 */
static void publish_pic(struct vcpu *v)
{
	struct vpic *pic = &v->guest->vpic;
	uint64_t key;

	if (v->index) {
		if (!v->pic_published)
			v->shared->pic_ready = 0;
		v->pic_published = true;
		return;
	}
	key = vpic_rom_key(pic);
	if (v->pic_published && key == v->pic_key)
		return;
	vpic_rom_publish(pic, v->shared->pic_imr, v->shared->pic_isr, v->shared->pic_irr);
	v->shared->pic_ready = vpic_rom_ready(pic);
	v->pic_key = key;
	v->pic_published = true;
	v->stats.rom_pic_published++;
}

/* Guest-owned state the ROM's fast paths use, out to the shared page... */
void vcpu_share_state(struct vcpu *v)
{
	v->shared->eflags_if = v->vif ? X86_EFLAGS_IF : 0;
	v->shared->eflags_iopl = v->iopl;	/* shown by the ROM's GetInterruptMask only */
	v->shared->cr2 = v->cr2;
	/* The ROM's EnableInterrupts and IRET make the hypercall only when
	 * this is set, so it must say whether this vCPU has an interrupt to
	 * take now: its vPIC's (vCPU 0) or its local APIC's. */
	v->shared->irq_pending = vcpu_irq_pending(v);
	if (!v->guest->fastpaths)
		return;
	publish_time(v);
	publish_ports(v);
	publish_pic(v);
	publish_alarm(v);
}

/*
 * ...and the ROM's 8259 and alarm changes back (docs/VROM.md, "The 8259s
 * and the alarm without an exit").  Every word is the guest's to write:
 * a mask or in-service bits that differ from those published are taken,
 * and those the ROM could not have left stop the guest; the same words
 * as published are nothing to take (the usual exit).  An alarm_lazy that
 * is not a token is an expiry, which valarm_set_lazy judges against the
 * floor published with the token.  Only what the hypervisor itself
 * enabled (fastpaths=on) is looked at, not the page's own feature word.
 */
static void take_pic(struct vcpu *v)
{
	struct vmi_shared_page *sh = v->shared;
	struct vpic *pic = &v->guest->vpic;
	uint32_t imr[2], isr[2];

	for (unsigned i = 0; i < 2; i++) {
		imr[i] = *(volatile uint32_t *)&sh->pic_imr[i];
		isr[i] = *(volatile uint32_t *)&sh->pic_isr[i];
	}
	if (vpic_rom_untouched(pic, imr, isr))
		return;
	v->stats.rom_pic_taken++;
	v->pic_published = false;	/* the page and the chips in step again */
	if (!vpic_rom_take(pic, imr, isr, &v->brk))
		vcpu_stop(v, "shared page: %s", v->brk.why);
	for (unsigned i = 0; i < 2; i++)
		if (imr[i] != pic->rom_imr[i] || isr[i] != pic->rom_isr[i]) {
			v->stats.rom_pic_changes++;
			break;
		}
}

static void take_pic_and_alarm(struct vcpu *v)
{
	struct vmi_shared_page *sh = v->shared;

	if (!v->index)
		take_pic(v);	/* the 8259 is vCPU 0's (publish_pic) */
	for (unsigned c = 0; c < VMI_ALARM_COUNTERS; c++) {
		uint64_t lazy = *(volatile uint64_t *)&sh->alarm_lazy[c];

		if ((uint32_t)(lazy >> 32) & VMI_SHARED_ALARM_EMPTY_HI)
			continue;	/* a token: nothing set (or garbage in the tag: ignored) */
		sh->alarm_lazy[c] = (uint64_t)VMI_SHARED_ALARM_EMPTY_HI << 32 | v->alarm_token;
		valarm_set_lazy(&v->valarm, c, lazy, v->alarm_floor[c], &v->sched, rdtsc());
	}
}

/*
 * Is the guest inside the ROM's IRET window (vmi.S, fast_IRET)?  Its
 * CS is ring 1 and its EIP, through the guest's own page tables, is the
 * ROM's copy in guest memory at one of the window's offsets.  The page
 * offset is looked at first, so most exits cost no walk.
 */
static bool in_iret_window(struct vcpu *v, const struct trap_frame *f, uint32_t *rom_off)
{
	uint32_t off;

	if ((f->cs & 3) != 1 || !(v->shared->features & VMI_SHARED_F_IRET))
		return false;
	off = (vcpu_seg_base(v, (uint16_t)f->cs) + f->eip) & 0xfff;
	if (off < (VROM_OFF_iret_window & 0xfff) || off >= ((VROM_OFF_iret_window_end - 1) & 0xfff) + 1)
		return false;
	return vcpu_rom_offset(v, vcpu_seg_base(v, (uint16_t)f->cs) + f->eip, rom_off) &&
	       *rom_off >= VROM_OFF_iret_window && *rom_off < VROM_OFF_iret_window_end;
}

/*
 * An exit inside the window: the ROM has stored the frame's IF and is
 * about to pop its saved ecx and iret (or, on its way to the hypercall,
 * to put the caller's IF back).  Do the iret here, through the same
 * checks as the IRET hypercall, so that the exit's own work (an
 * interrupt to deliver, above all) happens on the far side of the
 * return.  A frame the iret refuses (the CPU's own fault at
 * vrom_iret_insn, or our check at any other exit in the window) is
 * reported to the guest at the IRET slot with the caller's IF, which the
 * ROM kept in iret_caller_if (docs/VROM.md, "A faulting IRET").  An
 * exception the window's own instructions raised is answered here too:
 * returns false if the exit needs no further handling.
 */
bool vcpu_finish_rom_iret(struct vcpu *v, struct trap_frame *f)
{
	struct emul_outcome out;
	enum emul_result r;
	uint32_t rom_off, esp;

	if (!in_iret_window(v, f, &rom_off))
		return true;
	v->stats.rom_iret_finished++;
	esp = f->esp;
	if (rom_off != VROM_OFF_iret_insn) {
		vcpu_call_read(v, vcpu_seg_base(v, (uint16_t)f->ss) + esp, &f->ecx, 4,
			       "the ROM IRET's saved ecx");
		esp += 4;
	}
	memset(&out, 0, sizeof(out));
	r = vcpu_iret_frame(v, f, esp, &out);
	if (r == EMUL_FAULT) {
		v->stats.iret_faults_rom++;
		v->vif = (v->shared->iret_caller_if & X86_EFLAGS_IF) != 0;
		vcpu_iret_fault(v, f, esp, f->eip - rom_off + VMI_CALL_IRET * VROM_CALL_LEN, &out);
	} else if (r != EMUL_OK)
		vcpu_stop(v, "the ROM's IRET: %s", out.brk.why);
	/* An exception from the window was the iret's (or the ROM's own
	 * stack accesses): done with.  An interrupt still needs its driver. */
	return f->vector >= 32;
}

/* ...and back: the guest may have changed them without an exit. */
void vcpu_take_shared_state(struct vcpu *v)
{
	if (v->guest->fastpaths)
		take_pic_and_alarm(v);
	if (!v->shared->features)
		return;
	v->vif = (v->shared->eflags_if & X86_EFLAGS_IF) != 0;
	v->cr2 = v->shared->cr2;
	v->stats.rom_irets += v->shared->iret_count;
	v->shared->iret_count = 0;
	if (v->shared->features & VMI_SHARED_F_PXE)
		vcpu_mmu_drain(v);
}
