/*
 * trap_frame.h - the registers as the switcher saves them at every trap
 * (switcher.S pushes them in this order; vcpu_layout.h has the offsets the
 * assembly uses).  Vocabulary: the emulator, the vCPU code and the trap
 * dispatcher all speak of guest registers through it.
 */
#ifndef VMI_HV_TRAP_FRAME_H
#define VMI_HV_TRAP_FRAME_H

#include <stdint.h>

struct trap_frame {
	uint32_t edi, esi, ebp, esp0, ebx, edx, ecx, eax;	/* pushal */
	uint32_t gs, fs, es, ds;
	uint32_t vector, error;
	uint32_t eip, cs, eflags;
	uint32_t esp, ss;	/* only if the trap came from ring > 0 */
};

#endif
