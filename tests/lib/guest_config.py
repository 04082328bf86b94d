"""The configuration of the guest kernel under test (paths.GUEST_CONFIG:
build/guest/linux/.config, or the second configuration's with
VMIHV_BZIMAGE), for tests whose expectation depends on it."""

import os
import re

from vmitest import paths


def read_config(path):
    """{OPTION: value} for the options set in a .config (without CONFIG_)."""
    with open(path) as f:
        return dict(re.findall(r"^CONFIG_(\w+)=(.*)$", f.read(), re.M))


def guest_config(t):
    """The options of the kernel under test; fails the test if its
    .config is missing (the kernel was not built by scripts/build-guest.sh)."""
    t.require(paths.GUEST_CONFIG)
    return read_config(paths.GUEST_CONFIG)


def describe(cfg):
    """One line naming what distinguishes the configurations we test."""
    tick = "periodic" if cfg.get("HZ_PERIODIC") == "y" else "tickless idle"
    preempt = "PREEMPT" if cfg.get("PREEMPT") == "y" else "no preemption"
    steal = "on" if cfg.get("PARAVIRT_TIME_ACCOUNTING") == "y" else "off"
    return (f"{os.path.relpath(paths.GUEST_CONFIG, paths.ROOT)}: HZ={cfg.get('HZ')}, {tick} tick, "
            f"{preempt}, PARAVIRT_TIME_ACCOUNTING {steal}")
