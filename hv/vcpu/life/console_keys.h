/*
 * console_keys.h - the hypervisor's console while guests run
 * (console_keys.c): typed bytes go to the console guest's virtual UART,
 * Ctrl-] followed by a letter is a command to the hypervisor (s, r, q,
 * l, 1-9; the list is in console_keys.c).
 */
#ifndef VMI_HV_CONSOLE_KEYS_H
#define VMI_HV_CONSOLE_KEYS_H

#include <stdbool.h>
#include "guest.h"

struct console_keys {
	struct guest **guests;
	unsigned n;
	/* The guest the console belongs to: its UART gets what is typed,
	 * and Ctrl-] s/r/q act on it. */
	struct guest *console;
	bool escaped;		/* Ctrl-] seen, the command comes next */
};

/* With interrupts off: everything typed since the last poll. */
void console_keys_poll(struct console_keys *k);
/* After a guest ended: if it had the console, the console moves to the
 * first guest still alive (and its VGA screen with it). */
void console_keys_guest_ended(struct console_keys *k);
/* The run loop, with sched_lock held, back from v: a Ctrl-] q asked for
 * while v's exit was handled stops its guest now (run_jmp).  A vCPU that
 * halted or was preempted at that exit would not look before its next
 * exit, which may never come. */
struct vcpu;
void console_keys_stop_requested(struct vcpu *v);

#endif
