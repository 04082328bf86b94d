#!/usr/bin/env python3
"""vmigen.py -- generate every copy of the VMI ABI from vmi-13.0.def.

One definition, several renderings, so the numbers cannot drift apart:

  --hv-header FILE      C/asm header for hv/, vrom/ and tests (stdint types)
  --kernel-header FILE  the same ABI in kernel style for the guest patch series
  --rom-slots FILE      GNU as macro calls that build the ROM's slot table
  --check-seed PATCH    compare the call list and constants with the seed's
                        vmiCalls.h / paravirtualInterface.h (002-patch)

Python 3 standard library only (CI has python3 but no extra modules).
"""

import argparse
import re
import sys

KINDS = ("header", "reserved", "unsupported", "hc", "fast", "native", "noreturn",
         "fastnoreturn")
RETS = ("void", "u32", "u64")
REGS = ("eax", "edx", "ecx")  # regparm(3) order


class DefError(Exception):
    pass


class Call:
    def __init__(self, num, name, kind, proto, line):
        self.num, self.name, self.kind, self.proto, self.line = num, name, kind, proto, line
        m = re.fullmatch(r"(\w+)\s+(\w+)\((.*)\)", proto)
        if not m:
            raise DefError("line %d: cannot parse prototype %r" % (line, proto))
        self.ret, pname, args = m.group(1), m.group(2), m.group(3).strip()
        if pname != name:
            raise DefError("line %d: prototype names %s, call is %s" % (line, pname, name))
        if self.ret not in RETS:
            raise DefError("line %d: return type %r not one of %s" % (line, self.ret, RETS))
        self.args = [] if args in ("", "void") else [a.strip() for a in args.split(",")]
        self.words, self.stack_words = self._place_args(line)

    def _place_args(self, line):
        """Count argument words and how many of them gcc's regparm(3) puts on
        the stack: an argument that no longer fits in the remaining registers
        goes to the stack whole (gcc never splits a u64)."""
        regs_left, words, stack = 3, 0, 0
        for a in self.args:
            if "*" in a:
                n = 1
            elif a.split()[0] == "u64":
                n = 2
            elif a.split()[0] == "u32":
                n = 1
            else:
                raise DefError("line %d: argument %r: only u32, u64 and pointers" % (line, a))
            words += n
            if stack == 0 and n <= regs_left:
                regs_left -= n
            else:
                if n <= regs_left:
                    # gcc would put this one back into a register: we refuse
                    # to depend on that corner of the convention.
                    raise DefError("line %d: argument %r after a stack argument" % (line, a))
                stack += n
        return words, stack


class Field:
    def __init__(self, off, ctype, name, comment, private=False):
        self.off, self.ctype, self.name, self.comment = off, ctype, name, comment
        self.private = private
        m = re.fullmatch(r"(\w+)(?:\[(\d+)\])?", ctype)
        if not m:
            raise DefError("bad field type %r" % ctype)
        self.base, self.count = m.group(1), int(m.group(2) or 1)
        self.is_array = m.group(2) is not None


class Const(tuple):
    """(name, value, comment) plus whether it is private to the ROM and hv."""
    def __new__(cls, name, value, comment, private=False):
        self = tuple.__new__(cls, (name, value, comment))
        self.private = private
        return self


class Struct:
    def __init__(self, name, size, comment):
        self.name, self.size, self.comment, self.fields = name, size, comment, []
        self.private = False


BASE_SIZES = {"u8": 1, "i8": 1, "char": 1, "u16": 2, "u32": 4, "u64": 8}


def parse(path):
    api, consts, calls, structs, cur = None, [], [], [], None
    with open(path) as f:
        for ln, raw in enumerate(f, 1):
            # Only whole-line comments: '#' also appears in field comments (#PF).
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            tok = line.split()
            # "private const ..." / "private field ..." / "private struct ...": vmi-hv's own (ROM and
            # hypervisor), left out of the kernel header (see render_header).
            private = tok[0] == "private"
            if private:
                tok = tok[1:]
                if not tok or tok[0] not in ("const", "field", "struct"):
                    raise DefError("line %d: only const, field and struct lines can be private" % ln)
            kw = tok[0]
            try:
                if kw == "api":
                    api = (int(tok[1]), int(tok[2]))
                elif kw == "const":
                    int(tok[2], 0)  # must parse as a number; the spelling is kept
                    consts.append(Const(tok[1], tok[2], " ".join(tok[3:]), private))
                elif kw == "call":
                    if tok[3] not in KINDS:
                        raise DefError("line %d: kind %r not one of %s" % (ln, tok[3], KINDS))
                    calls.append(Call(int(tok[1]), tok[2], tok[3], " ".join(tok[4:]), ln))
                elif kw == "struct":
                    cur = Struct(tok[1], int(tok[2], 0), " ".join(tok[3:]))
                    cur.private = private
                    structs.append(cur)
                elif kw == "field":
                    if cur is None:
                        raise DefError("line %d: field outside struct" % ln)
                    cur.fields.append(Field(int(tok[1], 0), tok[2], tok[3], " ".join(tok[4:]),
                                            private))
                elif kw == "end":
                    cur = None
                else:
                    raise DefError("line %d: unknown keyword %r" % (ln, kw))
            except (IndexError, ValueError) as e:
                raise DefError("line %d: %s: %s" % (ln, raw.strip(), e))
    validate(api, consts, calls, structs)
    return api, consts, calls, structs


def validate(api, consts, calls, structs):
    if api is None:
        raise DefError("no 'api' line")
    for i, c in enumerate(calls):
        if c.num != i:
            raise DefError("line %d: %s is numbered %d but is entry %d of the list"
                           % (c.line, c.name, c.num, i))
        if c.kind in ("native", "noreturn", "fastnoreturn") and c.words > 3:
            # These stubs keep everything in registers.
            raise DefError("line %d: %s is %s but takes stack arguments"
                           % (c.line, c.name, c.kind))
        if c.kind in ("hc", "fast") and c.stack_words > 2:
            # The transport carries at most two stack words (ebx, esi);
            # a fast path's slow side is that same hypercall (vmi.S).
            raise DefError("line %d: %s needs %d stack words, transport carries 2"
                           % (c.line, c.name, c.stack_words))
    names = [n for n, _, _ in consts]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise DefError("duplicate constants: %s" % ", ".join(sorted(dup)))
    sizes = dict(BASE_SIZES)
    for s in structs:
        off = 0
        for f in s.fields:
            if f.base not in sizes:
                raise DefError("%s.%s: unknown type %s" % (s.name, f.name, f.base))
            if f.off != off:
                raise DefError("%s.%s at 0x%x, previous field ends at 0x%x"
                               % (s.name, f.name, f.off, off))
            off += sizes[f.base] * f.count
        if off != s.size:
            raise DefError("%s: fields end at 0x%x, size is 0x%x" % (s.name, off, s.size))
        for i, f in enumerate(s.fields):
            # The kernel header shows a run of private fields as part of the
            # public byte array that follows it, so the guest's view of the
            # layout does not change when the ROM and hv claim reserved room.
            if f.private:
                nxt = next((g for g in s.fields[i + 1:] if not g.private), None)
                if nxt is None or nxt.base not in ("u8", "char") or not nxt.is_array:
                    raise DefError("%s.%s is private but no public byte array follows it"
                                   % (s.name, f.name))
        sizes[s.name] = s.size


# --------------------------------------------------------------------------
# Rendering.  The two headers differ only in type names, guards and style.

HV_TYPES = {"u8": "uint8_t", "i8": "int8_t", "char": "char", "u16": "uint16_t",
            "u32": "uint32_t", "u64": "uint64_t"}
K_TYPES = {"u8": "u8", "i8": "s8", "char": "char", "u16": "u16", "u32": "u32", "u64": "u64"}


def banner(src):
    return ("/*\n * Generated by vrom/abi/vmigen.py from vrom/abi/%s.\n"
            " * Do not edit: change the definition and regenerate.\n */\n" % src)


def kernel_view(s):
    """The fields as the kernel header shows them: each run of private
    fields folded into the public byte array after it."""
    out, run = [], []
    for f in s.fields:
        if f.private:
            run.append(f)
            continue
        if run:
            size = (f.off + f.count) - run[0].off  # byte array: count = bytes
            f = Field(run[0].off, "%s[%d]" % (f.base, size), f.name, f.comment)
            run = []
        out.append(f)
    return out


def render_header(api, consts, calls, structs, src, kernel):
    types = K_TYPES if kernel else HV_TYPES
    guard = "_ASM_X86_VMI_ABI_H" if kernel else "VMI_ABI_H"
    notasm = "__ASSEMBLY__" if kernel else "__ASSEMBLER__"
    o = []
    if kernel:
        o.append("/* SPDX-License-Identifier: GPL-2.0 */\n")
    o.append(banner(src))
    o.append("#ifndef %s\n#define %s\n\n" % (guard, guard))
    o.append("/* VMI API %d.%d as implemented by vmi-hv (docs/VROM.md). */\n\n" % api)
    for k in consts:
        n, v, c = k
        if kernel and k.private:
            continue
        o.append("#define %-28s %s%s\n" % (n, v, ("\t/* %s */" % c) if c else ""))
    o.append("\n/* Call numbers: call N is the 32-byte slot at ROM offset N * 32. */\n")
    for c in calls:
        o.append("#define VMI_CALL_%-24s %d\t/* %s */\n" % (c.name, c.num, c.proto))
    o.append("#define NUM_VMI_CALLS %d\n\n" % len(calls))
    for i, k in enumerate(KINDS):
        o.append("#define VMI_KIND_%s %d\n" % (k.upper(), i))
    for i, r in enumerate(RETS):
        o.append("#define VMI_RET_%s %d\n" % (r.upper(), i))
    # The X-macro list is for the hypervisor, the ROM and the tests; the
    # kernel does not use it, and checkpatch rejects a list macro (it cannot
    # be parenthesised), so the kernel header leaves it out.
    if not kernel:
        o.append("\n/*\n * V(num, name, kind, ret, words, stack_words) for every call:\n"
                 " * words = 32-bit argument words, stack_words = those past eax/edx/ecx.\n */\n")
        o.append("#define VMI_CALL_LIST(V) \\\n")
        for c in calls:
            o.append("\tV(%d, %s, %s, %s, %d, %d) \\\n"
                     % (c.num, c.name, c.kind.upper(), c.ret.upper(), c.words, c.stack_words))
    o.append("\n")
    # A private struct (vmi-hv's alone for now) is left out of the kernel header.
    structs = [s for s in structs if not (kernel and s.private)]
    fields = dict((s.name, kernel_view(s) if kernel else s.fields) for s in structs)
    for s in structs:
        o.append("#define VMI_SIZEOF_%s 0x%x\n" % (s.name, s.size))
        for f in fields[s.name]:
            o.append("#define VMI_OFF_%s_%s 0x%x\n" % (s.name, f.name, f.off))
    o.append("\n#ifndef %s\n\n" % notasm)
    if kernel:
        o.append("#include <linux/types.h>\n\n")
    else:
        o.append("#include <stdint.h>\n\n")
    for s in structs:
        o.append("/* %s */\n" % s.comment if s.comment else "")
        o.append("typedef struct %s {\n" % s.name)
        for f in fields[s.name]:
            t = types.get(f.base, f.base)
            dim = "[%d]" % f.count if f.is_array else ""
            cm = "\t/* 0x%02x %s */" % (f.off, f.comment) if f.comment else "\t/* 0x%02x */" % f.off
            # The ABI is i386's, where a u64 member is 4-aligned; the
            # attribute keeps that layout on the 64-bit host (unit tests).
            al = " __attribute__((packed, aligned(4)))" if f.base == "u64" else ""
            o.append("\t%s %s%s%s;%s\n" % (t, f.name, dim, al, cm))
        o.append("} %s;\n\n" % s.name)
        o.append("_Static_assert(sizeof(%s) == 0x%x, \"%s size\");\n" % (s.name, s.size, s.name))
        for f in fields[s.name]:
            o.append("_Static_assert(__builtin_offsetof(%s, %s) == 0x%x, \"%s.%s offset\");\n"
                     % (s.name, f.name, f.off, s.name, f.name))
        o.append("\n")
    o.append("/* Name of call @n for diagnostics, NULL when out of range. */\n")
    o.append("static inline const char *vmi_call_name(unsigned int n)\n{\n\tswitch (n) {\n")
    for c in calls:
        o.append("\tcase %d: return \"%s\";\n" % (c.num, c.name))
    o.append("\tdefault: return (const char *)0;\n\t}\n}\n\n")
    if not kernel:
        o.append("/* Kind (VMI_KIND_*) of call @n, -1 when out of range. */\n")
        o.append("static inline int vmi_call_kind(unsigned int n)\n{\n\tswitch (n) {\n")
        for c in calls:
            o.append("\tcase %d: return VMI_KIND_%s;\n" % (c.num, c.kind.upper()))
        o.append("\tdefault: return -1;\n\t}\n}\n\n")
    o.append("#endif /* %s */\n\n#endif /* %s */\n" % (notasm, guard))
    return "".join(o)


def render_slots(calls, src):
    o = [banner(src)]
    o.append("/* One macro call per slot; the macros live in vrom/vmi.S. */\n")
    for c in calls:
        if c.kind == "header":
            o.append("/* slot %d (%s) is the VROMHeader itself */\n" % (c.num, c.name))
        elif c.kind in ("reserved", "unsupported"):
            o.append("VSLOT_UNSUPPORTED %d\t/* %s */\n" % (c.num, c.name))
        elif c.kind == "hc":
            o.append("VSLOT_HC %d, %d\t/* %s */\n" % (c.num, c.stack_words, c.name))
        elif c.kind == "native":
            o.append("VSLOT_HC %d, 0\t/* %s, native registers */\n" % (c.num, c.name))
        elif c.kind in ("fast", "fastnoreturn"):
            o.append("VSLOT_FAST %d, %s\n" % (c.num, c.name))
        elif c.kind == "noreturn":
            o.append("VSLOT_NORETURN %d\t/* %s */\n" % (c.num, c.name))
    o.append("VSLOT_END %d\n" % len(calls))
    return "".join(o)


# --------------------------------------------------------------------------
# Seed comparison: the definition must agree with VMware's 002-patch.

def check_seed(path, consts, calls):
    text = open(path).read()
    seed_calls = re.findall(r"VDEF\((\w+)\)", text.split("#define VMI_CALLS", 1)[1])
    errors = []
    mine = [c.name for c in calls]
    if seed_calls != mine:
        for i in range(max(len(seed_calls), len(mine))):
            a = seed_calls[i] if i < len(seed_calls) else "<none>"
            b = mine[i] if i < len(mine) else "<none>"
            if a != b:
                errors.append("call %d: seed has %s, definition has %s" % (i, a, b))
    mc = dict((n, int(v, 0)) for n, v, _ in consts)
    seen = 0
    for n, v in re.findall(r"^\+#define\s+((?:VMI|MIN_VMI|VROM)_\w+)\s+(0x[0-9a-fA-F]+|\d+)",
                           text, re.M):
        seen += 1
        if n not in mc:
            errors.append("seed constant %s missing from the definition" % n)
        elif mc[n] != int(v, 0):
            errors.append("%s: seed 0x%x, definition 0x%x" % (n, int(v, 0), mc[n]))
    if seen < 20:
        errors.append("only %d constants found in %s: is it the 002 seed?" % (seen, path))
    return errors, len(seed_calls), seen


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("definition")
    ap.add_argument("--hv-header")
    ap.add_argument("--kernel-header")
    ap.add_argument("--rom-slots")
    ap.add_argument("--check-seed")
    a = ap.parse_args()
    src = a.definition.rsplit("/", 1)[-1]
    try:
        api, consts, calls, structs = parse(a.definition)
    except (DefError, OSError) as e:
        sys.exit("vmigen: %s: %s" % (a.definition, e))
    if a.hv_header:
        write(a.hv_header, render_header(api, consts, calls, structs, src, False))
    if a.kernel_header:
        write(a.kernel_header, render_header(api, consts, calls, structs, src, True))
    if a.rom_slots:
        write(a.rom_slots, render_slots(calls, src))
    if a.check_seed:
        errors, ncalls, nconsts = check_seed(a.check_seed, consts, calls)
        for e in errors:
            print("vmigen: seed mismatch: %s" % e, file=sys.stderr)
        if errors:
            sys.exit(1)
        print("vmigen: definition agrees with %s (%d calls, %d constants)"
              % (a.check_seed, ncalls, nconsts))


if __name__ == "__main__":
    main()
