"""The tests' own definitions of what the hypervisor prints when it dies or
stops a guest (vmitest.HV_FATAL_PATTERNS, hvguest's stop line and stop
reasons) must match something the hypervisor can really print.  A pattern
that matches nothing cannot fail a test: `vmi-hv: fatal` sat in the fatal
list for months while the hypervisor printed `vmi-hv: PANIC:`.

No QEMU here: the check renders every string literal of hv/ as printf
would (numbers as one digit repeated to the field width, %s as "x" or any
short literal of the same file, e.g. "in"/"out" for a port direction) and
requires each pattern to match at least one rendering.
"""

import glob
import itertools
import os
import re

from vmitest import HV_FATAL_PATTERNS, paths, test
from hvguest import GUEST_FAULT_CALL_REASONS, GUEST_FAULT_STOPS, GUEST_STOPPED_LINE, HV_FAULT_STOPS

# A C string literal, and runs of adjacent ones ("a" "b" is one string).
LITERAL = r'"((?:[^"\\\n]|\\.)*)"'
LITERAL_RUN = re.compile(LITERAL + r'(?:\s*' + LITERAL + r')*')
CONVERSION = re.compile(r"%([-+ #0]*)(\d*)(?:\.\d+)?(hh|h|ll|l|z)?([diouxXcsp%])")


def unescape(s):
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), s)


def literals(text):
    for m in LITERAL_RUN.finditer(text):
        yield "".join(unescape(x) for x in re.findall(LITERAL, m.group(0)))


def renderings(fmt, words):
    """fmt as printf could print it: each numeric conversion as one digit
    (0-9, padded to its width), each %s as one of words."""
    if "%" not in fmt:
        yield fmt
        return
    for digit, word in itertools.product("0123456789", words):
        def conv(m):
            kind, width = m.group(4), int(m.group(2) or 1)
            if kind == "%":
                return "%"
            if kind == "s":
                return word
            if kind == "c":
                return "x"
            return digit * width
        yield CONVERSION.sub(conv, fmt)


def hv_strings(global_words=False):
    """Renderings of every string of hv/; %s from the same file's short
    literals, or (global_words, slower) from all of hv/'s: a reason is
    often a literal of one file printed through "%s" in another."""
    files = {}
    for path in glob.glob(os.path.join(paths.ROOT, "hv", "**", "*.[chS]"), recursive=True):
        with open(path, errors="replace") as f:
            files[path] = list(literals(f.read()))
    short = lambda strings: {s for s in strings if "%" not in s and 0 < len(s) <= 60}
    everywhere = short(itertools.chain(*files.values()))
    for strings in files.values():
        words = sorted({"x"} | (everywhere if global_words else short(strings)))
        for s in strings:
            yield from renderings(s, words)


@test("tests-fatal-patterns-match-hv")
def fatal_patterns_match_hv(t):
    strings = list(hv_strings())
    t.check(len(strings) > 1000, f"only {len(strings)} strings rendered from hv/: is the parser broken?")
    lines = [("vmitest.HV_FATAL_PATTERNS", p) for p in HV_FATAL_PATTERNS] + \
            [("hvguest.GUEST_STOPPED_LINE", GUEST_STOPPED_LINE)]
    # Stop reasons are the guest-stop line's text: matched at its start.
    # A call's reason is printed through "VMI call %u (%s): %s": each of
    # the reasons must be a string of hv/ on its own, and the composite
    # allow-list entry matches the format with one of them put in.
    composite = [p for p in GUEST_FAULT_STOPS if p.endswith("(?:%s)" % "|".join(GUEST_FAULT_CALL_REASONS))]
    reasons = [("hvguest.HV_FAULT_STOPS", p) for p in HV_FAULT_STOPS] + \
              [("hvguest.GUEST_FAULT_CALL_REASONS", p) for p in GUEST_FAULT_CALL_REASONS] + \
              [("hvguest.GUEST_FAULT_STOPS", p) for p in GUEST_FAULT_STOPS if p not in composite]
    t.check(len(composite) == 1, "hvguest.GUEST_FAULT_STOPS has no entry for GUEST_FAULT_CALL_REASONS")
    for s in strings:
        if s.startswith("VMI call ") and s.endswith("): x"):
            call_prefix = s[:-1]
            break
    else:
        t.fail('no "VMI call %u (%s): %s" among the strings of hv/')
    for r in GUEST_FAULT_CALL_REASONS:
        example = next((s for s in strings if re.match(r, s)), None)
        if example:
            t.check(re.match(composite[0], call_prefix + example),
                    f"the allow-list entry does not take {call_prefix + example!r}")
    found = lambda p, search, strings: any((re.search if search else re.match)(p, s) for s in strings)
    missing = [(where, p, True) for where, p in lines if not found(p, True, strings)]
    missing += [(where, p, False) for where, p in reasons if not found(p, False, strings)]
    if missing:     # the slow pass, for those only
        missing = [(where, p, search) for where, p, search in missing
                   if not found(p, search, hv_strings(global_words=True))]
    t.check(not missing, "patterns that match nothing the hypervisor prints: "
            + "; ".join(f"{where}: /{p}/" for where, p, _ in missing))
    t.note(f"{len(lines) + len(reasons)} patterns, each matches a string of hv/")
