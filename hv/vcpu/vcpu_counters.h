/*
 * vcpu_counters.h - a vCPU's plain counters, each written once: the row
 * that names it also says how the report prints it.
 *
 * VCPU_COUNTER_LINES(L) holds one row per report line, L(section, format,
 * field, ...): the section says where in the report the line goes (with
 * the exits, the calls or the interrupts), the fields are the line's
 * counters, in struct vcpu_stats in that
 * order (vcpu_state.h declares them from this table, a line's fields side
 * by side), and the format prints them, one %llu each, in the same order
 * (guest_report.c prints every row in a loop; the test hv-counter-table
 * checks that each format has as many %llu as its row has fields).  A new
 * counter is a row here and its increment.  The counters the report
 * prints with other figures (averages, the alarm's, arrays by vector or
 * call) are declared in vcpu_state.h and printed by guest_report.c.
 */
#ifndef VMI_HV_VCPU_COUNTERS_H
#define VMI_HV_VCPU_COUNTERS_H

enum vcpu_counter_section { COUNTERS_EXITS, COUNTERS_CALLS, COUNTERS_INTERRUPTS };

#define VCPU_COUNTER_LINES(L) \
	/* should be 0: every site is patched */ \
	L(COUNTERS_EXITS, "privileged instructions trapped after activation: %llu", emulated_after_activation) \
	/* ring-3 faults the emulator does not handle, given to the guest's \
	 * kernel as the CPU raised them (docs/HV.md, "What the guest can reach") */ \
	L(COUNTERS_EXITS, "user-mode faults given to the guest kernel: %llu", user_faults_reflected) \
	/* F_PXE: entry writes the ROM made without an exit and queued in \
	 * the shared page, drained at an exit (vcpu_pxe_queue.c) */ \
	L(COUNTERS_CALLS, "page-table updates without an exit: %llu queued entries drained at %llu exits (at most %llu at once)", \
	  pxe_drained, pxe_drains, pxe_max_batch) \
	/* F_IRET: IRETs the ROM made without an exit, and exits that caught \
	 * the ROM inside its IRET window, whose iret the hypervisor finished \
	 * (vcpu_shared.c) */ \
	L(COUNTERS_CALLS, "IRETs in the ROM without an exit: %llu (%llu finished by the hypervisor at an exit inside the ROM's IRET window)", \
	  rom_irets, rom_iret_finished) \
	/* Halt by the virtual IF it was made with (clear: the guest relied on \
	 * Halt enabling it, as its safe_halt must), and those that found an \
	 * interrupt pending and did not sleep */ \
	L(COUNTERS_CALLS, "Halt calls: %llu with the virtual IF clear (Halt enabled it), %llu with it set; %llu found an interrupt pending (woken at once)", \
	  halts_if_clear, halts_if_set, halts_pending) \
	/* INS/OUTS: elements moved, batches that left the call to be made \
	 * again (the slot's int $0x82 re-executed), faults the buffer raised */ \
	L(COUNTERS_CALLS, "string port I/O calls (INS/OUTS): %llu elements, %llu batches continued (the int $0x82 made again), %llu page faults given to the guest", \
	  string_io_elements, string_io_restarts, string_io_faults) \
	L(COUNTERS_CALLS, "VMI calls answered unsupported (vmi_refuse=): %llu", refused_answered) \
	L(COUNTERS_CALLS, "VMI calls with no code answered unsupported: %llu", unsupported_answered) \
	L(COUNTERS_CALLS, "VMI Init calls refused (VMI active already): %llu", init_refused) \
	/* IRETs whose frame the CPU refuses, reported to the guest as the \
	 * fault (docs/VROM.md, "A faulting IRET") */ \
	L(COUNTERS_CALLS, "faulting IRETs reported to the guest: %llu from the ROM's iret, %llu from the IRET hypercall", \
	  iret_faults_rom, iret_faults_hc) \
	/* #PF the shadow paging fixed, and #PF reflected into the guest */ \
	L(COUNTERS_CALLS, "page faults: %llu hidden (shadow fills), %llu guest-visible", hidden_faults, guest_page_faults) \
	/* F_PIC, F_ALARM: entries that wrote the 8259s' state into the shared \
	 * page, exits that took it back (with its checks), entries that \
	 * wrote new alarm floors and token (vcpu_shared.c); each only when \
	 * something changed, so far fewer than the exits \
	 * (hv-rom-state-quiet-exits) */ \
	L(COUNTERS_INTERRUPTS, "8259 and alarm state in the shared page: the 8259s' published at %llu entries, taken back at %llu exits; alarm floors published at %llu entries", \
	  rom_pic_published, rom_pic_taken, rom_alarm_published) \
	/* at most 1 (the first interrupt returns through IRET); more means \
	 * interrupts returned through a raw iret, which cannot set IF at \
	 * CPL 1: the virtual IF stayed off behind its back */ \
	L(COUNTERS_INTERRUPTS, "virtual interrupts delivered in paravirtual mode before the first IRET call: %llu", \
	  injected_before_iret)

/* A row's fields, side by side in struct vcpu_stats. */
#define VCPU_COUNTER_FIELDS(section, format, ...) struct { uint64_t __VA_ARGS__; };
/* The first of a row's fields: where its values start. */
#define VCPU_COUNTER_FIRST(first, ...) first

#endif
