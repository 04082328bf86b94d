"""Judgements the QEMU tests make over what they read, as plain functions
of the figures or text, so that tests/cases/test_checks.py can feed each
the input that an earlier, weaker form of it accepted.
"""


def judge_tries(run, tries, always, settled):
    """Up to `tries` runs of run(attempt) -> figures.  always(figures) lists
    what is wrong in a try whatever the host's load (a count that must be
    0 on every try); settled(figures) says whether a noisy figure is good
    enough to stop trying (the best of the tries counts for it only).
    Returns (problems, the figures of the last try)."""
    figures = None
    for attempt in range(1, tries + 1):
        figures = run(attempt)
        wrong = list(always(figures))
        if wrong:
            return [f"try {attempt}: {w}" for w in wrong], figures
        if settled(figures):
            break
    return [], figures


def hv_part_of_gdb(out):
    """The part of a gdb session's output before its second breakpoint
    stop: what it printed while stopped in the hypervisor."""
    return out.partition("Breakpoint 2")[0]


# A frame of the hypervisor's backtrace beyond frame 0: a function of hv/'s
# C sources, with its file.
HV_FRAME = r"#[1-9]\d*\s+0x[0-9a-f]+ in \w+ \([^\n]*\) at \S*/hv/\S+\.c:\d+"


def bench_problems(boot):
    """What went wrong in one boot of the benchmark initramfs (a dict of
    compare_guest.run_boot()): every workload, micro and macro, must have
    succeeded, as microbench's own count says (BENCH-END failures=0, exit
    status 0) and no BENCH-FAIL line; hackbench must have run (not said
    why it could not)."""
    problems = []
    if boot["bench_end_failures"] is None:
        problems.append("no BENCH-END line")
    elif boot["bench_end_failures"]:
        problems.append(f"BENCH-END failures={boot['bench_end_failures']}")
    for name, why in boot["failures"].items():
        problems.append(f"{name} failed: {why}")
    if boot["guest_rc"] != 0:
        problems.append(f"the benchmark program exited {boot['guest_rc']}")
    if "hackbench" not in boot["tests"]:
        problems.append("hackbench did not run")
    return problems
