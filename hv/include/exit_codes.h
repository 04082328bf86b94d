/*
 * exit_codes.h - why the hypervisor stopped.
 *
 * On a clean stop the hypervisor writes the code to QEMU's isa-debug-exit
 * port (HV_DEBUG_EXIT_PORT); QEMU then exits with status (code << 1) | 1.
 * Without that device the write is ignored and the CPU halts with
 * interrupts off.  tests/cases/test_hv_core.py relies on these numbers;
 * docs/HV.md lists them.
 */
#ifndef VMI_HV_EXIT_CODES_H
#define VMI_HV_EXIT_CODES_H

#define HV_DEBUG_EXIT_PORT      0xf4

#define HV_EXIT_DONE            0x01    /* status 3: finished normally */
#define HV_EXIT_BAD_INPUT       0x02    /* status 5: "vmi-hv: error:" */
#define HV_EXIT_CPU_EXCEPTION   0x03    /* status 7: exception in the hypervisor */
#define HV_EXIT_DOUBLE_FAULT    0x04    /* status 9: double fault */
#define HV_EXIT_PANIC           0x05    /* status 11: internal error */
#define HV_EXIT_GUEST_STOPPED   0x06    /* status 13: the guest was stopped ("vmi-hv: guest stopped:") */
#define HV_EXIT_GUEST_REBOOT    0x07    /* status 15: the guest rebooted (VMI Reboot, keyboard-controller reset) */
#define HV_EXIT_GUEST_SHUTDOWN  0x08    /* status 17: the guest called VMI Shutdown */

#endif
