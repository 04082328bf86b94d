"""Guest patch series: the VMI probe of the patched bzImage, booted natively
in QEMU (no hypervisor).  Without a ROM, with a ROM of the wrong version and
with a ROM whose Init fails, the kernel reports it and runs natively; when a
hypervisor is required (vmi_require_hypervisor, the boot-time equivalent of
CONFIG_VMI_REQUIRE_HYPERVISOR) it panics with the seed's message.

The bad ROMs are variants of the real build/vrom/vmi.rom, re-sealed so that
their checksum is valid: SeaBIOS only copies option ROMs with valid headers
into 0xC0000-0xEFFFF, and the kernel checks the checksum too.
"""

import re
import subprocess

from vmitest import paths, test
from hvguest import MARKER, PROMPT, SERIAL_CMDLINE, run_in_shell

CMDLINE = SERIAL_CMDLINE

VROM_HEADER_LENGTH = 0x02      # VROMHeader.romLength, 512-byte units
VROM_HEADER_API_MAJOR = 0x0d   # VROMHeader.APIVersionMajor
VROM_HEADER_RESERVED2 = 0x10   # VROMHeader.reserved2: bytes reserved at the top
VROM_SLOT_LEN = 32
VMI_CALL_INIT = 4


def rom_variant(t, name, edit):
    """A copy of the real VMI ROM changed by edit(bytearray), re-sealed."""
    t.require(paths.VROM)
    with open(paths.VROM, "rb") as f:
        rom = bytearray(f.read())
    edit(rom)
    rom[-1] = (rom[-1] - sum(rom)) & 0xff
    t.check(sum(rom) & 0xff == 0, "re-sealed ROM checksum")
    return t.tmpfile(name, bytes(rom))


def boot(t, *extra, cmdline=""):
    t.require(paths.BZIMAGE, paths.INITRD)
    return t.qemu("-m", "128", "-kernel", paths.BZIMAGE, "-initrd", paths.INITRD,
                  "-append", f"{CMDLINE} {cmdline}".strip(), *extra)


def expect_native(t, q):
    m = q.expect(MARKER, timeout=120)
    t.check(m.group(3) == "native", f"guest reports mode {m.group(3)}")


@test("guest-native-fallback")
def guest_native_fallback(t):
    """No ROM: the probe says so, and the kernel boots natively."""
    q = boot(t, cmdline="vmitest=sanity")
    q.expect(r"VMI ROM not found - falling back to native mode", timeout=60)
    expect_native(t, q)
    q.expect(r"SANITY result=PASS", timeout=120)


@test("guest-rom-version-mismatch")
def guest_rom_version_mismatch(t):
    """A VMI ROM of API 12.0: detected, refused, native boot."""
    def edit(rom):
        rom[VROM_HEADER_API_MAJOR] = 12
    rom = rom_variant(t, "vmi-v12.rom", edit)
    q = boot(t, "-option-rom", rom)
    q.expect(r"Detected VMI ROM version 12\.0", timeout=60)
    q.expect(r"VMI ROM version mismatch \(kernel requires version >= 13\.0\)"
             r"\s+- falling back to native mode", timeout=30)
    expect_native(t, q)


@test("guest-rom-init-fails")
def guest_rom_init_fails(t):
    """A VMI 13.0 ROM whose Init returns 1: reported, native boot."""
    def edit(rom):
        slot = VMI_CALL_INIT * VROM_SLOT_LEN
        code = bytes([0xb8, 0x01, 0x00, 0x00, 0x00,   # mov $1, %eax
                      0xc3])                          # ret
        rom[slot:slot + VROM_SLOT_LEN] = code + b"\xcc" * (VROM_SLOT_LEN - len(code))
    rom = rom_variant(t, "vmi-initfail.rom", edit)
    q = boot(t, "-option-rom", rom)
    q.expect(r"Detected VMI ROM version 13\.0", timeout=60)
    q.expect(r"VMI ROM failed to initialize", timeout=30)
    expect_native(t, q)


def bad_reserve(t, name, size):
    """A VMI 13.0 ROM publishing a reserved-top size the kernel must refuse
    before Init (whose real slot would hypercall into nothing here) and
    before clearing any page directory entry: reported, native boot.  The
    series before the native fallbacks (docs/GUEST.md) cleared PDEs from -size up, i.e. with
    0 every one of them, the kernel's own mappings included."""
    def edit(rom):
        rom[VROM_HEADER_RESERVED2:VROM_HEADER_RESERVED2 + 4] = size.to_bytes(4, "little")
    rom = rom_variant(t, name, edit)
    q = boot(t, "-option-rom", rom)
    q.expect(r"Detected VMI ROM version 13\.0", timeout=60)
    q.expect(rf"VMI ROM reserved top size 0x{size:x} invalid \([^)]*\)"
             r" - falling back to native mode", timeout=30)
    expect_native(t, q)


@test("guest-rom-reserve-zero")
def guest_rom_reserve_zero(t):
    """VROMHeader.reserved2 = 0: refused, native."""
    bad_reserve(t, "vmi-reserve0.rom", 0)


@test("guest-rom-reserve-unaligned")
def guest_rom_reserve_unaligned(t):
    """VROMHeader.reserved2 = 64 MiB + 4 KiB (not whole 4 MiB PDEs): refused,
    native."""
    bad_reserve(t, "vmi-reserve-unaligned.rom", 0x04001000)


@test("guest-rom-reserve-too-big")
def guest_rom_reserve_too_big(t):
    """VROMHeader.reserved2 = 1 GiB (all of kernel space): refused, native."""
    bad_reserve(t, "vmi-reserve-1g.rom", 0x40000000)


@test("guest-require-hypervisor-panics")
def guest_require_hypervisor_panics(t):
    """vmi_require_hypervisor (same flag as CONFIG_VMI_REQUIRE_HYPERVISOR)
    turns the missing ROM into the seed's panic."""
    q = boot(t, cmdline="vmi_require_hypervisor")
    q.expect(r"VMI ROM not found", timeout=60)
    q.expect(r"Kernel panic - not syncing: No hypervisor found, aborting!",
             timeout=60, fatal=[])


# A "native" VMI ROM: the slots of the real ROM replaced by the native
# instructions, run at ring 0 in plain QEMU.  It exercises the guest's
# paravirtual paths (the probe, Init, pv_ops switched to the ROM, the
# callee-save thunks, the IRET jump, the patched call sites, the MMU
# notifications, port I/O, /proc/vmi/info) without the hypervisor.  Its
# GetCycleFrequency returns 0 (native timers) unless it is built with TIMER:
# then the VMI time device runs on a nominal 1 GHz TSC and the PIT as alarm.
NATIVE_ROM_ASM = r"""
/* A "native" VMI ROM: every slot runs the native instruction. */
	.code32
	.text
#define SLOT(n)	.org (n) * 32
SLOT(4)		/* Init */
	xor %eax, %eax
	ret
SLOT(5)		/* CPUID */
	cpuid
	ret
SLOT(6)		/* WRMSR(msr, lo, hi) */
	xchg %eax, %ecx
	xchg %eax, %edx
	wrmsr
	xor %eax, %eax
	ret
SLOT(7)		/* RDMSR(msr) */
	mov %eax, %ecx
	rdmsr
	ret
SLOT(8)		/* SetGDT */
	lgdt (%eax)
	ret
SLOT(9)		/* SetLDT */
	lldt %ax
	ret
SLOT(10)	/* SetIDT */
	lidt (%eax)
	ret
SLOT(11)	/* SetTR */
	ltr %ax
	ret
SLOT(12)	/* GetGDT */
	sgdt (%eax)
	ret
SLOT(13)	/* GetLDT */
	xor %eax, %eax
	sldt %ax
	ret
SLOT(14)	/* GetIDT */
	sidt (%eax)
	ret
SLOT(15)	/* GetTR */
	xor %eax, %eax
	str %ax
	ret
SLOT(16)	/* WriteGDTEntry(table, entry, lo, hi) */
	mov %ecx, (%eax,%edx,8)
	mov 4(%esp), %ecx
	mov %ecx, 4(%eax,%edx,8)
	ret
SLOT(17)	/* WriteLDTEntry */
	mov %ecx, (%eax,%edx,8)
	mov 4(%esp), %ecx
	mov %ecx, 4(%eax,%edx,8)
	ret
SLOT(18)	/* WriteIDTEntry */
	mov %ecx, (%eax,%edx,8)
	mov 4(%esp), %ecx
	mov %ecx, 4(%eax,%edx,8)
	ret
SLOT(19)	/* UpdateKernelStack: the TSS is the guest's own */
	ret
SLOT(20)
	mov %eax, %cr0
	ret
SLOT(21)
	mov %eax, %cr2
	ret
SLOT(22)
	mov %eax, %cr3
	ret
SLOT(23)
	mov %eax, %cr4
	ret
SLOT(24)
	mov %cr0, %eax
	ret
SLOT(25)
	mov %cr2, %eax
	ret
SLOT(26)
	mov %cr3, %eax
	ret
SLOT(27)
	mov %cr4, %eax
	ret
SLOT(28)
	invd
	ret
SLOT(29)
	wbinvd
	ret
SLOT(30)	/* SetDR: not used */
	ret
SLOT(31)	/* GetDR */
	xor %eax, %eax
	ret
SLOT(32)	/* RDPMC */
	mov %eax, %ecx
	rdpmc
	ret
SLOT(33)
	rdtsc
	ret
SLOT(34)
	clts
	ret
SLOT(35)	/* EnableInterrupts */
	sti
	ret
SLOT(36)	/* DisableInterrupts */
	cli
	ret
SLOT(37)	/* GetInterruptMask */
	pushf
	pop %eax
	ret
SLOT(38)	/* SetInterruptMask */
	push %eax
	popf
	ret
SLOT(39)	/* IRET */
	iret
SLOT(40)	/* SYSEXIT */
	sti
	sysexit
SLOT(41)
	pause
	ret
SLOT(42)	/* Halt: enable interrupts and halt in one step (docs/VROM.md) */
	sti
	hlt
	ret
SLOT(43)
	ud2
SLOT(44)
	ud2
SLOT(45)	/* SetPxE(ptep, pte) */
	mov %edx, (%eax)
	ret
SLOT(46)	/* GetPxE */
	mov (%eax), %eax
	ret
SLOT(47)	/* SwapPxE */
	xchg %edx, (%eax)
	mov %edx, %eax
	ret
SLOT(51)	/* TestAndSetPxEBit */
	lock bts %edx, (%eax)
	sbb %eax, %eax
	ret
SLOT(52)	/* TestAndClearPxEBit */
	lock btr %edx, (%eax)
	sbb %eax, %eax
	ret
SLOT(53)	/* AllocatePage */
	ret
SLOT(54)	/* ReleasePage */
	ret
SLOT(55)	/* InvalPage */
	invlpg (%eax)
	ret
SLOT(56)	/* FlushTLB */
	mov %cr4, %ecx
	mov %ecx, %edx
	and $~0x80, %edx
	mov %edx, %cr4
	mov %ecx, %cr4
	mov %cr3, %eax
	mov %eax, %cr3
	ret
SLOT(57)	/* FlushDeferredCalls */
	xor %eax, %eax
	ret
SLOT(58)	/* SetLinearMapping */
	ret
SLOT(59)	/* IN(port) */
	mov %eax, %edx
	inl %dx, %eax
	ret
SLOT(60)	/* INB(port) */
	mov %eax, %edx
	xor %eax, %eax
	inb %dx, %al
	ret
SLOT(61)	/* INW(port) */
	mov %eax, %edx
	xor %eax, %eax
	inw %dx, %ax
	ret
SLOT(62)	/* INS(buf, port, count) */
	push %edi
	mov %eax, %edi
	cld
	rep insl
	pop %edi
	xor %eax, %eax
	ret
SLOT(63)	/* INSB(buf, port, count) */
	push %edi
	mov %eax, %edi
	cld
	rep insb
	pop %edi
	xor %eax, %eax
	ret
SLOT(64)	/* INSW(buf, port, count) */
	push %edi
	mov %eax, %edi
	cld
	rep insw
	pop %edi
	xor %eax, %eax
	ret
SLOT(65)	/* OUT(value, port) */
	outl %eax, %dx
	ret
SLOT(66)	/* OUTB(value, port) */
	outb %al, %dx
	ret
SLOT(67)	/* OUTW(value, port) */
	outw %ax, %dx
	ret
SLOT(68)	/* OUTS(buf, port, count) */
	push %esi
	mov %eax, %esi
	cld
	rep outsl
	pop %esi
	xor %eax, %eax
	ret
SLOT(69)	/* OUTSB(buf, port, count) */
	push %esi
	mov %eax, %esi
	cld
	rep outsb
	pop %esi
	xor %eax, %eax
	ret
SLOT(70)	/* OUTSW(buf, port, count) */
	push %esi
	mov %eax, %esi
	cld
	rep outsw
	pop %esi
	xor %eax, %eax
	ret
SLOT(78)	/* IODelay */
	outb %al, $0x80
	ret
SLOT(79)	/* GetCycleFrequency: 0 keeps the native timers */
#ifdef TIMER
	mov $1000000000, %eax	/* nominal: the TSC is not calibrated */
#else
	xor %eax, %eax
#endif
	xor %edx, %edx
	ret
SLOT(80)	/* GetCycleCounter(which): TSC, STOLEN = 0 */
	cmp $2, %eax
	je 1f
	rdtsc
	ret
1:	xor %eax, %eax
	xor %edx, %edx
	ret
SLOT(81)	/* SetAlarm(flags, expiry, period): the PIT on IRQ0 */
	jmp set_alarm
SLOT(82)	/* CancelAlarm: one last (spurious) event at most */
	mov $0x30, %al
	outb %al, $0x43
	mov $0xff, %al
	outb %al, $0x40
	outb %al, $0x40
	xor %eax, %eax
	ret
SLOT(83)	/* GetWallclockTime */
	xor %eax, %eax
	xor %edx, %edx
	ret
SLOT(85)

	.org 0xe00
/* PIT ticks ~ cycles >> 10 at the nominal 1 GHz; mode 0 one-shot or
 * mode 2 periodic, 1..0xffff ticks. */
set_alarm:
	push %ebx
	push %esi
	push %edi
	mov %eax, %edi
	test $0x100, %edi
	jz 1f
	mov 16(%esp), %ebx	/* periodic: the period */
	mov 20(%esp), %esi
	jmp 2f
1:	mov %edx, %ebx		/* one-shot: expiry - now */
	mov %ecx, %esi
	rdtsc
	sub %eax, %ebx
	sbb %edx, %esi
	js 4f
2:	shrd $10, %esi, %ebx
	shr $10, %esi
	jnz 3f
	cmp $0xffff, %ebx
	ja 3f
	test %ebx, %ebx
	jz 4f
	jmp 5f
3:	mov $0xffff, %ebx
	jmp 5f
4:	mov $1, %ebx
5:	mov $0x30, %al
	test $0x100, %edi
	jz 6f
	mov $0x34, %al
6:	outb %al, $0x43
	mov %bl, %al
	outb %al, $0x40
	mov %bh, %al
	outb %al, $0x40
	pop %edi
	pop %esi
	pop %ebx
	ret
"""


NATIVE_ROM_BODY = 0xe00
NATIVE_ROM_SIZE = 0x1000


def native_vmi_rom(t, timer=False):
    """The native ROM; with timer=True its time calls are live (a nominal
    1 GHz TSC counter and the PIT on IRQ0 as the alarm), otherwise
    GetCycleFrequency returns 0 and the guest keeps its native timers."""
    src = t.tmpfile("native-rom.S", NATIVE_ROM_ASM.encode())
    obj = src[:-2] + ".o"
    binf = src[:-2] + ".bin"
    defs = ["-DTIMER"] if timer else []
    for cmd in (["gcc", "-m32", *defs, "-c", src, "-o", obj],
                ["objcopy", "-O", "binary", "-j", ".text", obj, binf]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        t.check(r.returncode == 0, f"{' '.join(cmd)}: {r.stderr.strip()}")
    with open(binf, "rb") as f:
        native = f.read()

    def edit(rom):
        for n in range(VMI_CALL_INIT, 85):
            slot = native[n * VROM_SLOT_LEN:(n + 1) * VROM_SLOT_LEN]
            if not any(slot):          # not provided: stop on ud2
                slot = b"\x0f\x0b" + b"\xcc" * (VROM_SLOT_LEN - 2)
            rom[n * VROM_SLOT_LEN:(n + 1) * VROM_SLOT_LEN] = slot
        body = native[NATIVE_ROM_BODY:]     # code the slots jump to
        # At least NATIVE_ROM_SIZE; the real ROM may be longer (its own
        # code past the body, unused once every slot is replaced).
        size = max(NATIVE_ROM_SIZE, (len(rom) + 511) // 512 * 512)
        rom.extend(bytes(size - len(rom)))
        rom[NATIVE_ROM_BODY:NATIVE_ROM_BODY + len(body)] = body
        rom[VROM_HEADER_LENGTH] = size // 512
    return rom_variant(t, "vmi-native-timer.rom" if timer else "vmi-native.rom", edit)


@test("guest-vmi-native-rom-sanity")
def guest_vmi_native_rom_sanity(t):
    """Paravirtual mode through a native ROM: the sanity program passes."""
    rom = native_vmi_rom(t)
    q = boot(t, "-option-rom", rom, cmdline="vmitest=sanity")
    q.expect(r"Detected VMI ROM version 13\.0", timeout=60)
    q.expect(r"VMI: paravirtual mode", timeout=30)
    m = q.expect(MARKER, timeout=120)
    t.check(m.group(3) == "vmi", f"guest reports mode {m.group(3)}")
    q.expect(r"SANITY result=PASS", timeout=120)
    q.expect(r"VMITEST-DONE name=sanity rc=0", timeout=30)


@test("guest-vmi-native-rom-proc-info")
def guest_vmi_native_rom_proc_info(t):
    """/proc/vmi/info: version, patched sites, non-zero MMU call counts
    (counted with vmi_count_calls)."""
    rom = native_vmi_rom(t)
    q = boot(t, "-option-rom", rom, cmdline="vmi_count_calls")
    q.expect(r"vmi-guest# ", timeout=120)
    q.send("cat /proc/vmi/info; echo INFO-DONE\n")
    q.expect(r"VMI ROM version: 13\.0", timeout=30)
    q.expect(r"Mode: paravirtual", timeout=30)
    m = q.expect(r"Patched call sites: (\d+)\n", timeout=30)
    t.check(int(m.group(1)) > 100, f"only {m.group(1)} patched sites")
    m = q.expect(r"([\s\S]*)INFO-DONE", timeout=30)
    counts = {name: int(n) for name, n in
              re.findall(r"^\s+(\w+)\s+(\d+)$", m.group(1), re.M)}
    for call in ("SetPxE", "SwapPxE", "AllocatePage", "ReleasePage",
                 "InvalPage", "FlushDeferredCalls", "DisableInterrupts",
                 "EnableInterrupts", "GetInterruptMask", "SetCR3",
                 "INB", "OUTB"):
        t.check(counts.get(call, 0) > 0, f"no {call} calls counted: {counts}")
    t.note("VMI calls: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))


@test("guest-vmi-native-rom-timer")
def guest_vmi_native_rom_timer(t):
    """The VMI time device on the native ROM: clocksource and clockevent
    vmi-timer, alarms on IRQ0, tickless idle counted in /proc/vmi/info
    (calls counted with vmi_count_calls)."""
    rom = native_vmi_rom(t, timer=True)
    q = boot(t, "-option-rom", rom, cmdline="vmi_count_calls")
    q.expect(r"VMI timer: 1000000000 Hz cycle counter, alarm \d+ Hz", timeout=60)
    q.expect(r"Switched to clocksource vmi-timer", timeout=60)
    q.expect(r"vmi-guest# ", timeout=120)
    q.send("sleep 1; grep -E 'SetAlarm|Timer IRQs|Idle HZ' /proc/vmi/info; echo TIMER-DONE\n")
    # "sleep 1" returning at all needs the alarm; tickless idle makes
    # few alarms, so only require some
    m = q.expect(r"SetAlarm\s+(\d+)", timeout=30)
    t.check(int(m.group(1)) > 0, "no SetAlarm calls")
    m = q.expect(r"Timer IRQs: (\d+)", timeout=30)
    t.check(int(m.group(1)) > 0, "no timer IRQs")
    m = q.expect(r"Idle HZ: (\d+) no-HZ idle periods, (\d+) jiffies skipped", timeout=30)
    t.check(int(m.group(1)) > 0, "no tickless idle period")
    t.note(m.group(0))
    q.expect(r"TIMER-DONE", timeout=30)


# A CPU model with SYSENTER (sep), SMAP and SMEP under TCG, for both boots.
FLAGS_CPU = "max"
HIDDEN_FLAGS = ("sep", "smap", "smep")


def cpu_flags(t, q):
    """At the shell: which of HIDDEN_FLAGS /proc/cpuinfo shows."""
    q.expect(PROMPT, timeout=120)
    out = run_in_shell(q, "for f in %s; do grep -q -w $f /proc/cpuinfo && echo F=$f; done" % " ".join(HIDDEN_FLAGS),
                       timeout=30)
    return set(re.findall(r"^F=(\w+)$", out, re.M))


@test("guest-vmi-native-rom-hides-sep-smap")
def guest_vmi_native_rom_hides_sep_smap(t):
    """Ring 1 cannot use SYSENTER, SMAP or SMEP: under VMI the kernel hides
    them even on a CPU that has them.  The same CPU model (QEMU -cpu max)
    booted natively first shows they are there to hide."""
    q = boot(t, "-cpu", FLAGS_CPU)
    m = q.expect(MARKER, timeout=120)
    t.check(m.group(3) == "native", f"guest without the ROM reports mode {m.group(3)}")
    native = cpu_flags(t, q)
    t.check({"sep", "smap"} <= native,
            f"natively -cpu {FLAGS_CPU} shows only {sorted(native)} of sep and smap: nothing to hide")

    rom = native_vmi_rom(t)
    q = boot(t, "-cpu", FLAGS_CPU, "-option-rom", rom)
    m = q.expect(MARKER, timeout=120)
    t.check(m.group(3) == "vmi", f"guest with the VMI ROM reports mode {m.group(3)}")
    vmi = cpu_flags(t, q)
    t.note(f"-cpu {FLAGS_CPU}: natively {sorted(native)}, under VMI {sorted(vmi) or 'none'}")
    t.check(not vmi, f"visible under VMI: {sorted(vmi)}")
