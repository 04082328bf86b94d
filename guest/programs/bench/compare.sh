#!/bin/sh
# The guest side of `make compare`, run by /init for vmitest=compare.  Its
# options come from the kernel command line, which is the same in the
# native boot and the boot under vmi-hv:
#   bench_ms=MS      time per micro test (microbench -t; default 300)
#   bench_scale=N    size of the macro workloads (microbench -s; default 4)
# -p: pause around every timed part for the harness (tests/compare.py).
# cyclictest keeps its statistics in POSIX shared memory (shm_open).
mkdir -p /dev/shm && mount -t tmpfs shm /dev/shm
arg() { sed -n "s/.*\b$1=\([0-9]*\).*/\1/p" /proc/cmdline; }
ms=$(arg bench_ms)
scale=$(arg bench_scale)
exec /tests/microbench -p -t "${ms:-300}" -s "${scale:-4}"
