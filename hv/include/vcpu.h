/*
 * vcpu.h - a virtual CPU: what the guest believes about its CPU that the
 * real CPU does not hold while the guest runs deprivileged.  What its
 * vCPUs share (memory, shadows, devices) is in struct guest.
 *
 * The guest's general registers, segment selectors, EIP and EFLAGS live
 * in the trap frame in the switcher (vcpu_layout.h): the real CPU holds
 * them while the guest runs, and the frame holds them while we handle an
 * exit.  Everything else the guest thinks it controls is virtual and
 * lives here: CR0/CR2/CR3/CR4, the interrupt flag, the descriptor-table
 * registers, the paging state the virtual TLB shadows.
 */
#ifndef VMI_HV_VCPU_H
#define VMI_HV_VCPU_H

#include "fpu.h"
#include "sched.h"
#include <stdint.h>
#include <stdbool.h>
#include "traps.h"
#include "vtlb.h"
#include "shadow.h"
#include "emulate.h"
#include "guest_desc.h"
#include "guest.h"
#include "segments.h"
#include "x86.h"

struct desc_reg {
	uint32_t base;
	uint16_t limit;
};

struct vcpu_stats {
	uint64_t exits, exits_by_vector[256];
	uint64_t emulated, emulated_by_kind[EMUL_KIND_COUNT];
	uint64_t emulated_after_activation;	/* should be 0: every site is patched */
	uint64_t hidden_faults;		/* #PF the shadow paging fixed */
	uint64_t guest_page_faults;	/* #PF reflected into the guest */
	uint64_t tlb_flushes_ignored;	/* FlushTLB after activation: shadows need none */
	uint64_t reflected_by_vector[32];	/* exceptions delivered through the guest's IDT */
	/* Ring-3 faults the emulator does not handle, given to the guest's
	 * kernel as the CPU raised them (issue 18, F4). */
	uint64_t user_faults_reflected;
	uint64_t hypercalls, hypercalls_by_call[128];
	uint64_t injected;		/* virtual interrupts delivered */
	/* Delivered in paravirtual mode before the guest's first IRET
	 * call: at most 1 (the first interrupt returns through IRET).
	 * More means interrupts returned through a raw iret, which cannot
	 * set IF at CPL 1: the virtual IF stayed off behind its back. */
	uint64_t injected_before_iret;
	/* F_PXE: entry writes the ROM made without an exit and queued in
	 * the shared page, drained at the next exit (vcpu_mmu_drain). */
	uint64_t pxe_drained, pxe_drains, pxe_max_batch;
	uint64_t pxe_by_kind[VMI_SHARED_PXE_KIND_MASK + 1];	/* by VMI_SHARED_PXE_* */
	/* F_IRET: exits that caught the ROM inside its IRET window, whose
	 * iret the hypervisor then finished (vcpu_shared.c). */
	uint64_t rom_iret_finished;
	uint64_t rom_irets;		/* IRETs the ROM made without an exit */
	/* IRETs whose frame the CPU refuses, reported to the guest as the
	 * fault (docs/VROM.md, "A faulting IRET"): caught at the ROM's own
	 * iret, and made through the IRET hypercall. */
	uint64_t iret_faults_rom, iret_faults_hc;
	/* VMI Halt calls by the virtual IF they were made with (clear: the
	 * guest relied on Halt enabling it, as its safe_halt must), and
	 * those that found an interrupt pending and did not sleep. */
	uint64_t halts_if_clear, halts_if_set, halts_pending;
	/* Exits at the first instruction of the direct int $0x80 handler,
	 * where the hypervisor cleared the virtual IF (vcpu_syscall.c). */
	uint64_t int80_entry_window;
	/* The hypervisor's own time between an exit and the next entry
	 * (run loop included, sleeps excluded), over hv_timed_exits exits:
	 * what one exit costs besides the world switch itself. */
	uint64_t hv_cycles, hv_timed_exits;
	/* Exits after which the run loop entered the vCPU again at once,
	 * with nothing to poll or decide (run.c, quiet_exit). */
	uint64_t quiet_exits;
	/* VMI INS/OUTS: elements moved, batches that left the call to be
	 * made again (the slot's int $0x82 re-executed), page faults the
	 * buffer raised and the guest got. */
	uint64_t string_io_elements, string_io_restarts, string_io_faults;
	/* Reports of calls vmi_refuse= refused, answered unsupported. */
	uint64_t refused_answered;
};

/* The guest's LDT as the CPU uses it (vcpu_ldt.c): its entries converted
 * like the GDT's into frames of ours, mapped read-only in the switcher at
 * HV_VCPU_LDT_BASE while the vCPU runs.  Allocated at the first non-empty
 * LDT. */
#define VCPU_LDT_PAGES 16
struct vcpu_ldt {
	uint64_t *page[VCPU_LDT_PAGES];	/* 512 entries each, by the 1:1 map */
	unsigned count;			/* entries of the loaded LDT; 0: none */
	uint32_t base;			/* its guest-linear base */
	bool remap;			/* pages allocated since the last entry */
};

struct vcpu {
	struct guest *guest;
	/* Its FPU/SSE registers while another vCPU has the CPU (fpu.h). */
	struct fpu_area fpu;
	/* Its pages, mapped in the switcher (HV_VCPU_STACK_PAGE and
	 * HV_VCPU_SHARED_PAGE) while it runs: the ring-0 stack whose top is
	 * the trap frame, and the VMI shared page. */
	void *stack_page, *shared_page;
	struct trap_frame *frame;	/* the guest's registers, at the stack page's top */
	struct vtlb vtlb;		/* shadow paging before activation */
	bool shadows_active;		/* guest->shadow serves from activation on */
	struct guest_paging paging;	/* derived from cr0/cr3/cr4 below */
	uint32_t cr0, cr2, cr3, cr4;	/* the guest's virtual control registers */
	bool vif;			/* the guest's virtual EFLAGS.IF */
	/* The VMI shared page (vcpu_layout.h): with its fast paths on, the
	 * ROM keeps the virtual IF and CR2 there while the guest runs, so
	 * vif and cr2 are copied in before each entry and out after each
	 * exit (vcpu_run). */
	struct vmi_shared_page *shared;
	/* The vUART's gen when its plain registers were last published in
	 * the shared page (inb_cache); published_ports false: never yet. */
	uint32_t published_ports_gen;
	bool published_ports;
	struct desc_reg gdtr, idtr;
	/* The guest's GDT entries as the CPU gets them (vcpu_desc.c): copied
	 * into the GDT of the CPU that enters this vCPU; the hypervisor's
	 * own slots stay 0 here. */
	uint64_t gdt[HV_GDT_ENTRIES];
	bool gdt_changed;		/* since the last copy */
	/* The last frame vcpu_check_frame passed, one returning to the
	 * guest kernel and one to user mode (exits alternate between them):
	 * its selectors (cs, ss, ds, es, fs, gs) with the descriptors they
	 * named then, and cs's limit.  The same selectors naming the same
	 * descriptors pass again without the checks. */
	struct frame_ok {
		bool valid;
		uint16_t sel[6];
		uint64_t desc[6];
		uint32_t cs_limit;
	} frame_ok[2];
	bool boot_gdt;			/* the boot protocol's GDT, not in guest memory */
	uint16_t ldtr, tr;
	struct vcpu_ldt ldt;
	uint32_t tr_base;		/* the guest's TSS (for ring-3 -> ring-0 stack) */
	uint32_t kernel_ss, kernel_esp;	/* VMI UpdateKernelStack */
	/* System calls without an exit (vcpu_syscall.c): the guest's IDT
	 * entry 0x80 as last read, whether the CPU's vector 0x80 goes to it
	 * for this entry, and the handler's offset. */
	uint64_t int80_gate;
	bool int80_direct;
	uint32_t int80_target;
	/* What decided int80_direct, and the gate it gave: the decision is
	 * taken again only when one of these changes (vcpu_syscall.c). */
	struct int80_inputs {
		uint64_t gate, code, stack;	/* the gate, its CS's and SS's descriptors */
		uint32_t kernel_ss;
		bool allowed;			/* paravirtual, fast paths, F_INT80, G_INT80 */
	} int80_inputs;
	bool int80_decided;
	uint16_t int80_sel;
	uint32_t int80_ss1;
	uint32_t dr[8];			/* VMI SetDR/GetDR: stored only */
	bool paravirtual;		/* the ROM's Init call has been made */
	/* The last VMI call and its register arguments, for diagnostics. */
	struct {
		bool made;
		uint32_t call, eax, edx, ecx, ebx, esi;
	} last_call;
	/* Halted (hlt, VMI Halt) until an interrupt can be delivered: the
	 * run loop enters it no more and idles the CPU. */
	bool halted;
	/* The vector of the last exit (the trap frame's, as the switcher
	 * pushed it), for the run loop: an external interrupt needs it. */
	unsigned exit_vector;
	/* Why it stopped its guest, and the instruction when there is one. */
	char stop_why[256];
	uint8_t stop_insn[15];
	unsigned stop_insn_len;
	bool stop_has_insn;
	/* Set by a memory callback when the access broke the rules, so the
	 * caller stops the guest instead of reflecting a fault. */
	bool violation;
	uint32_t last_fault_lin;		/* where the last guest #PF of a memory access was */
	char violation_why[128];
	uint64_t start_tsc;		/* when the guest started */
	struct vcpu_stats stats;
	/* Its place in the scheduler, and where its time went. */
	struct sched_entity sched;
};

/* A new vCPU of a loaded guest (vcpu_init on memory of its own). */
struct vcpu *vcpu_create(struct guest *g);
/* Build the vCPU for a loaded guest: switcher pages, shadow paging in
 * "physical mode", the 32-bit boot-protocol entry state. */
void vcpu_init(struct vcpu *v, struct guest *g);
/* One entry into the guest and the handling of the exit that ends it
 * (the run loop calls it with interrupts off, devices polled). */
void vcpu_run_once(struct vcpu *v);

/* The emulator's callbacks (vcpu_ops.c), and the operations they share
 * with the VMI calls: one policy whichever way the guest asks. */
void vcpu_emul_ops(struct vcpu *v, struct emul_ops *ops);
uint32_t vcpu_read_cr(struct vcpu *v, int n);
enum emul_result vcpu_write_cr(struct vcpu *v, int n, uint32_t val, struct emul_outcome *out);
void vcpu_cpuid(struct vcpu *v, uint32_t leaf, uint32_t subleaf, uint32_t r[4]);
/* false: no such MSR for the guest (rdmsr reads 0). */
bool vcpu_rdmsr(struct vcpu *v, uint32_t msr, uint64_t *val);
bool vcpu_wrmsr(struct vcpu *v, uint32_t msr, uint64_t val);
void vcpu_write_dr(struct vcpu *v, uint32_t n, uint32_t val);
uint32_t vcpu_read_dr(struct vcpu *v, uint32_t n);
/* EFLAGS as the guest sees them: eflags with the virtual IF. */
uint32_t vcpu_virtual_eflags(const struct vcpu *v, uint32_t eflags);
/* Guest-linear memory access with the guest's current paging; false with
 * *pf_error on a #PF the guest should see; v->violation set if the guest
 * broke the rules instead. */
bool vcpu_read_lin(struct vcpu *v, uint32_t lin, void *buf, unsigned len, unsigned cpl, uint32_t *pf_error);
bool vcpu_write_lin(struct vcpu *v, uint32_t lin, const void *buf, unsigned len, unsigned cpl, uint32_t *pf_error);
/* The same at CPL 1 for a VMI call's pointer argument: a call cannot
 * return a fault, so one stops the guest ("what" names the object). */
void vcpu_call_read(struct vcpu *v, uint32_t lin, void *buf, unsigned len, const char *what);
void vcpu_call_write(struct vcpu *v, uint32_t lin, const void *buf, unsigned len, const char *what);
/* Shadow paging (vcpu_mmu.c): the vTLB before activation, the
 * notification-driven shadows after it. */
void vcpu_mmu_init(struct vcpu *v, uint32_t switcher_pde);
void vcpu_mmu_activate(struct vcpu *v);
uint32_t vcpu_mmu_cr3(const struct vcpu *v);
/* Recompute v->paging from cr0/cr3/cr4: flush the vTLB when it changed,
 * or load the page directory's shadow. */
void vcpu_paging_changed(struct vcpu *v, bool force_flush);
void vcpu_mmu_fault(struct vcpu *v, uint32_t cr2, uint32_t error, unsigned cpl);
void vcpu_mmu_invlpg(struct vcpu *v, uint32_t lin);
void vcpu_mmu_flush(struct vcpu *v);
/* The guest changed the page-table entry at lin through a VMI call. */
void vcpu_mmu_entry_written(struct vcpu *v, uint32_t lin);
/* VMI SetPxE, GetPxE, SwapPxE, TestAndSet/ClearPxEBit on the entry at lin. */
void vcpu_mmu_set_pxe(struct vcpu *v, uint32_t lin, uint32_t val);
uint32_t vcpu_mmu_get_pxe(struct vcpu *v, uint32_t lin);
uint32_t vcpu_mmu_swap_pxe(struct vcpu *v, uint32_t lin, uint32_t val);
bool vcpu_mmu_change_pxe_bit(struct vcpu *v, uint32_t lin, unsigned bit, bool set);
/* At every exit, before anything else: the entries the ROM wrote and
 * queued in the shared page (F_PXE) get their shadows derived again. */
void vcpu_mmu_drain(struct vcpu *v);
void vcpu_mmu_announce(struct vcpu *v, uint32_t ppn, uint32_t flags, uint32_t orig,
		       uint32_t base, uint32_t count);
void vcpu_mmu_release(struct vcpu *v, uint32_t ppn);
void vcpu_mmu_print_stats(const struct vcpu *v);
/* audit=exit: at every exit, audit the shadows changed since the last. */
void vcpu_mmu_audit_exit(struct vcpu *v);
/* Restart the shadow-page peaks at the pages in use now (Ctrl-] r), so
 * that a later peak measures what ran since. */
void vcpu_mmu_reset_peaks(struct vcpu *v);

/* Descriptor tables (vcpu_desc.c). */
enum emul_result vcpu_boot_gdt(struct vcpu *v, struct emul_outcome *out);
enum emul_result vcpu_load_gdt(struct vcpu *v, uint32_t base, uint16_t limit, struct emul_outcome *out);
enum { VCPU_GDTR = 0, VCPU_IDTR = 1 };	/* as struct emul_ops's load_dtr */
enum emul_result vcpu_load_dtr(struct vcpu *v, int which, uint32_t base, uint16_t limit,
			       struct emul_outcome *out);
/* VMI SetGDT/SetIDT and GetGDT/GetIDT: a pseudo-descriptor at lin. */
enum emul_result vcpu_set_dtr_from(struct vcpu *v, int which, uint32_t lin, struct emul_outcome *out);
void vcpu_store_dtr(struct vcpu *v, int which, uint32_t lin);
/* VMI Write{GDT,LDT,IDT}Entry: descriptor lo:hi into entry idx of the table at lin. */
void vcpu_write_desc(struct vcpu *v, bool gdt, uint32_t table, uint32_t idx, uint32_t lo, uint32_t hi);
enum emul_result vcpu_load_seg(struct vcpu *v, struct trap_frame *f, int seg, uint16_t sel, struct emul_outcome *out);
enum emul_result vcpu_load_tr(struct vcpu *v, uint16_t sel, struct emul_outcome *out);

/* The LDT (vcpu_ldt.c).  lldt and VMI SetLDT: */
enum emul_result vcpu_load_ldtr(struct vcpu *v, uint16_t sel, struct emul_outcome *out);
/* Converted entry idx of the loaded LDT, 0 beyond it (or with none). */
uint64_t vcpu_ldt_entry(const struct vcpu *v, unsigned idx);
/* Entry idx read again from guest memory, as the CPU does at a segment
 * load: EMUL_OK with *conv (0 beyond the LDT), or the #PF of the read. */
enum emul_result vcpu_ldt_reload(struct vcpu *v, unsigned idx, uint64_t *conv, struct emul_outcome *out);
/* VMI WriteLDTEntry wrote entry idx of the table at linear table. */
void vcpu_ldt_entry_written(struct vcpu *v, uint32_t table, uint32_t idx);
/* Do the two linear addresses reach the same guest-physical byte? */
bool vcpu_same_guest_byte(struct vcpu *v, uint32_t lin_a, uint32_t lin_b);
/* Is GDT slot idx the one the loaded LDT's selector names? */
bool vcpu_ldt_slot(const struct vcpu *v, unsigned idx);
struct pcpu;
/* Entering v on c: its LDT pages in the switcher, the LDT descriptor in
 * c's GDT, lldt (after pcpu_enter has copied the GDT). */
void vcpu_ldt_enter(struct pcpu *c, struct vcpu *v, bool other_vcpu);
uint32_t vcpu_seg_base(struct vcpu *v, uint16_t sel);
/* Is eip inside the limit of code selector cs in our GDT?  Must hold for
 * every resume: the switcher's iret would raise #GP at CPL 0 otherwise. */
bool vcpu_eip_in_cs(const struct vcpu *v, uint16_t cs, uint32_t eip);
uint32_t vcpu_cs_limit(const struct vcpu *v, uint16_t cs);
/* The guest rewrote entry idx of its current GDT (VMI WriteGDTEntry). */
void vcpu_gdt_entry_changed(struct vcpu *v, unsigned idx);
/* Is sel usable in the CPU's GDT (or LDT) for `use` at privilege cpl? */
bool vcpu_selector_ok(const struct vcpu *v, uint16_t sel, enum seg_use use, unsigned cpl);
/* Before entering: every selector in the frame must load in our GDT;
 * false (with why) if one does not. */
bool vcpu_check_frame(struct vcpu *v, char *why, unsigned whylen);

/* Exception delivery through the guest's IDT (vcpu_exception.c).
 * soft_len: instruction length for a software interrupt (int n), else 0. */
void vcpu_deliver(struct vcpu *v, unsigned vector, bool has_error, uint32_t error, unsigned soft_len);
/* VMI IRET from the frame on the guest's stack: EMUL_OK also when the
 * frame faulted and the fault was delivered to the guest; otherwise
 * refused (out->why), f unchanged. */
enum emul_result vcpu_iret(struct vcpu *v, struct trap_frame *f, struct emul_outcome *out);
/* The iret itself; EMUL_FAULT: the exception the CPU's iret raises. */
enum emul_result vcpu_iret_frame(struct vcpu *v, struct trap_frame *f, uint32_t esp,
				 struct emul_outcome *out);
/* Report a faulting IRET (docs/VROM.md, "A faulting IRET"): the frame at
 * frame_esp, the fault at eip (the IRET slot), with the virtual IF the
 * caller had. */
void vcpu_iret_fault(struct vcpu *v, struct trap_frame *f, uint32_t frame_esp, uint32_t eip,
		     const struct emul_outcome *out);

/* The VMI shared page (vcpu_shared.c): set up, published before each
 * entry, taken back after each exit; an exit inside the ROM's IRET
 * window finishes that IRET first (false: nothing more to handle). */
void vcpu_shared_init(struct vcpu *v, bool fastpaths);
void vcpu_share_state(struct vcpu *v);
void vcpu_take_shared_state(struct vcpu *v);
bool vcpu_finish_rom_iret(struct vcpu *v, struct trap_frame *f);
/* The offset in the ROM (at GUEST_ROM_GPA) of the guest's cs:eip, through
 * its own page tables; false if that is not the ROM's copy. */
bool vcpu_rom_offset(struct vcpu *v, uint16_t cs, uint32_t eip, uint32_t *rom_off);

/* System calls without an exit (vcpu_syscall.c): the guest's gate read
 * again when its IDT changes, installed in the CPU's IDT before each
 * entry when it passes the checks, and the entry window after an exit. */
void vcpu_syscall_gate_refresh(struct vcpu *v);
void vcpu_syscall_gate_install(struct vcpu *v);
void vcpu_syscall_entry_window(struct vcpu *v, const struct trap_frame *f);
/* VMI UpdateKernelStack. */
void vcpu_set_kernel_stack(struct vcpu *v, uint32_t ss, uint32_t esp);

/* hlt with the given virtual IF (vcpu_ops.c): the vCPU is halted until
 * an interrupt can be delivered (the run loop waits); with IF clear the
 * guest is stopped. */
void vcpu_halt(struct vcpu *v);
/* VMI Halt: the virtual IF set and the vCPU halted in one step. */
void vcpu_halt_call(struct vcpu *v);

/* Port I/O (vcpu_io.c). */
enum emul_result vcpu_io_in(struct vcpu *v, uint16_t port, unsigned size, uint32_t *val);
enum emul_result vcpu_io_out(struct vcpu *v, uint16_t port, unsigned size, uint32_t val);
/* The port rule a size-byte access at port must pass before anything is
 * done: ports at or above VCPU_LEGACY_IO_END are no PC guest's. */
#define VCPU_LEGACY_IO_END 0x400
bool vcpu_io_port_legal(uint32_t port, unsigned size);

/* VMI hypercalls through int $0x82 (hypercall.c). */
void vcpu_hypercall(struct vcpu *v);

/* Stop the guest (guest_stop.c): mark it dead with the reason and go
 * back to the run loop, which prints "vmi-hv: guest stopped: <reason>",
 * the registers and the counters. */
__attribute__((noreturn, format(printf, 2, 3)))
void vcpu_stop(struct vcpu *v, const char *fmt, ...);
__attribute__((noreturn, format(printf, 4, 5)))
void vcpu_stop_insn(struct vcpu *v, const uint8_t *bytes, unsigned len, const char *fmt, ...);
void vcpu_print_counters(const struct vcpu *v);
/* The guest rebooted or powered off: it ends, back to the run loop,
 * which prints the statistics (guest_stop.c). */
__attribute__((noreturn)) void vcpu_guest_reboot(struct vcpu *v, const char *why);
__attribute__((noreturn)) void vcpu_guest_shutdown(struct vcpu *v, const char *why);
/* The run loop's report of a guest that died (guest_stop.c): the stop
 * diagnostic, or the end statistics. */
void guest_report_end(struct guest *g);
/* guest_frames.c (the budget's functions are in guest.h): the
 * free-frame count before the guests run (checked against what the
 * budgets promise); the frames a dead guest's run took (shadows, vTLB
 * tables, LDT copy) given back. */
void guest_frames_baseline(struct guest **guests, unsigned n);
void guest_frames_release(struct guest *g);
/* No guest is left running, and some were stopped: the console answers
 * 's' (their statistics) and 'q' (exit) for ever (guest_stop.c). */
__attribute__((noreturn)) void guests_after_stop(struct guest **guests, unsigned n);

#endif
