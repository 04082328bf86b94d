/*
 * exception_frame.c - the frame of an exception delivery (pure: built for
 * the hypervisor and on the host for its unit test); see exception_frame.h.
 */
#include "exception_frame.h"

unsigned exc_frame_build(const struct exc_frame_in *in, uint32_t stack[EXC_FRAME_MAX_WORDS])
{
	unsigned n = 0;

	/* The CPU pushes from the highest address down; this writes from
	 * the new ESP up, so the last word pushed comes first. */
	if (in->has_error)
		stack[n++] = in->error;
	stack[n++] = in->eip;
	stack[n++] = in->cs;
	stack[n++] = in->eflags;
	if (in->stack_switch) {
		stack[n++] = in->esp;
		stack[n++] = in->ss;
	}
	return n;
}
