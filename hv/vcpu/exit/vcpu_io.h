/*
 * vcpu_io.h - port I/O (vcpu_io.c) and the VMI hypercall entry (hypercall.c).
 */
#ifndef VMI_HV_VCPU_IO_H
#define VMI_HV_VCPU_IO_H

#include <stdint.h>
#include <stdbool.h>
#include "emulate.h"

struct vcpu;

/* Port I/O (vcpu_io.c). */
enum emul_result vcpu_io_in(struct vcpu *v, uint16_t port, unsigned size, uint32_t *val);
enum emul_result vcpu_io_out(struct vcpu *v, uint16_t port, unsigned size, uint32_t val);
/* The port rule a size-byte access at port must pass before anything is
 * done: ports at or above VCPU_LEGACY_IO_END are no PC guest's. */
#define VCPU_LEGACY_IO_END 0x400
bool vcpu_io_port_legal(uint32_t port, unsigned size);

/* A log line the guest caused, within l's limit: 0 if it is only to
 * be counted, else what to end it with ("" or, at the limit's last
 * line, that more will only be counted); what names the kind of line in
 * the "N more WHAT not logged" summary of the next window. */
#define GUEST_LOG_LIMIT 20
struct guest_log_limit;
const char *guest_log_take(struct guest_log_limit *l, const char *what);

/* VMI hypercalls through int $0x82 (hypercall.c). */
void vcpu_hypercall(struct vcpu *v);

#endif
