/*
 * main.c - the hypervisor's start-up sequence, in order.
 */
#include "version.h"
#include "console.h"
#include "stop.h"
#include "acpi_poweroff.h"
#include "traps.h"
#include "segments.h"
#include "pic.h"
#include "io.h"
#include "multiboot.h"
#include "cmdline.h"
#include "debug_delay.h"
#include "machine_mem.h"
#include "address_space.h"
#include "timer.h"
#include "guest.h"
#include "layout.h"
#include "vcpu.h"
#include "guest_frames.h"
#include "guest_report.h"
#include "kbd.h"
#include "run.h"
#include "guest_set.h"
#include "fpu.h"
#include "acpi.h"
#include "cpu_list.h"
#include "smp.h"
#include "pcpu.h"
#include "spinlock.h"
#include "lock_selftest.h"

/* TSC at the first instruction of C: the activation log measures from it. */

static const char *loader_name(const struct multiboot_info *mbi)
{
	return mbi->flags & MBI_FLAG_LOADER ? (const char *)mbi->boot_loader_name : NULL;
}

static void selftest_fault(enum selftest_fault kind)
{
	volatile uint32_t zero = 0;

	log_info("selftest: causing a fault on purpose: %s",
		 kind == FAULT_PAGE ? "page" : kind == FAULT_INVALID_OPCODE ?
		 "invalid-opcode" : kind == FAULT_DIVIDE ? "divide" : "double");
	switch (kind) {
	case FAULT_PAGE:
		*(volatile uint32_t *)(uintptr_t)zero = 0xdead;	/* page 0 */
		break;
	case FAULT_INVALID_OPCODE:
		__asm__ volatile("ud2");
		break;
	case FAULT_DIVIDE:
		__asm__ volatile("divl %0" : : "r"(zero), "a"(1), "d"(0));
		break;
	case FAULT_DOUBLE:
		/* A stack in the unmapped page 0: the #UD cannot be pushed,
		 * neither can the #PF that raises, so the CPU double-faults
		 * and the #DF task takes over on a stack of its own. */
		__asm__ volatile("movl $0x800, %esp; ud2");
		break;
	case FAULT_NONE:
		return;
	}
	hv_panic("selftest fault did not fault");
}

/* after_load=idle: stay up, echo what arrives on COM1 (interrupt-driven),
 * 'q' stops. */
/* The time base for everything after: stop here without one. */
static void calibrate_tsc(void)
{
	struct tsc_calibration r;

	switch (tsc_calibrate(&r)) {
	case TSC_NONE:
		hv_fail("this CPU has no time-stamp counter (CPUID.1:EDX.TSC); vmi-hv needs one");
	case TSC_NO_PIT:
		hv_panic("PIT channel 2 never finished counting: no PIT?");
	case TSC_OK:
		break;
	}
	if (!r.clean)
		log_warn("TSC calibration: no clean PIT window in %u tries; using the least disturbed",
			 r.tries);
	log_info("TSC frequency %llu.%03llu MHz (measured against the PIT: median of %u clean %u ms windows in %u tries)",
		 udiv64(r.hz, 1000000), udiv64(r.hz, 1000) % 1000, r.clean, r.window_ms, r.tries);
	if (r.cpuid_hz)
		log_info("CPUID.15h says TSC %llu Hz", r.cpuid_hz);
}

/* The PS/2 keyboard is optional: say once which console input there is. */
static void start_keyboard(void)
{
	struct kbd_probe p;

	if (kbd_init(&p))
		log_info("PS/2 keyboard on IRQ %u (US layout): type in the VGA window or on the serial console",
			 HV_IRQ_KEYBOARD);
	else if (p.answer < 0)
		log_info("no PS/2 keyboard (%s): console input on the serial port only", p.why);
	else
		log_info("no PS/2 keyboard (%s: 0x%02x): console input on the serial port only",
			 p.why, p.answer);
}

static void idle_loop(void)
{
	log_info("idle: type on the serial console; 'q' stops the hypervisor");
	for (;;) {
		int c = console_wait_char(serial_getc);

		/* The IRQ4 count shows the bytes came by interrupt, not by
		 * polling (hv-serial-input-irq checks it grows). */
		log_info("serial input: 0x%02x '%c' (%u bytes received, %llu IRQ4 interrupts, up %llu ms)",
			 c, c >= 0x20 && c < 0x7f ? c : '.', serial_rx_count(),
			 irq_count(HV_IRQ_COM1), hv_uptime_ms());
		if (c == 'q')
			hv_stop(HV_EXIT_DONE, "'q' typed on the serial console");
	}
}

/* The processors the firmware lists, said in the boot log. */
static void list_cpus(struct cpu_list *cpus)
{
	cpu_list_find(cpus);
	if (acpi_rsdp_address())
		log_info("ACPI: RSDP at %08x", acpi_rsdp_address());
	if (!cpus->source) {
		log_info("CPUs: no ACPI MADT and no MP table: the boot CPU alone");
		return;
	}
	for (unsigned i = 0; i < cpus->n; i++)
		log_info("CPU found (%s): APIC ID %u%s", cpus->source, cpus->cpu[i].apic_id,
			 cpus->cpu[i].enabled ? "" : ", disabled by the firmware");
	if (cpus->left_out)
		log_warn("CPUs: %u more listed than vmi-hv takes (%u, APIC IDs below 256): left out",
			 cpus->left_out, CPU_LIST_MAX);
}

/* The machine: memory, interrupts, time, the console's input, the
 * other CPUs. */
static void machine_init(unsigned max_cpus)
{
	static const struct irq_controller legacy_pic = {
		.is_spurious = pic_is_spurious, .mask = pic_mask, .eoi = pic_eoi,
	};
	struct cpu_list cpus;

	pic_init();
	irq_set_controller(&legacy_pic);
	calibrate_tsc();
	fpu_init();
	rtc_read_boot();
	hv_timer_start();
	/* The drivers' interrupt handlers, registered here: traps.c knows no
	 * driver (the local APIC's driver registers its own vectors). */
	irq_set_handler(HV_IRQ_COM1, serial_irq);
	irq_set_handler(HV_IRQ_KEYBOARD, kbd_irq);
	serial_enable_rx_irq();
	irq_enable();
	hv_timer_check();
	start_keyboard();
	list_cpus(&cpus);
	if (hv_timer_per_cpu())
		smp_start_cpus(&cpus, max_cpus, run_cpu);
	else if (cpus.n > 1)
		log_info("CPUs: the boot CPU alone: the hypervisor's timer is the PIT, not a local APIC on each CPU");
}

/* selftest=two-guests: the first module pair loaded twice; never returns. */
__attribute__((noreturn)) static void two_guests_selftest(const struct multiboot_info *mbi,
							   const struct hv_options *opt)
{
	struct guest *a = guest_create("guest A"), *b = guest_create("guest B");
	struct guest_spec one = { .number = 1, .kernel_module = 0, .weight = 1, .vcpus = 1,
				  .mem = opt->guest_mem, .mem_given = opt->guest_mem_given };

	guest_load(mbi, opt, &one, 1, a);
	guest_load(mbi, opt, &one, 1, b);
	vcpu_create(a);
	vcpu_create(b);
	run_selftest_two_guests(a, b);
}

/*
 * A last module named System.map is the guest kernel's symbol table (for
 * the reports of strict_pt and the audit), not a guest's: it is left out
 * of the pairing, and its memory is never given back.  Returns the
 * number of modules that are guests'.
 */
static unsigned find_sysmap(const struct multiboot_info *mbi, struct sysmap *sysmap)
{
	unsigned nr_modules = mbi->flags & MBI_FLAG_MODS ? mbi->mods_count : 0;
	const struct multiboot_module *last;

	*sysmap = (struct sysmap){ 0, 0 };
	if (nr_modules <= 2)
		return nr_modules;
	last = (const struct multiboot_module *)mbi->mods_addr + nr_modules - 1;
	if (!last->string || !sysmap_module_is((const char *)last->string))
		return nr_modules;
	sysmap->text = (const char *)last->mod_start;
	sysmap->len = last->mod_end - last->mod_start;
	log_info("module %u: the guest kernel's System.map (%u bytes), for naming guest EIPs",
		 nr_modules, sysmap->len);
	return nr_modules - 1;
}

/* guestN.cpus= must name a CPU the hypervisor runs on; CPUs it names
 * beyond them are said and left out. */
static void check_cpus(struct guest_spec *spec)
{
	uint32_t online = (1u << nr_online_cpus) - 1;

	if (!spec->cpus)
		return;
	if (!(spec->cpus & online))
		hv_fail("guest %u (%s): guest%u.cpus= names no CPU the hypervisor runs on (CPUs 0-%u)",
			spec->number, spec->name, spec->number, nr_online_cpus - 1);
	if (spec->cpus & ~online)
		log_warn("guest %u (%s): guest%u.cpus= names CPUs that are not running; it runs on CPUs 0-%u of the list only",
			 spec->number, spec->name, spec->number, nr_online_cpus - 1);
	spec->cpus &= online;
	log_info("guest %u (%s): pinned to CPUs %08x (bit N: CPU N)", spec->number, spec->name, spec->cpus);
}

/* Every guest of the module list, planned and loaded; returns how many. */
static unsigned load_guests(const struct multiboot_info *mbi, const struct hv_options *opt,
			    struct guest **guests)
{
	struct guest_spec specs[HV_MAX_GUESTS];
	struct sysmap sysmap;
	unsigned n, nr_modules = find_sysmap(mbi, &sysmap);
	char err[200];

	if (!guest_set_plan(nr_modules, opt,
			    machine_frames.nfree, HV_RESERVED_FRAMES, specs, &n, err, sizeof(err)))
		hv_fail("%s", err);
	if (n > 1)
		log_info("%u guests from %u modules", n, mbi->mods_count);
	for (unsigned i = 0; i < n; i++) {
		if (n > 1 && !specs[i].mem_given_by_user)
			log_warn("guest %u (%s): no size given and the default %llu MiB does not fit every guest: using %llu MiB",
				 specs[i].number, specs[i].name,
				 (unsigned long long)(opt->guest_mem >> 20),
				 (unsigned long long)(specs[i].mem >> 20));
		if (n > 1)
			log_info("guest %u (%s): modules %u and %u, %llu MiB, weight %u",
				 specs[i].number, specs[i].name, specs[i].kernel_module + 1,
				 specs[i].kernel_module + 2,
				 (unsigned long long)(specs[i].mem >> 20), specs[i].weight);
		check_cpus(&specs[i]);
		guests[i] = guest_create(specs[i].name);
		guest_load(mbi, opt, &specs[i], n, guests[i]);
		guests[i]->sysmap = sysmap;
	}
	return n;
}

void hv_main(uint32_t magic, const struct multiboot_info *mbi)
{
	struct hv_options opt;
	struct guest *guests[HV_MAX_GUESTS];
	unsigned n;
	char err[200];

	tsc_mark_start();
	cpu_tables_init();
	console_init();
	stop_set_power_off(acpi_power_off);
	kprintf("vmi-hv %s: a VMI 13.0 hypervisor for i386 Linux guests\n", HV_VERSION);
	sysenter_msrs_clear();

	if (magic != MULTIBOOT_LOADER_MAGIC)
		hv_fail("not started by a multiboot loader (eax=0x%08x, want 0x%08x)",
			magic, MULTIBOOT_LOADER_MAGIC);
	if (mbi->flags & MBI_FLAG_LOADER)
		log_info("loaded by %s", (const char *)mbi->boot_loader_name);
	log_info("command line: \"%s\"",
		 mbi->flags & MBI_FLAG_CMDLINE ? (const char *)mbi->cmdline : "");
	if (!hv_parse_cmdline(mbi->flags & MBI_FLAG_CMDLINE ?
			      (const char *)mbi->cmdline : NULL,
			      loader_puts_path_first(loader_name(mbi)),
			      &opt, err, sizeof(err)))
		hv_fail("%s", err);
	log_set_level((enum log_level)opt.loglevel);
	if (opt.locks_check) {
		locks_check_enable();
		log_info("locks=check: the lock order is checked at every take, and no lock may be held across a guest entry");
	}

	debug_pick_delay_us = opt.debug_pick_delay_us;
	debug_halt_delay_us = opt.debug_halt_delay_us;
	if (debug_pick_delay_us || debug_halt_delay_us)
		log_warn("test-only delays: %u us after each pick, %u us in each halt (debug_pick_delay=, debug_halt_delay=)",
			 debug_pick_delay_us, debug_halt_delay_us);

	machine_mem_init(mbi);
	address_space_init();
	/* The double-fault task and trap_common switch to it too. */
	cpu_tables_set_cr3(hv_cr3());
	machine_init(opt.max_cpus);

	if (opt.fault != FAULT_NONE)
		selftest_fault(opt.fault);
	lock_selftest_arm(opt.lock_selftest);
	if (opt.two_guests)
		two_guests_selftest(mbi, &opt);

	n = load_guests(mbi, &opt, guests);
	if (opt.after_load == AFTER_LOAD_IDLE)
		idle_loop();
	if (opt.after_load == AFTER_LOAD_STOP)
		hv_stop(HV_EXIT_DONE, n == 1 ? "guest loaded and checked (after_load=stop)" :
			"guests loaded and checked (after_load=stop)");

	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < guests[i]->spec.vcpus; j++)
			vcpu_create(guests[i]);
	guest_frames_baseline(guests, n);
	run_guests(guests, n, opt.slice_ms * 1000);
}
