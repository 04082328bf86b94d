# vmi-hv: a tiny bare-metal hypervisor for VMI-paravirtualized 32-bit Linux guests.
#
#   make run     build everything and boot vmi-hv.iso in QEMU (serial on this terminal)
#   make test    build everything and run the test suite
#
# All build output goes to build/ and vmi-hv.iso; both are git-ignored.

# GNU make cannot name a file whose path holds a space, and the Linux kernel's
# build refuses a source directory with a space or a colon in its path.  Say
# so before anything is built, instead of failing somewhere deep inside.
ifneq ($(words $(CURDIR)),1)
$(error the checkout path "$(CURDIR)" contains a space; GNU make and the Linux kernel build \
	cannot work there: clone or move vmi-hv to a path without spaces)
endif
ifneq ($(findstring :,$(CURDIR)),)
$(error the checkout path "$(CURDIR)" contains a colon, which the Linux kernel build \
	refuses: clone or move vmi-hv to a path without colons)
endif

BUILD   := $(CURDIR)/build
INCLUDE := $(BUILD)/include
UNITDIR := $(BUILD)/tests/unit
GUEST   := $(BUILD)/guest
ISO     := $(CURDIR)/vmi-hv.iso
JOBS    ?= $(shell nproc)

BZIMAGE := $(GUEST)/bzImage
# The second configuration (make test-configs): the default fragment, then
# the differences, merged by scripts/build-guest.sh into its own tree.
GUEST_ALT   := $(BUILD)/guest-alt
BZIMAGE_ALT := $(GUEST_ALT)/bzImage
# The stock kernel of make compare: the tarball without the series, the
# default fragment less the series' own options (scripts/stock-fragment.sh).
GUEST_STOCK   := $(BUILD)/guest-stock
BZIMAGE_STOCK := $(GUEST_STOCK)/bzImage
FRAGMENTS     := guest/config/vmi-hv.config
FRAGMENTS_ALT := $(FRAGMENTS) guest/config/alt-preempt-hz1000.config
INITRD  := $(GUEST)/initrd.img
BENCH_INITRD := $(GUEST)/bench-initrd.img
STRESS_INITRD := $(GUEST)/stress-initrd.img
HV_ELF  := $(BUILD)/hv/vmi-hv.elf
VROM    := $(BUILD)/vrom/vmi.rom
EXEC32_PROBE := $(BUILD)/tests/exec32-probe

# Components with their own Makefile; each is invoked with B (its build dir),
# I (generated headers) and U (unit-test binaries).
SUBDIRS := $(wildcard vrom/Makefile hv/Makefile)
SUBARGS  = B=$(BUILD)/$(1) I=$(INCLUDE) U=$(UNITDIR)

GUEST_INPUTS  := guest/patches/series $(wildcard guest/patches/*.patch) \
		 $(FRAGMENTS) scripts/build-guest.sh
INITRD_INPUTS := guest/initramfs/init $(wildcard guest/programs/*.c guest/programs/*.h) \
		 hv/include/segments.h hv/include/layout.h \
		 scripts/build-initrd.sh
ISO_INPUTS    := iso/grub.cfg scripts/build-iso.sh
BENCH_INITRD_INPUTS := guest/initramfs/init $(wildcard guest/programs/bench/*) \
		 scripts/build-bench-initrd.sh scripts/deb-i386-programs.sh
STRESS_INITRD_INPUTS := $(INITRD) scripts/build-stress-initrd.sh scripts/deb-i386-programs.sh

# Serial console (and QEMU monitor, Ctrl-A C) on the terminal; a VGA window only
# when there is a display to put it on.  SMP=N CPUs (default 2), one host
# thread each (MTTCG); the hypervisor runs on all of them.
SMP ?= 2
QEMU_RUN := qemu-system-i386 -m 512 -smp $(SMP) -accel tcg,thread=multi -cdrom $(ISO) \
	    -serial mon:stdio -no-reboot $(if $(DISPLAY),,-display none)

.PHONY: all deps guest initrd bench-initrd stress-initrd iso hv vrom unit run debug debug-native test test-configs check-series bench compare stress fuzz clean distclean
all: iso

deps:
	@scripts/deps.sh

guest: deps $(BZIMAGE)
initrd: deps $(INITRD)

$(BZIMAGE): $(GUEST_INPUTS)
	@scripts/build-guest.sh $(GUEST) $(JOBS) $(FRAGMENTS)

$(BZIMAGE_ALT): $(GUEST_INPUTS) $(FRAGMENTS_ALT)
	@scripts/build-guest.sh $(GUEST_ALT) $(JOBS) $(FRAGMENTS_ALT)

$(BZIMAGE_STOCK): $(FRAGMENTS) $(wildcard guest/patches/*.patch) scripts/build-guest.sh scripts/stock-fragment.sh
	@nice -n 10 scripts/build-guest.sh --stock $(GUEST_STOCK) $(JOBS) $(FRAGMENTS)

$(INITRD): $(INITRD_INPUTS)
	@scripts/build-initrd.sh $(GUEST)

# The benchmark initramfs of `make compare` (microbench, hackbench,
# cyclictest and their i386 libraries), apart so that the normal one stays small.
bench-initrd: deps $(BENCH_INITRD)

$(BENCH_INITRD): $(BENCH_INITRD_INPUTS)
	@scripts/build-bench-initrd.sh $(GUEST)

# The initramfs of `make stress`: initrd.img followed by Debian's i386
# stress-ng and its libraries as a second archive.
stress-initrd: deps $(STRESS_INITRD)

$(STRESS_INITRD): $(STRESS_INITRD_INPUTS)
	@scripts/build-stress-initrd.sh $(GUEST)

vrom: deps
	@if [ -f vrom/Makefile ]; then $(MAKE) --no-print-directory -C vrom $(call SUBARGS,vrom) all; fi

hv: deps vrom
	@if [ -f hv/Makefile ]; then $(MAKE) --no-print-directory -C hv $(call SUBARGS,hv) all; fi

unit: deps vrom $(EXEC32_PROBE)
	@mkdir -p $(UNITDIR)
	@for d in $(dir $(SUBDIRS)); do \
		$(MAKE) --no-print-directory -C $$d $(call SUBARGS,$${d%/}) unit || exit 1; \
	done

# The runner executes this once to learn whether the host runs i386 binaries
# (tests/lib/exec32.py); static, no libc, so only the kernel's i386 support counts.
$(EXEC32_PROBE): tests/unit/exec32_probe.S
	@mkdir -p $(dir $@)
	gcc -m32 -nostdlib -static -no-pie -o $@ $<

iso: guest initrd hv
	@scripts/build-iso.sh $(ISO) $(BZIMAGE) $(INITRD) $(HV_ELF)

run: iso
	@echo "Booting $(ISO) in QEMU ($(SMP) CPUs). Serial console on this terminal; quit with Ctrl-A X."
	$(QEMU_RUN)

# QEMU stopped at its first instruction with a gdb server (-S -gdb); attach
# with the command printed (scripts/gdb/vmi-hv.gdb loads the hypervisor's and
# the guest's symbols and the vmihv-* helpers).  debug-native boots the same
# bzImage with -kernel, no hypervisor.
GDB_PORT ?= 1234
GDB_ATTACH = gdb -x scripts/gdb/vmi-hv.gdb -ex 'target remote :$(GDB_PORT)'
QEMU_DEBUG = qemu-system-i386 -m 256 -serial mon:stdio -no-reboot -S -gdb tcp::$(GDB_PORT) \
	     $(if $(DISPLAY),,-display none)

debug: iso
	@echo "QEMU waits for gdb on port $(GDB_PORT). In another terminal, in $(CURDIR):"
	@echo "    $(GDB_ATTACH)"
	@echo "then e.g. 'vmihv-break-call Init', 'continue'. Serial console here; quit QEMU with Ctrl-A X."
	$(QEMU_DEBUG) -cdrom $(ISO)

debug-native: guest initrd
	@echo "QEMU (native boot, no hypervisor) waits for gdb on port $(GDB_PORT). In another terminal, in $(CURDIR):"
	@echo "    $(GDB_ATTACH)"
	@echo "then e.g. 'vmihv-break-guest start_kernel', 'continue'. Quit QEMU with Ctrl-A X."
	$(QEMU_DEBUG) -kernel $(BZIMAGE) -initrd $(INITRD) -append "console=ttyS0,115200"

test: iso unit bench-initrd stress-initrd
	@python3 tests/run.py $(TESTARGS)

# The second configuration (guest/config/alt-preempt-hz1000.config on top of
# the default fragment: HZ=1000, periodic tick, PREEMPT), built into
# build/guest-alt: its Kconfig checks,
# sanity natively and under vmi-hv, /proc/vmi/info and steal time with two
# busy guests.  Not part of `make test`: a second kernel build costs ~7 min
# cold (README, "Testing").  Logs in test-logs/guest-alt/.
CONFIG_TESTS := guest-kconfig-vmi-forbids hv-guest-sanity-vs-native hv-linux-proc-vmi-info hv-multi-stolen-time guest-module-vmi-exports
test-configs: hv initrd $(BZIMAGE_ALT)
	@VMIHV_BZIMAGE=$(BZIMAGE_ALT) VMIHV_TEST_LOGS=$(CURDIR)/test-logs/guest-alt \
		python3 tests/run.py --no-unit $(addprefix -k ,$(CONFIG_TESTS)) $(TESTARGS)

# Every prefix of the guest patch series builds and boots, natively and
# under vmi-hv, where only the whole series activates VMI
# (scripts/check-series.sh, tests/series_boot.py; not in make test: well
# over an hour on 2 cores).
check-series: deps hv initrd
	@SERIES_FROM=$(FROM) scripts/check-series.sh $(BUILD)/series-check $(JOBS) $(FRAGMENTS)

# The benchmarks only: the same bzImage natively and under vmi-hv, and the
# hypervisor with and without its fast paths, side by side in one run; this
# includes compare-native-vs-hv, a short `make compare`.
bench: iso bench-initrd
	@python3 tests/run.py --bench $(TESTARGS)

# The same bzImage, benchmark initrd and command line natively and under
# vmi-hv, and the stock kernel natively, 5 boots each, interleaved: the ratio
# tables (vmi-hv vs native; VMI kernel natively vs stock), build/compare/*.csv
# (native-overhead.csv) and compare.svg (docs/COMPARE.md).
# COMPAREARGS="--reps 5" and so on: tests/compare.py --help.
compare: guest hv bench-initrd $(BZIMAGE_STOCK)
	@python3 tests/compare.py $(COMPAREARGS)

# Page-table stress under vmi-hv with the continuous shadow audit on
# (audit=every=1): ptstress, then Debian's stress-ng VM and page-table
# stressors, with 1, then 4 workers; operations by kind, audits, mismatches
# and shadow pages per run, and stress-ng's bogo-ops beside a native run.
# STRESSARGS="--audit exit --workers 1,2,4": tests/stress.py --help.
# VCPUS=N (default 1): the guest has N vCPUs that run at once
# (vcpus=N vcpus_at_once=on), its native twin N CPUs.
VCPUS ?= 1
stress: guest hv stress-initrd
	@python3 tests/stress.py --smp $(SMP) --vcpus $(VCPUS) $(STRESSARGS)

# The shadow fuzzer at length (tests/cases/test_hv_sfuzz.py): FUZZ_RUNS runs
# of FUZZ_CALLS VMI calls from seed FUZZ_SEED on (defaults: 24 runs of
# 100,000, seed 1; `make fuzz FUZZ_SEED=1234 FUZZ_RUNS=1` repeats one run).
# Then the SMP fuzzer (tests/cases/test_hv_smpfuzz.py), unless FUZZ_SMP=0:
# FUZZ_SMP_RUNS runs of FUZZ_SMP_CALLS VMI calls made by all vCPUs together
# (defaults: 5 of 200,000, 10^6 in all) on -smp 2, FUZZ_SMP_VCPUS vCPUs
# (0, the default: 2-4 by seed), from FUZZ_SEED; then every rule-break
# final and FUZZ_SMP_EPOCHS (8) epochs ended by Reboot or Shutdown.
FUZZ_CALLS ?= 100000
FUZZ_RUNS ?= 24
FUZZ_SEED ?= 1
FUZZ_SMP ?= 1
FUZZ_SMP_CALLS ?= 200000
FUZZ_SMP_RUNS ?= 5
FUZZ_SMP_VCPUS ?= 0
FUZZ_SMP_EPOCHS ?= 8
fuzz: hv
	@VMIHV_FUZZ_CALLS=$(FUZZ_CALLS) VMIHV_FUZZ_RUNS=$(FUZZ_RUNS) VMIHV_FUZZ_SEED=$(FUZZ_SEED) \
		python3 tests/run.py --no-unit -k hv-sfuzz-shadow
	@if [ "$(FUZZ_SMP)" != 0 ]; then \
		VMIHV_SMPFUZZ_CALLS=$(FUZZ_SMP_CALLS) VMIHV_SMPFUZZ_RUNS=$(FUZZ_SMP_RUNS) \
		VMIHV_SMPFUZZ_VCPUS=$(FUZZ_SMP_VCPUS) VMIHV_SMPFUZZ_EPOCHS=$(FUZZ_SMP_EPOCHS) \
		VMIHV_FUZZ_SEED=$(FUZZ_SEED) \
		python3 tests/run.py --no-unit -j 1 -k hv-smpfuzz; fi

clean:
	rm -rf $(BUILD)/hv $(BUILD)/vrom $(BUILD)/include $(BUILD)/tests $(ISO) test-logs

# Also drops the unpacked kernel tree (a cold rebuild takes minutes).
distclean:
	rm -rf $(BUILD) $(ISO) test-logs
