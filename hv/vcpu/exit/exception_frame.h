/*
 * exception_frame.h - the words the CPU pushes when it delivers an
 * exception or interrupt to the guest's kernel (its CPL 0), as a pure
 * function so that the host unit tests check it (tests/unit/test_exception_frame.c).
 *
 * From the guest's kernel: eflags, cs, eip [, error].  From its user space
 * the CPU switches to the ring-0 stack first and pushes the old ss and
 * esp too: ss, esp, eflags, cs, eip [, error], six words at most.
 */
#ifndef VMI_HV_EXCEPTION_FRAME_H
#define VMI_HV_EXCEPTION_FRAME_H

#include <stdbool.h>
#include <stdint.h>

#define EXC_FRAME_MAX_WORDS 6

struct exc_frame_in {
	bool stack_switch;		/* from ring 3: push the old ss:esp */
	uint32_t ss, esp;		/* the interrupted stack (stack_switch only) */
	uint32_t eflags, cs, eip;	/* eip: where the handler's iret returns */
	bool has_error;
	uint32_t error;
};

/*
 * Fill stack[] as the frame lies in guest memory, lowest address (the new
 * ESP) first, and return its length in words.
 */
unsigned exc_frame_build(const struct exc_frame_in *in, uint32_t stack[EXC_FRAME_MAX_WORDS]);

#endif
