#!/usr/bin/env python3
"""mkbzimage.py FLAT_BINARY INIT_SIZE OUT: wrap 32-bit code linked at 1 MiB
into a minimal valid bzImage (Documentation/arch/x86/boot.rst): a boot
sector and one setup sector carrying the setup header, protocol 2.10,
LOADED_HIGH, code32_start = 1 MiB, not relocatable, so a boot loader (or
vmi-hv) copies the code to 1 MiB and enters it in 32-bit protected mode.
There is no real-mode code: booting it from a BIOS would do nothing."""
import struct
import sys

code = open(sys.argv[1], "rb").read()
init_size = (int(sys.argv[2], 0) + 0xfff) & ~0xfff
setup_sects = 1
img = bytearray(512 * (setup_sects + 1))
img[0x1f1] = setup_sects
struct.pack_into("<I", img, 0x1f4, (len(code) + 15) // 16)   # syssize
struct.pack_into("<H", img, 0x1fe, 0xAA55)                   # boot_flag
header_end = 0x268
img[0x200] = 0xEB                                            # jmp short
img[0x201] = header_end - 0x202
img[0x202:0x206] = b"HdrS"
struct.pack_into("<H", img, 0x206, 0x020a)                   # protocol 2.10
img[0x211] = 0x01                                            # LOADED_HIGH
struct.pack_into("<I", img, 0x214, 0x100000)                 # code32_start
struct.pack_into("<I", img, 0x22c, 0x37ffffff)               # initrd_addr_max
struct.pack_into("<I", img, 0x230, 0x1000)                   # kernel_alignment
img[0x234] = 0                                               # not relocatable
struct.pack_into("<I", img, 0x238, 255)                      # cmdline_size
struct.pack_into("<Q", img, 0x258, 0x100000)                 # pref_address
struct.pack_into("<I", img, 0x260, init_size)                # init_size
version = b"vmi-hv test guest\0"
struct.pack_into("<H", img, 0x20e, 0x300 - 0x200)            # kernel_version
img[0x300:0x300 + len(version)] = version
code += b"\0" * (-len(code) % 16)
open(sys.argv[3], "wb").write(bytes(img) + code)
