"""Hypervisor core (docs/HV.md, "Boot sequence"): multiboot boot from QEMU and from the ISO, the
banner, machine memory, time base, the parsed guest image and its memory map;
every kind of bad input ends in one "vmi-hv: error:" line and a clean stop;
exceptions in the hypervisor give a register dump and a distinct exit status.

Since the hypervisor runs the guest after loading it; these tests
pass after_load=stop to stop there (test_hv_guest.py runs guests).

Exit statuses (isa-debug-exit gives (code << 1) | 1; hv/include/exit_codes.h):
3 done, 5 bad input, 7 CPU exception, 9 double fault, 11 internal error.
"""

import os
import re
import struct

from vmitest import paths, test
from hvguest import DONE, DOUBLE_FAULT, EXCEPTION, boot_multiboot, expect_bad_input, hv_modules


def check_loaded_guest(t, q, banner=True, same_initrd=True):
    """What a successful load prints, checked against the real bzImage."""
    if banner:
        q.expect(r"vmi-hv \d+\.\d+: a VMI 13\.0 hypervisor", timeout=30)
    q.expect(r"machine memory map \(from the boot loader\):")
    q.expect(r"machine RAM \d+ KiB; \d+ KiB free")
    q.expect(r"switcher ffc00000-ffffffff .* guests get linear 00000000-fbffffff")
    m = q.expect(r"TSC frequency (\d+)\.(\d+) MHz")
    mhz = int(m.group(1))
    t.check(100 <= mhz <= 10000, f"implausible TSC frequency {m.group(0)}")
    q.expect(r"hypervisor timer: one-shot (local APIC timer at \d+ kHz|IRQ0 \(PIT mode 0\)), armed for the next event; a 10000 us shot took \d+ us by the TSC")
    with open(paths.BZIMAGE, "rb") as f:
        head = f.read(0x300)
    proto = struct.unpack_from("<H", head, 0x206)[0]
    m = q.expect(r"guest kernel .*: Linux boot protocol (\d+)\.(\d+), version \"([^\"]*)\"")
    t.check((int(m.group(1)), int(m.group(2))) == (proto >> 8, proto & 0xff),
            f"protocol {m.group(1)}.{m.group(2)}, file says {proto:#x}")
    t.check(m.group(3).startswith("6.1"), f"kernel version {m.group(3)!r}")
    size = os.path.getsize(paths.BZIMAGE)
    setup = ((head[0x1f1] or 4) + 1) * 512
    m = q.expect(r"protected-mode kernel (\d+) bytes at file offset 0x([0-9a-f]+)\n")
    t.check(int(m.group(1)) == size - setup and int(m.group(2), 16) == setup,
            f"pm kernel: {m.group(0)} (file {size} bytes, setup {setup})")
    q.expect(r"guest memory: \d+ MiB in \d+ machine extents?")
    # A build without the ROM boots guests natively (the loader only
    # warns): for these tests that is a broken build, not a skip.
    t.require(paths.VROM)
    q.expect(r"VMI ROM: API 13\.0, \d+ bytes, reserved top 64 MiB, placed at guest-physical 000c0000")
    q.expect(r"guest memory map \(e820 in the zero page\):\n"
             r"    00000000-0009ffff RAM\n"
             r"    000a0000-000bffff reserved\n"
             r"    000c0000-000fffff reserved\n"
             r"    00100000-[0-9a-f]{8} RAM\n")
    q.expect(r"00100000-[0-9a-f]{8} protected-mode kernel")
    # The ISO carries its own copy of the initrd, possibly an older build.
    size = os.path.getsize(paths.INITRD) if same_initrd else r"\d+"
    q.expect(r"[0-9a-f]{8}-[0-9a-f]{8} initrd \(%s bytes\)" % size)
    q.expect(r"guest entry: eip=00100000 esi=00010000")
    q.expect(r"guest loaded and checked")


@test("hv-boots-banner")
def hv_boots_banner(t):
    """QEMU -kernel: banner, memory, time base, guest image, guest e820."""
    t.require(paths.BZIMAGE, paths.INITRD)
    q = boot_multiboot(t, hv_modules(), append="after_load=stop", mem="256")
    check_loaded_guest(t, q)
    q.expect(r"vmi-hv: stopped \(exit code 1\)")
    status = q.wait_exit(timeout=30)
    t.check(status == DONE, f"exit status {status}")
    t.check("vmi-hv: error:" not in q.output, "an error line on a good boot")
    m = re.search(r"TSC frequency ([0-9.]+) MHz", q.output)
    t.note(f"TSC {m.group(1)} MHz, hypervisor start to guest loaded {q.elapsed():.2f}s")


@test("hv-guest-cmdline-and-size")
def hv_guest_cmdline_and_size(t):
    """guest_mem= is honoured; the module string becomes the guest command line."""
    t.require(paths.BZIMAGE, paths.INITRD)
    cmdline = "quiet console=ttyS0,115200 vmitest=x"
    q = boot_multiboot(t, hv_modules(cmdline), append="guest_mem=64M loglevel=debug after_load=stop")
    q.expect(r"guest memory: 64 MiB")
    q.expect(r"00100000-03ffffff RAM")
    q.expect(r"command line \(%d bytes\): %s\n" % (len(cmdline), cmdline))
    t.check(q.wait_exit(timeout=30) == DONE, "exit status")


@test("hv-iso-boot")
def hv_iso_boot(t):
    """GRUB from the ISO boots the hypervisor entry by default."""
    t.require(paths.ISO)
    q = t.qemu("-m", "256", "-cdrom", paths.ISO)
    q.expect(r"vmi-hv hypervisor", timeout=60)
    q.expect(r"vmi-hv \d+\.\d+: a VMI 13\.0 hypervisor", timeout=60)
    q.expect(r"loaded by GRUB")
    check_loaded_guest(t, q, banner=False, same_initrd=False)
    # Then it starts the guest (what follows is test_hv_guest.py's business).
    q.expect(r"vmi-hv: vcpu: guest entry eip=00100000", timeout=30)
    # GRUB 2 passes module arguments without the path: all of them arrive.
    t.check(re.search(r"command line \(\d+ bytes\): earlyprintk=serial,ttyS0,115200 "
                      r"console=tty0 console=ttyS0,115200\n", q.output),
            "guest command line from grub.cfg not passed intact")


@test("hv-serial-input-irq")
def hv_serial_input_irq(t):
    """COM1 input arrives by interrupt (IRQ4) while the hypervisor idles."""
    t.require(paths.BZIMAGE, paths.INITRD)
    q = boot_multiboot(t, hv_modules(), append="after_load=idle")
    q.expect(r"idle: type on the serial console", timeout=60)
    # The hypervisor's own count of IRQ4 interrupts (hv/arch/traps.c) must grow
    # with each byte: the bytes came by interrupt, not by polling.
    irqs = []
    for ch in "xq":
        q.send(ch)
        m = q.expect(r"serial input: 0x%02x '%s' \((\d+) bytes received, (\d+) IRQ4 interrupts, up \d+ ms\)\n"
                     % (ord(ch), ch), timeout=20)
        irqs.append(int(m.group(2)))
        t.check(int(m.group(1)) == len(irqs), f"bytes received: {m.group(0).strip()}")
    t.note(f"IRQ4 interrupts after each byte: {irqs}")
    t.check(0 < irqs[0] < irqs[1], f"IRQ4 interrupts {irqs}: the bytes did not each raise IRQ4")
    status = q.wait_exit(timeout=30)
    t.check(status == DONE, f"exit status {status}, expected {DONE}")


# ---- bad input ---------------------------------------------------------

@test("hv-error-no-module")
def hv_error_no_module(t):
    expect_bad_input(t, boot_multiboot(t), r"no guest kernel: the boot loader passed no modules")


@test("hv-error-elf-module")
def hv_error_elf_module(t):
    q = boot_multiboot(t, f"{paths.HV_ELF} console=ttyS0,{paths.HV_ELF}")
    expect_bad_input(t, q, r"guest kernel \(.*vmi-hv\.elf\): the module is an ELF file")


@test("hv-error-random-module")
def hv_error_random_module(t):
    junk = t.tmpfile("random.bin", os.urandom(64 * 1024))
    q = boot_multiboot(t, f"{junk},{junk}")
    expect_bad_input(t, q, r"guest kernel \(.*random\.bin\): not a bzImage: no boot-sector signature 0xAA55")


@test("hv-error-empty-module")
def hv_error_empty_module(t):
    empty = t.tmpfile("empty.bin", b"")
    q = boot_multiboot(t, f"{empty},{empty}")
    expect_bad_input(t, q, r"guest kernel \(.*empty\.bin\): the module is empty")


@test("hv-error-old-protocol")
def hv_error_old_protocol(t):
    t.require(paths.BZIMAGE, paths.INITRD)
    img = bytearray(open(paths.BZIMAGE, "rb").read())
    struct.pack_into("<H", img, 0x206, 0x0204)
    old = t.tmpfile("old-protocol.bzImage", bytes(img))
    q = boot_multiboot(t, hv_modules(kernel=old))
    expect_bad_input(t, q, r"guest kernel \(.*\): boot protocol 2\.04 is too old: vmi-hv needs 2\.06 or later")


@test("hv-error-no-initrd")
def hv_error_no_initrd(t):
    t.require(paths.BZIMAGE)
    q = boot_multiboot(t, hv_modules(initrd=False))
    expect_bad_input(t, q, r"no initrd: the boot loader passed only the kernel")


@test("hv-error-initrd-too-big")
def hv_error_initrd_too_big(t):
    t.require(paths.BZIMAGE)
    big = t.tmpfile("big-initrd.img", b"\0" * (40 << 20))
    q = boot_multiboot(t, hv_modules(initrd=big), append="guest_mem=32M", mem="256")
    expect_bad_input(t, q, r"the initrd \(40960 KiB\) is larger than guest memory \(32768 KiB\)")


@test("hv-error-guest-mem-too-big")
def hv_error_guest_mem_too_big(t):
    t.require(paths.BZIMAGE, paths.INITRD)
    q = boot_multiboot(t, hv_modules(), append="guest_mem=1G", mem="128")
    expect_bad_input(t, q, r"guest_mem=1024M is larger than the memory available: at most \d+M")


@test("hv-error-unknown-option")
def hv_error_unknown_option(t):
    q = boot_multiboot(t, hv_modules(), append="frobnicate=1")
    expect_bad_input(t, q, r"unknown hypervisor option 'frobnicate=1'")


@test("hv-error-malformed-option")
def hv_error_malformed_option(t):
    q = boot_multiboot(t, hv_modules(), append="guest_mem=12Q")
    expect_bad_input(t, q, r"malformed option 'guest_mem=12Q'")


# ---- exceptions in the hypervisor -----------------------------------------

@test("hv-exception-dump")
def hv_exception_dump(t):
    """A NULL write in the hypervisor: #PF, faulting address, registers, status 7."""
    q = boot_multiboot(t, append="selftest_fault=page")
    q.expect(r"CPU exception 14 \(#PF page fault\) in the hypervisor, error code 0x2", timeout=30)
    q.expect(r"faulting address 0x00000000, at eip 0x[0-9a-f]{8}")
    q.expect(r"page not present, write, supervisor mode")
    q.expect(r"eax=[0-9a-f]{8} ebx=[0-9a-f]{8} ecx=[0-9a-f]{8} edx=[0-9a-f]{8}")
    q.expect(r"cr0=[0-9a-f]{8} cr2=00000000 cr3=[0-9a-f]{8} cr4=[0-9a-f]{8}")
    status = q.wait_exit(timeout=30)
    t.check(status == EXCEPTION, f"exit status {status}, expected {EXCEPTION}")


@test("hv-exception-invalid-opcode")
def hv_exception_invalid_opcode(t):
    q = boot_multiboot(t, append="selftest_fault=invalid-opcode")
    q.expect(r"CPU exception 6 \(#UD invalid opcode\) in the hypervisor", timeout=30)
    q.expect(r"faulting instruction at eip 0x[0-9a-f]{8}")
    t.check(q.wait_exit(timeout=30) == EXCEPTION, "exit status")


@test("hv-double-fault")
def hv_double_fault(t):
    """A fault with an unusable stack: the #DF task reports it, no reset."""
    q = boot_multiboot(t, append="selftest_fault=double")
    q.expect(r"CPU exception 8 \(#DF double fault\) in the hypervisor", timeout=30)
    q.expect(r"stack at esp 0x00000800")
    status = q.wait_exit(timeout=30)
    t.check(status == DOUBLE_FAULT, f"exit status {status}, expected {DOUBLE_FAULT}")
