"""Debian's stress-ng in the guest (the stress initramfs,
scripts/build-stress-initrd.sh): which stressors `make stress` runs and
how, and reading their bogo-ops.

The stressors run one after another (a job file with `run sequential`;
this stress-ng, 0.15, has no --with), each for SECONDS with WORKERS
instances, from a shell prompt, natively or under vmi-hv alike.
"""

import os
import re

from vmitest import TestFailure, paths
from hvguest import PROMPT

# The VM and page-table stressors that work on the guest kernel (6.1,
# tinyconfig-based): mapping, moving, protecting, discarding and faulting
# memory, and address spaces created and torn down.  Left out: vm-rw
# (process_vm_readv is not built in), userfaultfd (not built in), sigbus
# (exits 1 here without bogo-ops), and the slower
# cousins of these (mmapfixed, remap, msync, bigheap, pageswap, ...), to
# keep `make stress` to a few minutes.
STRESSORS = ["vm", "mmap", "mremap", "mprotect", "madvise", "brk", "stack", "fork", "vfork",
             "mmapfork", "mmapmany", "vm-addr", "pagemove", "sigsegv", "mmapaddr", "munmap",
             "mlock", "vm-segv"]

# stress-ng's default sizes (256 MiB per worker) do not fit the guest's
# 128 MiB: with them vm, mmap and mremap make 0 bogo-ops.
OPTIONS = {"vm": ["vm-bytes 4M"], "mmap": ["mmap-bytes 4M"], "mremap": ["mremap-bytes 4M"]}

# The stage the stress initrd was packed from; without the .debs it holds
# the reason instead of the program.
STAGE = os.path.join(paths.BUILD, "guest", "stress-initramfs")
MISSING = os.path.join(STAGE, "tests", "stress-ng.missing")

# --metrics-brief: "stress-ng: metrc: [PID] NAME BOGO REAL USR SYS RATE RATE".
METRIC = re.compile(r"stress-ng: metrc: \[\d+\] ([a-z0-9-]+) +(\d+) +([0-9.]+) +[0-9.]+ +[0-9.]+ "
                    r"+([0-9.]+) +[0-9.]+\s*$", re.M)
PROBLEM = re.compile(r"stress-ng: (fail|error): [^\n]*")


def missing():
    """Why the stress initrd has no stress-ng, or None when it has."""
    if os.path.exists(MISSING):
        with open(MISSING) as f:
            return f.read().strip()
    return None


def job(stressors, workers, seconds):
    """The job file: every stressor in turn with WORKERS instances."""
    lines = ["run sequential", f"timeout {seconds}", "metrics-brief"]
    for s in stressors:
        lines += [f"{s} {workers}"] + OPTIONS.get(s, [])
    return "\n".join(lines) + "\n"


def run(q, stressors, workers, seconds):
    """Run the job at the guest's shell; {stressor: (bogo-ops, real seconds,
    bogo-ops/s)}.  TestFailure when stress-ng fails or skips a stressor."""
    text = job(stressors, workers, seconds).replace("\n", "\\n")
    q.send(f"cd /tmp && printf '{text}' > stress.job && stress-ng --job stress.job; "
           f"echo stress-ng-rc=$?; cd /\n")
    mark = q.cursor
    m = q.expect(r"stress-ng-rc=(\d+)", timeout=120 + len(stressors) * (seconds + 2) * 10)
    out = q.output[mark:q.cursor]
    q.expect(PROMPT, timeout=60)
    results = {name: (int(ops), float(real), float(rate)) for name, ops, real, rate in METRIC.findall(out)}
    problems = [p.group(0) for p in PROBLEM.finditer(out)]
    if m.group(1) != "0" or problems:
        raise TestFailure(f"stress-ng x{workers} exited {m.group(1)}: {'; '.join(problems)}")
    absent = [s for s in stressors if s not in results]
    if absent:
        raise TestFailure(f"stress-ng x{workers} printed no bogo-ops for {', '.join(absent)}")
    return results
