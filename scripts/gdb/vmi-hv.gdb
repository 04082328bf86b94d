# vmi-hv.gdb -- gdb on QEMU running vmi-hv and its guest (make debug).
#
#   gdb -x scripts/gdb/vmi-hv.gdb -ex 'target remote :1234'
#
# Loads the hypervisor's symbols (build/hv/vmi-hv.elf) and the guest
# kernel's (build/guest/vmlinux, with debug info), then the helpers in
# vmi_hv.py: vmihv-where, vmihv-break-call NAME, vmihv-break-stop,
# vmihv-break-guest SYMBOL, vmihv-regs, vmihv-stats, vmihv-walk ADDR.
# Paths are relative to the checkout: start gdb there.
set pagination off
set confirm off
set architecture i386
file build/hv/vmi-hv.elf
add-symbol-file build/guest/vmlinux
source scripts/gdb/vmi_hv.py
