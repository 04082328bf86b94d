#!/usr/bin/env python3
"""Check that an image is what GRUB and QEMU's multiboot loader accept: a
32-bit i386 ELF whose multiboot v1 header (magic, flags, checksum summing to
zero) lies 4-byte aligned in the first 8 KiB of the file."""
import struct
import sys

path = sys.argv[1]
data = open(path, "rb").read()
if data[:4] != b"\x7fELF" or data[4] != 1 or struct.unpack_from("<H", data, 18)[0] != 3:
    sys.exit(f"{path}: not a 32-bit i386 ELF")
for off in range(0, min(len(data), 8192) - 12, 4):
    magic, flags, csum = struct.unpack_from("<III", data, off)
    if magic == 0x1BADB002 and (magic + flags + csum) & 0xFFFFFFFF == 0:
        break
else:
    sys.exit(f"{path}: no multiboot header in the first 8 KiB")
