"""The guest's paravirt call sites as patched (docs/GUEST.md, "How calls
reach the ROM").

`/proc/vmi/sites` lists every pv call site of the kernel (but for the
freed init text) with the bytes its text holds at run time and what they
do: `rom` (a direct call of a
ROM slot), `adapter` (a direct call of a VMI function that converts the
arguments), `wrapper` (a direct call of a counting wrapper whose op is one
VMI call), `call` (any other direct call), `indirect` (a call through a
pointer) or `inline` (instructions: the native ones, or nops).

`guest-pv-sites-direct`: under vmi-hv no site calls through a pointer or
a wrapper, and every site of an op that has a direct ROM slot calls it
(each op's sites one slot, each slot called by as many ops as the
series' vmi_direct_ops[] maps to it); natively the sites hold no call into VMI code and no indirect call, the
interrupt-flag sites their native instructions.  With `vmi_count_calls`
(counting) the sites call the wrappers instead, which is what the check
under vmi-hv refuses.
"""

import glob
import os
import re

from vmitest import FATAL_PATTERNS, paths, test
from hvguest import PROMPT, SERIAL_CMDLINE, boot_hv, boot_native, quiet_console, run_in_shell

KINDS = ("rom", "adapter", "wrapper", "call", "indirect", "inline")


def read_sites(t, q):
    """The listing's summary line and, per op, the kinds of its sites
    ({op: {kind: count}}) and the ROM calls its rom sites call ({op:
    {name}}), tallied in the guest from the site lines."""
    q.expect(PROMPT, timeout=120)
    text = run_in_shell(q, "head -1 /proc/vmi/sites | sed 's/^/SUM=/'; "
                           "awk '!/^#/ { n[$2 \" \" $4 \" \" ($4 == \"rom\" ? $5 : \"-\")]++ } "
                           "END { for (k in n) print \"OPK=\" k \" \" n[k] }' /proc/vmi/sites", timeout=120)
    summary, ops, targets = None, {}, {}
    for line in text.split("\n"):
        if line.startswith("SUM="):
            summary = line[4:]
        elif line.startswith("OPK="):
            op, kind, target, n = line[4:].split()
            kinds = ops.setdefault(int(op), {})
            kinds[kind] = kinds.get(kind, 0) + int(n)
            if kind == "rom":
                targets.setdefault(int(op), set()).add(target)
    t.check(summary and re.match(r"# \d+ sites \(\d+ more in the freed init text\):", summary),
            f"no summary line in /proc/vmi/sites: {summary}")
    total = {k: sum(kinds.get(k, 0) for kinds in ops.values()) for k in KINDS}
    # The summary the kernel prints and the lines must agree.
    for k in KINDS:
        s = re.search(rf" {k} (\d+)", summary or "")
        t.check(s and int(s.group(1)) == total[k], f"summary '{summary}' disagrees with the lines: {k} {total[k]}")
    return ops, total, targets


def direct_calls():
    """The VMI calls of the ops the series patches into direct ROM calls,
    one per op ({name: ops}), read from its one definition, the series'
    vmi_direct_ops[] (VMI_DIRECT(op, Name) lines)."""
    calls = {}
    for path in glob.glob(os.path.join(paths.ROOT, "guest", "patches", "*.patch")):
        with open(path) as f:
            for name in re.findall(r"^\+\s*VMI_DIRECT\([\w.]+, (\w+)\),$", f.read(), re.M):
                calls[name] = calls.get(name, 0) + 1
    return calls


def check_targets(t, targets, what):
    """Every direct op's sites call its own slot: each op one target, and
    each call the target of as many ops as vmi_direct_ops[] gives it (an
    op whose sites turned into adapters or native code loses its call; a
    site calling another op's slot gives that op two)."""
    want = direct_calls()
    t.check(len(want) >= 20, f"vmi_direct_ops[] not found in guest/patches: {want}")
    several = {op: sorted(n) for op, n in targets.items() if len(n) > 1}
    t.check(not several, f"{what}: ops whose ROM sites call different slots: {several}")
    got = {}
    for names in targets.values():
        for name in names:
            got[name] = got.get(name, 0) + 1
    wrong = {name: f"{got.get(name, 0)} ops, not {want.get(name, 0)}"
             for name in sorted(set(got) | set(want)) if got.get(name, 0) != want.get(name, 0)}
    t.check(not wrong, f"{what}: direct ROM calls made by other than their vmi_direct_ops[] ops: {wrong}")


def check_direct(t, ops, total, what):
    t.check(total["indirect"] == 0, f"{what}: {total['indirect']} sites call through a pointer")
    t.check(total["wrapper"] == 0, f"{what}: {total['wrapper']} sites call a counting wrapper")
    t.check(total["rom"] > 0, f"{what}: no site calls a ROM slot")
    # An op whose sites call the ROM calls it at every site.
    mixed = {op: kinds for op, kinds in ops.items() if "rom" in kinds and len(kinds) > 1}
    t.check(not mixed, f"{what}: ops with ROM calls at some sites only: {mixed}")


@test("guest-pv-sites-direct")
def pv_sites_direct(t):
    q = boot_native(t, fatal=FATAL_PATTERNS)
    ops, n, _ = read_sites(t, q)
    q.kill()
    t.note("natively: " + ", ".join(f"{k} {n[k]}" for k in KINDS))
    t.check(n["rom"] == 0 and n["adapter"] == 0 and n["wrapper"] == 0,
            f"natively: sites call VMI code: {n}")
    t.check(n["indirect"] == 0, f"natively: {n['indirect']} sites call through a pointer")
    t.check(n["inline"] > 0, "natively: no site holds native instructions")

    q = boot_hv(t)
    quiet_console(q)
    ops, v, targets = read_sites(t, q)
    q.kill()
    t.note("under vmi-hv: " + ", ".join(f"{k} {v[k]}" for k in KINDS))
    check_direct(t, ops, v, "under vmi-hv")
    check_targets(t, targets, "under vmi-hv")

    q = boot_hv(t, guest_args=SERIAL_CMDLINE + " vmi_count_calls")
    quiet_console(q)
    ops, c, _ = read_sites(t, q)
    q.kill()
    t.note("under vmi-hv with vmi_count_calls: " + ", ".join(f"{k} {c[k]}" for k in KINDS))
    t.check(c["rom"] == 0 and c["wrapper"] > 0,
            f"vmi_count_calls: the sites should call the counting wrappers: {c}")
    t.check(c["indirect"] == 0, f"vmi_count_calls: {c['indirect']} sites call through a pointer")
