/*
 * romexec32.c -- run the real VMI ROM's slots in a 32-bit process.
 *
 * Built -m32 (host cmocka is 64-bit only) and driven by test_vrom_transport.
 * The ROM is mapped at whatever address mmap picks, which also shows it is
 * position-independent.  Its int $0x82 faults in user mode (the host IDT
 * gate has DPL 0), so a SIGSEGV handler plays the hypervisor: it records
 * the registers the ROM handed over and returns canned results.
 *
 * Usage: romexec32 ROM slots|fast|noreturn|pxe|life
 * Prints "ok <what>" or "FAIL <what>: <why>" per check; exit 0 when no FAIL.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <ucontext.h>

#include "vmi_abi.h"

/* ---- the fake hypervisor ------------------------------------------------ */

struct hc_record {
	int count;
	uint32_t eax, edx, ecx, ebx, esi, edi, esp, word0, word1;
	uint32_t eflags_if;	/* the shared page's virtual IF at the exit */
};
static struct hc_record hc;
static struct vmi_shared_page shared __attribute__((aligned(4096)));

/* pxe mode: like the hypervisor, drain the page-table entry queue at
 * every exit (here: every hypercall and every timer tick), counting what
 * was queued.  Returns the entries drained. */
static volatile int drain_on_exit;
static volatile uint64_t drained, drain_bad;
static uint32_t *drain_lo, *drain_hi;	/* queued addresses must lie in [lo, hi) */
static uint32_t hits[4096];		/* per entry of drain_lo[]: times drained */

/* A queued entry: its address (the call is in the low bits) and where
 * the call came from (0 is never a return address: each drain clears the
 * sites it read, so a 0 is a site the ROM did not write for this entry). */
static void hit(uint32_t entry, uint32_t site)
{
	uint32_t lin = entry & ~(uint32_t)VMI_SHARED_PXE_KIND_MASK;

	if (lin < (uint32_t)drain_lo || lin >= (uint32_t)drain_hi || !site)
		drain_bad++;
	else
		hits[(lin - (uint32_t)drain_lo) / 4]++;
}

static void drain(void)
{
	uint32_t n = shared.pxe_count;

	if (n > VMI_SHARED_PXE_QUEUE_LEN) {
		drain_bad++;
		n = VMI_SHARED_PXE_QUEUE_LEN;
	}
	for (uint32_t i = 0; i < n; i++) {
		hit(shared.pxe_queue[i], shared.pxe_site[i]);
		shared.pxe_site[i] = 0;
	}
	drained += n;
	shared.pxe_count = 0;
}

/* tick mode (F_ALARM): like the hypervisor, at every exit take an expiry
 * the ROM left in alarm_lazy[0] (counting it), then publish a new token and
 * the floor alarm_next_floor; a floor raised at an exit must not let an
 * expiry through that the ROM judged against the old one. */
static volatile int alarm_on_exit;
static volatile uint32_t alarm_gen;
static volatile uint64_t alarm_taken, alarm_taken_value, alarm_next_floor;

static uint64_t alarm_token(void)
{
	return (uint64_t)VMI_SHARED_ALARM_EMPTY_HI << 32 | alarm_gen;
}

static void alarm_exit(void)
{
	uint64_t v = shared.alarm_lazy[0];

	if (!((uint32_t)(v >> 32) & VMI_SHARED_ALARM_EMPTY_HI)) {
		alarm_taken++;
		alarm_taken_value = v;
	}
	alarm_gen++;
	shared.alarm_lazy[0] = alarm_token();
	shared.alarm_floor[0] = alarm_next_floor;
}

#define RESULT_LO(n) (0xa0000000u | (n))
#define RESULT_HI(n) (0xd0000000u | (n))
#define CPUID_EBX 0xb0b0b0b0u
#define GARBAGE 0x12345678u

static void hypervisor(int sig, siginfo_t *si, void *ctx)
{
	greg_t *g = ((ucontext_t *)ctx)->uc_mcontext.gregs;
	uint8_t *ip = (uint8_t *)g[REG_EIP];
	uint32_t *sp = (uint32_t *)g[REG_ESP];
	uint32_t n = (uint32_t)g[REG_EDI];

	(void)sig;
	(void)si;
	if (ip[0] != 0xcd || ip[1] != VMI_HYPERCALL_VECTOR) {
		fprintf(stderr, "romexec32: SIGSEGV at %p (%02x %02x), not a hypercall\n",
			ip, ip[0], ip[1]);
		_exit(3);
	}
	if (alarm_on_exit)
		alarm_exit();
	if (drain_on_exit) {
		drain();
		if (n == VMI_CALL_SetPxE || n == VMI_CALL_SwapPxE ||
		    n == VMI_CALL_TestAndSetPxEBit || n == VMI_CALL_TestAndClearPxEBit)
			hit((uint32_t)g[REG_EAX], sp[1]);	/* the hypercall's own entry, from its call site */
	}
	hc.count++;
	hc.eax = g[REG_EAX]; hc.edx = g[REG_EDX]; hc.ecx = g[REG_ECX];
	hc.ebx = g[REG_EBX]; hc.esi = g[REG_ESI]; hc.edi = n;
	hc.esp = g[REG_ESP]; hc.word0 = sp[0]; hc.word1 = sp[1];
	hc.eflags_if = shared.eflags_if;

	if (n == VMI_CALL_IRET) {
		/* [esp] = the guest's edi, then the iret frame: eip, cs, eflags. */
		g[REG_EDI] = sp[0];
		g[REG_EIP] = sp[1];
		g[REG_ESP] = (greg_t)(sp + 4);
		return;
	}
	if (n == VMI_HC_REPORT_UNSUPPORTED) {
		g[REG_EAX] = GARBAGE;	/* the ROM must return its own error */
		g[REG_EDX] = GARBAGE;
	} else {
		g[REG_EAX] = RESULT_LO(n);
		g[REG_EDX] = RESULT_HI(n);
		if (n == VMI_CALL_CPUID)
			g[REG_EBX] = CPUID_EBX;
	}
	g[REG_ECX] = GARBAGE;		/* clobbering ecx is allowed */
	g[REG_EIP] += 2;
}

/* ---- calling a slot with every register under control --------------------- */

struct frame {
	uint32_t eax, edx, ecx, ebx, esi, edi, ebp;
	uint32_t args[5];	/* stack words, args[0] at the lowest address */
	uint32_t esp_before, esp_after, stack_after[5];
};

void *cs_fn;
struct frame *cs_f;
uint32_t cs_saved_esp, cs_tmp;

/* call_slot(): call cs_fn with cs_f's registers and stack words.
 * jmp_slot_iret(): enter cs_fn with jmp as the guest does for IRET,
 * resuming at a label that records the registers.  (SYSEXIT is an
 * unsupported slot, which check_slots calls.) */
void call_slot(void);
extern char call_slot_ret[];	/* call_slot's return address from the slot */
void jmp_slot_iret(void);
__asm__(
	".text\n"
	"load_regs:\n"		/* in: ebp = frame; loads eax..edi, then ebp */
	"	movl 0(%ebp), %eax\n"
	"	movl 4(%ebp), %edx\n"
	"	movl 8(%ebp), %ecx\n"
	"	movl 12(%ebp), %ebx\n"
	"	movl 16(%ebp), %esi\n"
	"	movl 20(%ebp), %edi\n"
	"	movl 24(%ebp), %ebp\n"
	"	ret\n"
	"store_regs:\n"		/* called right after the slot returns */
	"	movl %ebp, cs_tmp\n"
	"	movl cs_f, %ebp\n"
	"	movl %eax, 0(%ebp)\n"
	"	movl %edx, 4(%ebp)\n"
	"	movl %ecx, 8(%ebp)\n"
	"	movl %ebx, 12(%ebp)\n"
	"	movl %esi, 16(%ebp)\n"
	"	movl %edi, 20(%ebp)\n"
	"	movl cs_tmp, %eax\n"
	"	movl %eax, 24(%ebp)\n"
	"	leal 4(%esp), %eax\n"	/* esp before our own call */
	"	movl %eax, 52(%ebp)\n"
	"	movl 4(%esp), %eax\n	movl %eax, 56(%ebp)\n"
	"	movl 8(%esp), %eax\n	movl %eax, 60(%ebp)\n"
	"	movl 12(%esp), %eax\n	movl %eax, 64(%ebp)\n"
	"	movl 16(%esp), %eax\n	movl %eax, 68(%ebp)\n"
	"	movl 20(%esp), %eax\n	movl %eax, 72(%ebp)\n"
	"	ret\n"
	".globl call_slot\n"
	"call_slot:\n"
	"	pushl %ebp\n	pushl %ebx\n	pushl %esi\n	pushl %edi\n"
	"	movl %esp, cs_saved_esp\n"
	"	movl cs_f, %ebp\n"
	"	pushl 44(%ebp)\n	pushl 40(%ebp)\n	pushl 36(%ebp)\n"
	"	pushl 32(%ebp)\n	pushl 28(%ebp)\n"
	"	movl %esp, 48(%ebp)\n"
	"	call load_regs\n"
	"	call *cs_fn\n"
	".globl call_slot_ret\n"
	"call_slot_ret:\n"
	"	call store_regs\n"
	"	movl cs_saved_esp, %esp\n"
	"	popl %edi\n	popl %esi\n	popl %ebx\n	popl %ebp\n"
	"	ret\n"
	".globl jmp_slot_iret\n"
	"jmp_slot_iret:\n"
	"	pushl %ebp\n	pushl %ebx\n	pushl %esi\n	pushl %edi\n"
	"	movl %esp, cs_saved_esp\n"
	"	movl cs_f, %ebp\n"
	"	pushl 44(%ebp)\n	pushl 40(%ebp)\n	pushl 36(%ebp)\n"
	"	pushl 32(%ebp)\n	pushl 28(%ebp)\n"
	"	movl %esp, 48(%ebp)\n"
	"	pushfl\n"		/* iret frame: eflags, cs, eip */
	"	pushl %cs\n"
	"	pushl $1f\n"
	"	call load_regs\n"
	"	jmp *cs_fn\n"
	"1:	call store_regs\n"
	"	movl cs_saved_esp, %esp\n"
	"	popl %edi\n	popl %esi\n	popl %ebx\n	popl %ebp\n"
	"	ret\n");

/* ---- checks ----------------------------------------------------------------- */

static uint8_t *rom;
static int failures;

static void result(int ok, const char *what, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		printf("ok %s\n", what);
		return;
	}
	failures++;
	printf("FAIL %s: ", what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static void setup(struct frame *f, unsigned int n)
{
	memset(f, 0, sizeof(*f));
	f->eax = 0x11110000u | n;
	f->edx = 0x22220000u | n;
	f->ecx = 0x33330000u | n;
	f->ebx = 0x44440000u | n;
	f->esi = 0x55550000u | n;
	f->edi = 0x66660000u | n;
	f->ebp = 0x77770000u | n;
	for (int i = 0; i < 5; i++)
		f->args[i] = 0x99990000u | (uint32_t)i << 8 | n;
	memset(&hc, 0, sizeof(hc));
	cs_fn = rom + n * VROM_CALL_LEN;
	cs_f = f;
}

/* Callee-saved registers and the caller's stack must survive every call. */
static const char *abi_broken(const struct frame *in, const struct frame *out, int cpuid)
{
	static char why[200];

	if (out->esp_after != out->esp_before)
		snprintf(why, sizeof(why), "esp moved by %d", (int)(out->esp_after - out->esp_before));
	else if (memcmp(out->stack_after, in->args, sizeof(in->args)))
		snprintf(why, sizeof(why), "the caller's stack arguments were modified");
	else if ((!cpuid && out->ebx != in->ebx) || out->esi != in->esi ||
		 out->edi != in->edi || out->ebp != in->ebp)
		snprintf(why, sizeof(why), "callee-saved register changed: ebx %08x esi %08x "
			 "edi %08x ebp %08x", out->ebx, out->esi, out->edi, out->ebp);
	else
		return NULL;
	return why;
}

struct call_def { const char *name; int kind, ret, words, sw; };
#define V(num, name, kind, ret, words, sw) \
	[num] = { #name, VMI_KIND_##kind, VMI_RET_##ret, words, sw },
static const struct call_def defs[NUM_VMI_CALLS] = { VMI_CALL_LIST(V) };
#undef V

/* Every returning slot with no shared page: the transport itself. */
static void check_slots(void)
{
	for (unsigned int n = 0; n < NUM_VMI_CALLS; n++) {
		const struct call_def *d = &defs[n];
		struct frame in, out;
		const char *why;
		char what[64];

		if (d->kind == VMI_KIND_HEADER || d->kind == VMI_KIND_NORETURN ||
		    d->kind == VMI_KIND_FASTNORETURN)
			continue;
		snprintf(what, sizeof(what), "slot %u %s", n, d->name);
		setup(&out, n);
		in = out;
		call_slot();
		why = abi_broken(&in, &out, n == VMI_CALL_CPUID);
		if (why) {
			result(0, what, "%s", why);
		} else if (d->kind == VMI_KIND_RESERVED || d->kind == VMI_KIND_UNSUPPORTED) {
			result(hc.count == 1 && hc.edi == VMI_HC_REPORT_UNSUPPORTED && hc.eax == n &&
			       out.eax == VMI_ERROR_UNSUPPORTED && out.edx == 0xffffffffu, what,
			       "%d hypercalls, edi %#x eax %u; returned %08x:%08x, want report of %u "
			       "and %08x:ffffffff", hc.count, hc.edi, hc.eax, out.edx, out.eax, n,
			       VMI_ERROR_UNSUPPORTED);
		} else if (hc.count != 1 || hc.edi != n) {
			result(0, what, "%d hypercalls, call number %u", hc.count, hc.edi);
		} else if ((d->words >= 1 && hc.eax != in.eax) || (d->words >= 2 && hc.edx != in.edx) ||
			   (d->words >= 3 && hc.ecx != in.ecx)) {
			/* only the registers that carry this call's arguments matter */
			result(0, what, "register arguments reached the hypervisor as %08x %08x %08x",
			       hc.eax, hc.edx, hc.ecx);
		} else if ((d->sw >= 1 && hc.ebx != in.args[0]) || (d->sw >= 2 && hc.esi != in.args[1])) {
			result(0, what, "stack words reached the hypervisor as ebx %08x esi %08x, "
			       "want %08x %08x", hc.ebx, hc.esi, in.args[0], in.args[1]);
		} else if (out.eax != RESULT_LO(n) || (d->ret == VMI_RET_U64 && out.edx != RESULT_HI(n))) {
			result(0, what, "returned %08x:%08x, hypervisor gave %08x:%08x",
			       out.edx, out.eax, RESULT_HI(n), RESULT_LO(n));
		} else if (n == VMI_CALL_CPUID && out.ebx != CPUID_EBX) {
			result(0, what, "CPUID's ebx result lost: %08x", out.ebx);
		} else {
			result(1, what, "");
		}
	}
}

/* IRET: no register may change, edi comes back via the stack. */
static void check_noreturn(void)
{
	struct frame in, out;
	const char *why;

	setup(&out, VMI_CALL_IRET);
	in = out;
	jmp_slot_iret();
	why = abi_broken(&in, &out, 0);
	result(!why && hc.count == 1 && hc.word0 == in.edi && out.eax == in.eax &&
	       out.edx == in.edx && out.ecx == in.ecx, "IRET resumes at the frame's eip",
	       "%s; hc %d, [esp] %08x (want saved edi %08x), eax %08x edx %08x ecx %08x",
	       why ? why : "regs", hc.count, hc.word0, in.edi, out.eax, out.edx, out.ecx);
}

static uint32_t run(unsigned int n, uint32_t eax, struct frame *out)
{
	struct frame in;
	const char *why;

	setup(out, n);
	out->eax = eax;
	in = *out;
	call_slot();
	why = abi_broken(&in, out, 0);
	if (why)
		result(0, vmi_call_name(n), "%s", why);
	return out->eax;
}

/* One jump to the IRET slot with the virtual IF clear, iret_caller_if
 * poisoned and irq_pending as given; why the ABI broke, or 0. */
static const char *fast_iret(uint32_t pending, struct frame *in, struct frame *out)
{
	shared.features = VMI_SHARED_F_VIF | VMI_SHARED_F_IRET;
	shared.irq_pending = pending;
	shared.eflags_if = 0;
	shared.iret_caller_if = 0xdead;
	setup(out, VMI_CALL_IRET);
	*in = *out;
	jmp_slot_iret();
	return abi_broken(in, out, 0);
}

/*
 * F_IRET: the ROM's real iret (here at CPL 3 to the same CS).  It keeps
 * the caller's virtual IF in iret_caller_if, for a faulting iret
 * (docs/VROM.md, "A faulting IRET"), and when the frame's IF meets a
 * pending interrupt it falls back to the hypercall with the caller's IF
 * put back.  The frame's eflags come from pushfl: IF set.
 */
static void check_fast_iret(void)
{
	struct frame in, out;
	const char *why;

	why = fast_iret(0, &in, &out);
	result(!why && hc.count == 0 && out.eax == in.eax && out.ecx == in.ecx &&
	       shared.eflags_if == VMI_EFLAGS_IF && shared.iret_caller_if == 0,
	       "fast IRET keeps the caller's IF", "%s; hc %d, eflags_if %#x, iret_caller_if %#x",
	       why ? why : "regs", hc.count, shared.eflags_if, shared.iret_caller_if);

	why = fast_iret(1, &in, &out);
	result(!why && hc.count == 1 && hc.edi == VMI_CALL_IRET && hc.word0 == in.edi &&
	       hc.eflags_if == 0 && shared.iret_caller_if == 0,
	       "IRET with a pending irq enters hv with the caller's IF",
	       "%s; hc %d edi %u [esp] %08x, eflags_if at the exit %#x, iret_caller_if %#x",
	       why ? why : "regs", hc.count, hc.edi, hc.word0, hc.eflags_if, shared.iret_caller_if);
	shared.irq_pending = 0;
}

/* Shared-page fast paths: no hypercall unless there is work for the hv. */
static void check_fast(void)
{
	struct frame f;
	uint32_t r;

	((VROMHeader *)rom)->reserved3 = (uint32_t)&shared;
	shared.magic = VMI_SHARED_MAGIC;
	shared.version = VMI_SHARED_VERSION;
	shared.features = VMI_SHARED_F_VIF | VMI_SHARED_F_CR2;

	shared.eflags_if = VMI_EFLAGS_IF;
	run(VMI_CALL_DisableInterrupts, 0, &f);
	result(hc.count == 0 && shared.eflags_if == 0, "fast DisableInterrupts",
	       "hc %d, eflags_if %#x", hc.count, shared.eflags_if);

	r = run(VMI_CALL_GetInterruptMask, 0, &f);
	result(hc.count == 0 && !(r & VMI_EFLAGS_IF), "fast GetInterruptMask (IF clear)",
	       "hc %d, result %#x", hc.count, r);

	shared.irq_pending = 0;
	run(VMI_CALL_EnableInterrupts, 0, &f);
	result(hc.count == 0 && shared.eflags_if == VMI_EFLAGS_IF, "fast EnableInterrupts",
	       "hc %d, eflags_if %#x", hc.count, shared.eflags_if);

	r = run(VMI_CALL_GetInterruptMask, 0, &f);
	result(hc.count == 0 && (r & VMI_EFLAGS_IF), "fast GetInterruptMask (IF set)",
	       "hc %d, result %#x", hc.count, r);

	/* The virtual IOPL the hypervisor keeps in the page (SetIOPLMask),
	 * never the real one (0 here too: a process runs at IOPL 0). */
	shared.eflags_iopl = VMI_EFLAGS_IOPL;
	r = run(VMI_CALL_GetInterruptMask, 0, &f);
	result(hc.count == 0 && (r & VMI_EFLAGS_IOPL) == VMI_EFLAGS_IOPL && (r & VMI_EFLAGS_IF),
	       "fast GetInterruptMask (virtual IOPL 3)", "hc %d, result %#x", hc.count, r);
	shared.eflags_iopl = 0x1000;
	r = run(VMI_CALL_GetInterruptMask, 0, &f);
	result(hc.count == 0 && (r & VMI_EFLAGS_IOPL) == 0x1000, "fast GetInterruptMask (virtual IOPL 1)",
	       "hc %d, result %#x", hc.count, r);
	shared.eflags_iopl = 0;

	shared.eflags_if = 0;
	shared.irq_pending = 1;
	run(VMI_CALL_EnableInterrupts, 0, &f);
	result(hc.count == 1 && hc.edi == VMI_CALL_EnableInterrupts &&
	       shared.eflags_if == VMI_EFLAGS_IF, "EnableInterrupts with a pending irq enters hv",
	       "hc %d edi %u, eflags_if %#x", hc.count, hc.edi, shared.eflags_if);

	run(VMI_CALL_SetInterruptMask, 0x46, &f);
	result(hc.count == 0 && shared.eflags_if == 0, "fast SetInterruptMask(IF clear), pending",
	       "hc %d, eflags_if %#x", hc.count, shared.eflags_if);

	run(VMI_CALL_SetInterruptMask, 0x246, &f);
	result(hc.count == 1 && hc.edi == VMI_CALL_SetInterruptMask && hc.eax == 0x246 &&
	       shared.eflags_if == VMI_EFLAGS_IF, "SetInterruptMask(IF set) with pending enters hv",
	       "hc %d edi %u eax %#x, eflags_if %#x", hc.count, hc.edi, hc.eax, shared.eflags_if);

	shared.irq_pending = 0;
	shared.eflags_if = 0;
	run(VMI_CALL_SetInterruptMask, 0x202, &f);
	result(hc.count == 0 && shared.eflags_if == VMI_EFLAGS_IF, "fast SetInterruptMask(IF set)",
	       "hc %d, eflags_if %#x", hc.count, shared.eflags_if);

	shared.cr2 = 0xc0ffee00u;
	r = run(VMI_CALL_GetCR2, 0, &f);
	result(hc.count == 0 && r == 0xc0ffee00u, "fast GetCR2", "hc %d, result %#x", hc.count, r);
	run(VMI_CALL_SetCR2, 0x1234, &f);
	result(hc.count == 0 && shared.cr2 == 0x1234, "fast SetCR2", "hc %d, cr2 %#x",
	       hc.count, shared.cr2);

	check_fast_iret();

	/* A feature the hypervisor did not enable must still go to it. */
	shared.features = VMI_SHARED_F_VIF;
	r = run(VMI_CALL_GetCR2, 0, &f);
	result(hc.count == 1 && hc.edi == VMI_CALL_GetCR2 && r == RESULT_LO(VMI_CALL_GetCR2),
	       "GetCR2 without F_CR2 enters hv", "hc %d edi %u result %#x", hc.count, hc.edi, r);
	shared.features = 0;
	run(VMI_CALL_DisableInterrupts, 0, &f);
	result(hc.count == 1 && hc.edi == VMI_CALL_DisableInterrupts,
	       "DisableInterrupts without F_VIF enters hv", "hc %d edi %u", hc.count, hc.edi);
}

/* ---- page-table updates without an exit (F_PXE) ----------------------------- */

static uint32_t run2(unsigned int n, uint32_t eax, uint32_t edx, struct frame *out)
{
	struct frame in;
	const char *why;

	setup(out, n);
	out->eax = eax;
	out->edx = edx;
	in = *out;
	call_slot();
	why = abi_broken(&in, out, 0);
	if (why)
		result(0, vmi_call_name(n), "%s", why);
	return out->eax;
}

static uint32_t table[4096] __attribute__((aligned(4096)));
#define PTEP(i) ((uint32_t)&table[i])

typedef uint32_t (*pxe_fn)(uint32_t *ptep, uint32_t val) __attribute__((regparm(3)));
#define ROM_FN(n) ((pxe_fn)(rom + (n) * VROM_CALL_LEN))

static void check_pxe_basic(void)
{
	struct frame f;
	uint32_t r;

	((VROMHeader *)rom)->reserved3 = (uint32_t)&shared;
	shared.magic = VMI_SHARED_MAGIC;
	shared.version = VMI_SHARED_VERSION;
	shared.features = VMI_SHARED_F_VIF | VMI_SHARED_F_CR2 | VMI_SHARED_F_PXE;
	shared.eflags_if = VMI_EFLAGS_IF;
	shared.irq_pending = 0;
	shared.pxe_count = 0;

	run2(VMI_CALL_SetPxE, PTEP(3), 0x12345067u, &f);
	result(hc.count == 0 && table[3] == 0x12345067u && shared.pxe_count == 1 &&
	       shared.pxe_queue[0] == (PTEP(3) | VMI_SHARED_PXE_SET) &&
	       shared.pxe_site[0] == (uint32_t)call_slot_ret && shared.eflags_if == VMI_EFLAGS_IF,
	       "fast SetPxE writes and queues, with the call and its return address",
	       "hc %d, entry %#x, count %u, queue[0] %#x, site[0] %#x (want %#x), eflags_if %#x",
	       hc.count, table[3], shared.pxe_count, shared.pxe_queue[0], shared.pxe_site[0],
	       (uint32_t)call_slot_ret, shared.eflags_if);

	table[5] = 0xaaaa1063u;
	r = run2(VMI_CALL_SwapPxE, PTEP(5), 0xbbbb2007u, &f);
	result(hc.count == 0 && r == 0xaaaa1063u && table[5] == 0xbbbb2007u &&
	       shared.pxe_count == 2 && shared.pxe_queue[1] == (PTEP(5) | VMI_SHARED_PXE_SWAP) &&
	       shared.pxe_site[1] == (uint32_t)call_slot_ret,
	       "fast SwapPxE returns the old entry", "hc %d, result %#x, entry %#x, count %u, queue[1] %#x",
	       hc.count, r, table[5], shared.pxe_count, shared.pxe_queue[1]);

	/* The bit number is taken modulo 32, as the hypervisor does. */
	table[7] = 0x1000;
	r = run2(VMI_CALL_TestAndSetPxEBit, PTEP(7), 32 + 6, &f);
	result(hc.count == 0 && r == 0 && table[7] == 0x1040 && shared.pxe_count == 3 &&
	       shared.pxe_queue[2] == (PTEP(7) | VMI_SHARED_PXE_TEST_SET), "fast TestAndSetPxEBit (bit was clear)",
	       "hc %d, result %#x, entry %#x, count %u, queue[2] %#x", hc.count, r, table[7],
	       shared.pxe_count, shared.pxe_queue[2]);
	r = run2(VMI_CALL_TestAndSetPxEBit, PTEP(7), 6, &f);
	result(hc.count == 0 && r == 1 && table[7] == 0x1040 && shared.pxe_count == 4,
	       "fast TestAndSetPxEBit (bit was set)", "hc %d, result %#x, entry %#x, count %u",
	       hc.count, r, table[7], shared.pxe_count);
	r = run2(VMI_CALL_TestAndClearPxEBit, PTEP(7), 12, &f);
	result(hc.count == 0 && r == 1 && table[7] == 0x40 && shared.pxe_count == 5,
	       "fast TestAndClearPxEBit (bit was set)", "hc %d, result %#x, entry %#x, count %u",
	       hc.count, r, table[7], shared.pxe_count);
	r = run2(VMI_CALL_TestAndClearPxEBit, PTEP(7), 12, &f);
	result(hc.count == 0 && r == 0 && table[7] == 0x40 && shared.pxe_count == 6 &&
	       shared.pxe_queue[5] == (PTEP(7) | VMI_SHARED_PXE_TEST_CLEAR),
	       "fast TestAndClearPxEBit (bit was clear)", "hc %d, result %#x, entry %#x, count %u, queue[5] %#x",
	       hc.count, r, table[7], shared.pxe_count, shared.pxe_queue[5]);

	/* The virtual IF comes back as it was, also when it was clear. */
	shared.eflags_if = 0;
	shared.irq_pending = 1;
	run2(VMI_CALL_SetPxE, PTEP(8), 8, &f);
	result(hc.count == 0 && shared.eflags_if == 0 && shared.pxe_count == 7,
	       "fast SetPxE with IF clear leaves it clear", "hc %d, eflags_if %#x, count %u",
	       hc.count, shared.eflags_if, shared.pxe_count);

	/* IF set and an interrupt pending: the ROM masked IF meanwhile, so on
	 * the way out it must let the hypervisor deliver (EnableInterrupts),
	 * keeping its result. */
	shared.eflags_if = VMI_EFLAGS_IF;
	table[9] = 0x9009;
	r = run2(VMI_CALL_SwapPxE, PTEP(9), 0x9999, &f);
	result(hc.count == 1 && hc.edi == VMI_CALL_EnableInterrupts && r == 0x9009 &&
	       table[9] == 0x9999 && shared.eflags_if == VMI_EFLAGS_IF && shared.pxe_count == 8,
	       "fast SwapPxE with a pending irq enters hv after queueing",
	       "hc %d edi %u, result %#x, entry %#x, eflags_if %#x, count %u",
	       hc.count, hc.edi, r, table[9], shared.eflags_if, shared.pxe_count);
	shared.irq_pending = 0;

	/* The last free place, then a full queue: the ordinary hypercall
	 * (whose exit drains the queue), the ROM writes nothing itself. */
	shared.pxe_count = VMI_SHARED_PXE_QUEUE_LEN - 1;
	run2(VMI_CALL_SetPxE, PTEP(10), 0x10, &f);
	result(hc.count == 0 && table[10] == 0x10 && shared.pxe_count == VMI_SHARED_PXE_QUEUE_LEN &&
	       shared.pxe_queue[VMI_SHARED_PXE_QUEUE_LEN - 1] == PTEP(10),
	       "fast SetPxE fills the last place", "hc %d, entry %#x, count %u", hc.count, table[10],
	       shared.pxe_count);
	drain_lo = table;
	drain_hi = table + 4096;
	drained = drain_bad = 0;
	drain_on_exit = 1;
	table[11] = 0x1111;
	for (unsigned int i = 0; i < 4; i++) {
		static const unsigned int calls[4] = { VMI_CALL_SetPxE, VMI_CALL_SwapPxE,
			VMI_CALL_TestAndSetPxEBit, VMI_CALL_TestAndClearPxEBit };
		char what[80];

		shared.pxe_count = VMI_SHARED_PXE_QUEUE_LEN;
		shared.eflags_if = VMI_EFLAGS_IF;
		r = run2(calls[i], PTEP(11), 0x2222, &f);
		snprintf(what, sizeof(what), "%s with a full queue enters hv", vmi_call_name(calls[i]));
		result(hc.count == 1 && hc.edi == calls[i] && hc.eax == PTEP(11) && hc.edx == 0x2222 &&
		       r == RESULT_LO(calls[i]) && table[11] == 0x1111 && shared.pxe_count == 0 &&
		       shared.eflags_if == VMI_EFLAGS_IF, what,
		       "hc %d edi %u eax %#x edx %#x, result %#x, entry %#x, count %u, eflags_if %#x",
		       hc.count, hc.edi, hc.eax, hc.edx, r, table[11], shared.pxe_count,
		       shared.eflags_if);
	}
	drain_on_exit = 0;

	/* An unaligned entry would not leave the kind bits free: the hypercall. */
	shared.pxe_count = 0;
	table[13] = 0x1313;
	run2(VMI_CALL_SwapPxE, PTEP(13) + 2, 0x4444, &f);
	result(hc.count == 1 && hc.edi == VMI_CALL_SwapPxE && hc.eax == PTEP(13) + 2 &&
	       table[13] == 0x1313 && shared.pxe_count == 0, "SwapPxE of an unaligned entry enters hv",
	       "hc %d edi %u eax %#x, entry %#x, count %u", hc.count, hc.edi, hc.eax, table[13],
	       shared.pxe_count);

	/* Without F_PXE, or F_PXE without F_VIF: hypercalls as before. */
	for (unsigned int i = 0; i < 2; i++) {
		shared.features = i ? VMI_SHARED_F_PXE : VMI_SHARED_F_VIF | VMI_SHARED_F_CR2;
		shared.pxe_count = 0;
		table[12] = 0x1212;
		run2(VMI_CALL_SetPxE, PTEP(12), 0x3333, &f);
		result(hc.count == 1 && hc.edi == VMI_CALL_SetPxE && hc.eax == PTEP(12) &&
		       hc.edx == 0x3333 && table[12] == 0x1212 && shared.pxe_count == 0,
		       i ? "SetPxE with F_PXE but not F_VIF enters hv" : "SetPxE without F_PXE enters hv",
		       "hc %d edi %u eax %#x, entry %#x, count %u", hc.count, hc.edi, hc.eax,
		       table[12], shared.pxe_count);
	}
	shared.features = 0;
}

/* FlushDeferredCalls (F_FLUSH): no exit, with the queue empty or not;
 * the queue is left for the next exit to drain.  Without F_FLUSH it is the
 * hypercall, whose exit drains. */
static void check_flush(void)
{
	struct frame f;
	uint32_t r;

	shared.features = VMI_SHARED_F_VIF | VMI_SHARED_F_PXE | VMI_SHARED_F_FLUSH;
	shared.eflags_if = VMI_EFLAGS_IF;
	shared.irq_pending = 0;
	for (unsigned int queued = 0; queued < 3; queued += 2) {
		char what[80];

		shared.pxe_count = queued;
		r = run(VMI_CALL_FlushDeferredCalls, 0, &f);
		snprintf(what, sizeof(what), "fast FlushDeferredCalls, %u queued", queued);
		result(hc.count == 0 && r == 0 && shared.pxe_count == queued, what,
		       "hc %d, result %#x, count %u", hc.count, r, shared.pxe_count);
	}
	shared.features = VMI_SHARED_F_VIF | VMI_SHARED_F_PXE;
	shared.pxe_count = 2;
	run(VMI_CALL_FlushDeferredCalls, 0, &f);
	result(hc.count == 1 && hc.edi == VMI_CALL_FlushDeferredCalls,
	       "FlushDeferredCalls without F_FLUSH enters hv", "hc %d edi %u", hc.count, hc.edi);
	shared.pxe_count = 0;
	shared.features = 0;
}

/*
 * Exits at arbitrary instructions: a fast timer plays the hypervisor's
 * exits, draining the queue (count := 0) wherever the ROM is, and, when
 * the virtual IF is set, an injected guest interrupt handler that makes
 * page-table updates of its own and returns through an exit (IRET).  Not
 * one update may be lost or counted twice: every call's entry must be
 * drained exactly once (through the queue, or as a hypercall with a full
 * queue).
 */
static volatile uint64_t nested_calls, ticks;
static uint32_t expect[4096];

static void tick(int sig)
{
	(void)sig;
	ticks++;
	drain();
	if (shared.eflags_if & VMI_EFLAGS_IF) {
		/* the guest's interrupt handler, with IF cleared on delivery */
		shared.eflags_if = 0;
		for (int i = 0; i < 40; i++) {
			ROM_FN(VMI_CALL_SetPxE)(&table[4000 + i], i);
			expect[4000 + i]++;
			nested_calls++;
		}
		drain();	/* its IRET is an exit */
		shared.eflags_if = VMI_EFLAGS_IF;
	}
}

static void check_pxe_exits(void)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	uint64_t calls = 0, hcs;
	pxe_fn fns[4] = { ROM_FN(VMI_CALL_SetPxE), ROM_FN(VMI_CALL_SwapPxE),
			  ROM_FN(VMI_CALL_TestAndSetPxEBit), ROM_FN(VMI_CALL_TestAndClearPxEBit) };

	((VROMHeader *)rom)->reserved3 = (uint32_t)&shared;
	shared.features = VMI_SHARED_F_VIF | VMI_SHARED_F_CR2 | VMI_SHARED_F_PXE;
	shared.eflags_if = VMI_EFLAGS_IF;
	shared.irq_pending = 0;
	shared.pxe_count = 0;
	memset(&hc, 0, sizeof(hc));
	drain_lo = table;
	drain_hi = table + 4096;
	drained = drain_bad = 0;
	memset(hits, 0, sizeof(hits));
	memset(expect, 0, sizeof(expect));
	drain_on_exit = 1;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = tick;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	while (ticks < 3000 && calls < 200000000u) {
		for (unsigned int i = 0; i < 3000; i++, calls++) {
			fns[i & 3](&table[i & 2047], i & 31);
			expect[i & 2047]++;
		}
	}
	it.it_value.tv_usec = it.it_interval.tv_usec = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	drain_on_exit = 0;
	drain();
	hcs = (uint64_t)hc.count;	/* full queue: the call itself was the hypercall */
	printf("# %llu calls, %llu timer exits, %llu nested calls, %llu drained, %llu hypercalls\n",
	       (unsigned long long)calls, (unsigned long long)ticks,
	       (unsigned long long)nested_calls, (unsigned long long)drained,
	       (unsigned long long)hcs);
	for (unsigned int i = 0; i < 4096; i++)
		if (hits[i] != expect[i]) {
			printf("# entry %u: %u updates, drained %u times\n", i, expect[i], hits[i]);
			drain_bad++;
			break;
		}
	result(ticks >= 100 && drain_bad == 0 && drained + hcs == calls + nested_calls &&
	       shared.eflags_if == VMI_EFLAGS_IF,
	       "no update lost or doubled with exits anywhere",
	       "%llu drained + %llu hypercalls, %llu calls + %llu nested, %llu bad queue states, "
	       "%llu ticks", (unsigned long long)drained, (unsigned long long)hcs,
	       (unsigned long long)calls, (unsigned long long)nested_calls,
	       (unsigned long long)drain_bad, (unsigned long long)ticks);
}

/*
 * The same, deterministically: single-step the ROM (EFLAGS.TF) and put the
 * exit after each of its instructions in turn, with the queue empty (where
 * a lost update would not show in the counts), in the middle and one
 * short of full.
 */
static uint8_t *rom_end_addr;
static volatile int step_target, step_n, step_fired, step_nested;

static volatile int step_alarm;

static void exit_here(void)
{
	if (step_alarm) {
		alarm_exit();
		return;
	}
	drain();
	if (step_nested && (shared.eflags_if & VMI_EFLAGS_IF)) {
		shared.eflags_if = 0;
		for (int i = 0; i < 3; i++) {
			ROM_FN(VMI_CALL_SetPxE)(&table[4000 + i], i);
			expect[4000 + i]++;
		}
		drain();
		shared.eflags_if = VMI_EFLAGS_IF;
	}
}

static void stepper(int sig, siginfo_t *si, void *ctx)
{
	greg_t *g = ((ucontext_t *)ctx)->uc_mcontext.gregs;
	uint8_t *ip = (uint8_t *)g[REG_EIP];

	(void)sig;
	(void)si;
	if (ip < rom || ip >= rom_end_addr) {
		if (step_n)
			g[REG_EFL] &= ~0x100;	/* back in the caller */
		return;
	}
	if (++step_n == step_target) {
		step_fired = 1;
		exit_here();
	}
}

static uint32_t stepped_call(unsigned int n, uint32_t *ptep, uint32_t val)
{
	uint32_t a = (uint32_t)ptep;
	pxe_fn fn = ROM_FN(n);

	__asm__ volatile("pushfl\n\torl $0x100, (%%esp)\n\tpopfl\n\tcall *%[fn]"
			 : "+a"(a), "+d"(val) : [fn] "S"(fn) : "ecx", "memory", "cc");
	return a;
}

static void check_pxe_single_step(long rom_len)
{
	static const unsigned int calls[4] = { VMI_CALL_SetPxE, VMI_CALL_SwapPxE,
		VMI_CALL_TestAndSetPxEBit, VMI_CALL_TestAndClearPxEBit };
	static const uint32_t starts[3] = { 0, 5, VMI_SHARED_PXE_QUEUE_LEN - 1 };
	struct sigaction sa;
	unsigned int runs = 0, bad = 0, longest = 0;

	rom_end_addr = rom + rom_len;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = stepper;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGTRAP, &sa, NULL);
	((VROMHeader *)rom)->reserved3 = (uint32_t)&shared;
	shared.features = VMI_SHARED_F_VIF | VMI_SHARED_F_CR2 | VMI_SHARED_F_PXE;
	drain_lo = table;
	drain_hi = table + 4096;
	for (unsigned int c = 0; c < 4; c++)
	for (unsigned int k = 0; k < 3; k++)
	for (int nested = 0; nested < 2; nested++)
	for (int target = 1; target < 500; target++) {
		uint32_t want_old = 0x5000 | target, r, want_r;

		memset(hits, 0, sizeof(hits));
		memset(expect, 0, sizeof(expect));
		for (uint32_t i = 0; i < starts[k]; i++)
			shared.pxe_queue[i] = PTEP(100 + i), shared.pxe_site[i] = 1;
		for (uint32_t i = 0; i < starts[k]; i++)
			expect[100 + i]++;
		shared.pxe_count = starts[k];
		shared.eflags_if = VMI_EFLAGS_IF;
		shared.irq_pending = 0;
		table[1] = want_old;
		expect[1]++;
		drain_bad = 0;
		drain_on_exit = 1;
		step_target = target;
		step_n = step_fired = 0;
		step_nested = nested;
		r = stepped_call(calls[c], &table[1], 3);
		drain_on_exit = 0;
		drain();
		runs++;
		want_r = calls[c] == VMI_CALL_SwapPxE ? want_old :
			 calls[c] == VMI_CALL_SetPxE ? 3 : (want_old >> 3) & 1;
		for (unsigned int i = 0; i < 4096; i++)
			if (hits[i] != expect[i]) {
				if (!bad)
					printf("# %s, queue at %u, exit after instruction %d%s: entry %u "
					       "updated %u times, drained %u times\n", vmi_call_name(calls[c]),
					       starts[k], target, nested ? " with a nested handler" : "",
					       i, expect[i], hits[i]);
				bad++;
				break;
			}
		/* a full queue made the hypercall: the fake hv returns its own value */
		if (!drain_bad && r != want_r && r != RESULT_LO(calls[c])) {
			if (!bad)
				printf("# %s returned %#x, want %#x\n", vmi_call_name(calls[c]), r, want_r);
			bad++;
		}
		bad += drain_bad != 0 || shared.eflags_if != VMI_EFLAGS_IF;
		memset(&hc, 0, sizeof(hc));
		if (!step_fired) {
			if (step_n > (int)longest)
				longest = step_n;
			break;
		}
	}
	printf("# %u single-stepped runs, longest path %u instructions\n", runs, longest);
	result(bad == 0 && longest > 10, "no update lost or doubled with an exit after any instruction",
	       "%u bad runs of %u", bad, runs);
}

/* ---- lifecycle calls in the queue (F_PTLIFE), invalidations (F_INVAL) ------ */

#define QCALL(n) (VMI_SHARED_PXE_CALL | (uint32_t)(n) << 2)

/* Call slot n with eax, edx, ecx and the stack words args[0..1]. */
static void run_args(unsigned int n, uint32_t eax, uint32_t edx, uint32_t ecx,
		     uint32_t a0, uint32_t a1, struct frame *out)
{
	struct frame in;
	const char *why;

	setup(out, n);
	out->eax = eax;
	out->edx = edx;
	out->ecx = ecx;
	out->args[0] = a0;
	out->args[1] = a1;
	in = *out;
	call_slot();
	why = abi_broken(&in, out, 0);
	if (why)
		result(0, vmi_call_name(n), "%s", why);
}

/* queue[at..] holds exactly words[0..n-1], each with the call's site. */
static int queued(unsigned int at, const uint32_t *words, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (shared.pxe_queue[at + i] != words[i] ||
		    shared.pxe_site[at + i] != (uint32_t)call_slot_ret)
			return 0;
	return 1;
}

static void check_lifecycle_basic(void)
{
	static const uint32_t alloc[6] = { QCALL(VMI_CALL_AllocatePage), 0x1234, VMI_PAGE_PD,
					   0x777, 768, 256 };
	static const uint32_t rel[3] = { QCALL(VMI_CALL_ReleasePage), 0x4321, VMI_PAGE_PT };
	struct frame f;

	((VROMHeader *)rom)->reserved3 = (uint32_t)&shared;
	shared.magic = VMI_SHARED_MAGIC;
	shared.version = VMI_SHARED_VERSION;
	shared.features = VMI_SHARED_F_VIF | VMI_SHARED_F_PXE | VMI_SHARED_F_PTLIFE;
	shared.eflags_if = VMI_EFLAGS_IF;
	shared.irq_pending = 0;
	shared.pxe_count = 0;

	/* In program order with the entry writes around them. */
	run2(VMI_CALL_SetPxE, PTEP(20), 0x20, &f);
	run_args(VMI_CALL_AllocatePage, 0x1234, VMI_PAGE_PD, 0x777, 768, 256, &f);
	result(hc.count == 0 && shared.pxe_count == 7 && queued(1, alloc, 6) &&
	       shared.eflags_if == VMI_EFLAGS_IF,
	       "fast AllocatePage queues its call and 5 arguments after the entry before it",
	       "hc %d, count %u, queue[1..6] %#x %#x %#x %#x %#x %#x, site[1] %#x, eflags_if %#x",
	       hc.count, shared.pxe_count, shared.pxe_queue[1], shared.pxe_queue[2],
	       shared.pxe_queue[3], shared.pxe_queue[4], shared.pxe_queue[5], shared.pxe_queue[6],
	       shared.pxe_site[1], shared.eflags_if);
	run_args(VMI_CALL_ReleasePage, 0x4321, VMI_PAGE_PT, 0, 0, 0, &f);
	run2(VMI_CALL_SetPxE, PTEP(21), 0x21, &f);
	result(hc.count == 0 && shared.pxe_count == 11 && queued(7, rel, 3) &&
	       shared.pxe_queue[10] == PTEP(21),
	       "fast ReleasePage queues its call and 2 arguments, the next entry after it",
	       "hc %d, count %u, queue[7..10] %#x %#x %#x %#x", hc.count, shared.pxe_count,
	       shared.pxe_queue[7], shared.pxe_queue[8], shared.pxe_queue[9], shared.pxe_queue[10]);

	/* IF clear stays clear; IF set with an interrupt pending: queued,
	 * then EnableInterrupts lets the hypervisor deliver. */
	shared.eflags_if = 0;
	shared.irq_pending = 1;
	run_args(VMI_CALL_ReleasePage, 0x4321, VMI_PAGE_PT, 0, 0, 0, &f);
	result(hc.count == 0 && shared.eflags_if == 0 && shared.pxe_count == 14,
	       "fast ReleasePage with IF clear leaves it clear", "hc %d, eflags_if %#x, count %u",
	       hc.count, shared.eflags_if, shared.pxe_count);
	shared.eflags_if = VMI_EFLAGS_IF;
	run_args(VMI_CALL_AllocatePage, 0x1234, VMI_PAGE_PD, 0x777, 768, 256, &f);
	result(hc.count == 1 && hc.edi == VMI_CALL_EnableInterrupts && shared.pxe_count == 20 &&
	       queued(14, alloc, 6) && shared.eflags_if == VMI_EFLAGS_IF,
	       "fast AllocatePage with a pending irq enters hv after queueing",
	       "hc %d edi %u, count %u, eflags_if %#x", hc.count, hc.edi, shared.pxe_count,
	       shared.eflags_if);
	shared.irq_pending = 0;

	/* Room for the whole call or the hypercall, with every argument. */
	shared.pxe_count = VMI_SHARED_PXE_QUEUE_LEN - 6;
	run_args(VMI_CALL_AllocatePage, 0x1234, VMI_PAGE_PD, 0x777, 768, 256, &f);
	result(hc.count == 0 && shared.pxe_count == VMI_SHARED_PXE_QUEUE_LEN &&
	       queued(VMI_SHARED_PXE_QUEUE_LEN - 6, alloc, 6),
	       "fast AllocatePage fills the last 6 places", "hc %d, count %u", hc.count,
	       shared.pxe_count);
	shared.pxe_count = VMI_SHARED_PXE_QUEUE_LEN - 5;
	run_args(VMI_CALL_AllocatePage, 0x1234, VMI_PAGE_PD, 0x777, 768, 256, &f);
	result(hc.count == 1 && hc.edi == VMI_CALL_AllocatePage && hc.eax == 0x1234 &&
	       hc.edx == VMI_PAGE_PD && hc.ecx == 0x777 && hc.ebx == 768 && hc.esi == 256 &&
	       shared.pxe_count == VMI_SHARED_PXE_QUEUE_LEN - 5 && shared.eflags_if == VMI_EFLAGS_IF,
	       "AllocatePage without room for 6 enters hv with its 5 arguments",
	       "hc %d edi %u eax %#x edx %#x ecx %#x ebx %#x esi %#x, count %u", hc.count, hc.edi,
	       hc.eax, hc.edx, hc.ecx, hc.ebx, hc.esi, shared.pxe_count);
	shared.pxe_count = VMI_SHARED_PXE_QUEUE_LEN - 2;
	run_args(VMI_CALL_ReleasePage, 0x4321, VMI_PAGE_PT, 0, 0, 0, &f);
	result(hc.count == 1 && hc.edi == VMI_CALL_ReleasePage && hc.eax == 0x4321 &&
	       hc.edx == VMI_PAGE_PT && shared.pxe_count == VMI_SHARED_PXE_QUEUE_LEN - 2,
	       "ReleasePage without room for 3 enters hv with its arguments",
	       "hc %d edi %u eax %#x edx %#x, count %u", hc.count, hc.edi, hc.eax, hc.edx,
	       shared.pxe_count);

	/* Without F_PTLIFE, or without F_VIF: the hypercalls. */
	for (unsigned int i = 0; i < 2; i++) {
		shared.features = i ? VMI_SHARED_F_PXE | VMI_SHARED_F_PTLIFE : VMI_SHARED_F_VIF | VMI_SHARED_F_PXE;
		shared.pxe_count = 0;
		run_args(VMI_CALL_AllocatePage, 0x1234, VMI_PAGE_PT, 0x55, 1, 2, &f);
		result(hc.count == 1 && hc.edi == VMI_CALL_AllocatePage && hc.eax == 0x1234 &&
		       hc.edx == VMI_PAGE_PT && hc.ecx == 0x55 && hc.ebx == 1 && hc.esi == 2 &&
		       shared.pxe_count == 0,
		       i ? "AllocatePage without F_VIF enters hv" : "AllocatePage without F_PTLIFE enters hv",
		       "hc %d edi %u eax %#x edx %#x ecx %#x ebx %#x esi %#x, count %u", hc.count,
		       hc.edi, hc.eax, hc.edx, hc.ecx, hc.ebx, hc.esi, shared.pxe_count);
	}
	shared.features = 0;
	shared.pxe_count = 0;
}

/* InvalPage and FlushTLB (F_INVAL): nothing to do with the queue empty,
 * the hypercall (which drains) with anything queued or without F_INVAL. */
static void check_invalidations(void)
{
	static const unsigned int calls[2] = { VMI_CALL_InvalPage, VMI_CALL_FlushTLB };
	struct frame f;

	((VROMHeader *)rom)->reserved3 = (uint32_t)&shared;
	for (unsigned int i = 0; i < 2; i++) {
		char what[80];

		shared.features = VMI_SHARED_F_VIF | VMI_SHARED_F_PXE | VMI_SHARED_F_INVAL;
		shared.pxe_count = 0;
		run(calls[i], 0xb7001000u, &f);
		snprintf(what, sizeof(what), "fast %s with the queue empty", vmi_call_name(calls[i]));
		result(hc.count == 0, what, "hc %d edi %u", hc.count, hc.edi);

		shared.pxe_count = 1;
		run(calls[i], 0xb7002000u, &f);
		snprintf(what, sizeof(what), "%s with an entry queued enters hv", vmi_call_name(calls[i]));
		result(hc.count == 1 && hc.edi == calls[i] && hc.eax == 0xb7002000u, what,
		       "hc %d edi %u eax %#x", hc.count, hc.edi, hc.eax);

		shared.features = VMI_SHARED_F_VIF | VMI_SHARED_F_PXE;
		shared.pxe_count = 0;
		run(calls[i], 0xb7003000u, &f);
		snprintf(what, sizeof(what), "%s without F_INVAL enters hv", vmi_call_name(calls[i]));
		result(hc.count == 1 && hc.edi == calls[i] && hc.eax == 0xb7003000u, what,
		       "hc %d edi %u eax %#x", hc.count, hc.edi, hc.eax);
	}
	shared.features = 0;
	shared.pxe_count = 0;
}

/*
 * Exits anywhere, with the lifecycle calls between the entry writes: a
 * timer drains the queue at random instructions (as in check_pxe_exits);
 * the drain here reads the calls too.  Each ReleasePage(ppn) and
 * AllocatePage(ppn, ...) must be drained exactly once, with all of its
 * arguments, and in order after the SetPxE made just before it.
 */
static volatile uint64_t life_bad, life_seen[2], life_order_bad;
static uint32_t life_last_set;	/* the entry index the last drained SetPxE named */

static void life_drain(void)
{
	uint32_t n = shared.pxe_count;

	if (n > VMI_SHARED_PXE_QUEUE_LEN) {
		life_bad++;
		n = VMI_SHARED_PXE_QUEUE_LEN;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t w = shared.pxe_queue[i];

		if (w == QCALL(VMI_CALL_ReleasePage) || w == QCALL(VMI_CALL_AllocatePage)) {
			int alloc = w == QCALL(VMI_CALL_AllocatePage);
			uint32_t words = alloc ? 5 : 2;
			const uint32_t *a = &shared.pxe_queue[i + 1];

			if (i + words >= n || a[0] != life_last_set ||
			    a[1] != (alloc ? VMI_PAGE_PT : VMI_PAGE_PD) ||
			    (alloc && (a[2] != ~a[0] || a[3] != 3 || a[4] != 4)))
				life_bad++;
			else
				life_seen[alloc]++;
			i += words;
		} else if (w >= PTEP(0) && w < PTEP(4096)) {
			life_last_set = (w - PTEP(0)) / 4;
		} else {
			life_bad++;
		}
	}
	shared.pxe_count = 0;
}

static void life_tick(int sig)
{
	(void)sig;
	ticks++;
	life_drain();
}

static void check_lifecycle_exits(void)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	uint64_t calls[2] = { 0, 0 };

	((VROMHeader *)rom)->reserved3 = (uint32_t)&shared;
	shared.features = VMI_SHARED_F_VIF | VMI_SHARED_F_PXE | VMI_SHARED_F_PTLIFE;
	shared.eflags_if = 0;	/* no nested handler: the order check needs one stream */
	shared.irq_pending = 0;
	shared.pxe_count = 0;
	ticks = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = life_tick;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	while (ticks < 2000 && calls[0] + calls[1] < 50000000u) {
		for (uint32_t i = 0; i < 3000; i++) {
			uint32_t e = i & 2047;
			struct frame f;

			/* A full queue means the hypercall: drain, as its exit would. */
			if (shared.pxe_count + 6 > VMI_SHARED_PXE_QUEUE_LEN) {
				sigset_t block, old;

				sigemptyset(&block);
				sigaddset(&block, SIGALRM);
				sigprocmask(SIG_BLOCK, &block, &old);
				life_drain();
				sigprocmask(SIG_SETMASK, &old, NULL);
			}
			ROM_FN(VMI_CALL_SetPxE)(&table[e], i);
			if (i & 1)
				run_args(VMI_CALL_AllocatePage, e, VMI_PAGE_PT, ~e, 3, 4, &f);
			else
				run_args(VMI_CALL_ReleasePage, e, VMI_PAGE_PD, 0, 0, 0, &f);
			calls[i & 1]++;
		}
	}
	it.it_value.tv_usec = it.it_interval.tv_usec = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	life_drain();
	printf("# %llu AllocatePage, %llu ReleasePage, %llu timer exits, %llu hypercalls\n",
	       (unsigned long long)calls[1], (unsigned long long)calls[0], (unsigned long long)ticks,
	       (unsigned long long)hc.count);
	result(ticks >= 100 && life_bad == 0 && life_seen[0] == calls[0] && life_seen[1] == calls[1] &&
	       hc.count == 0, "no lifecycle call lost, doubled or reordered with exits anywhere",
	       "%llu bad, drained %llu/%llu ReleasePage %llu/%llu AllocatePage, %d hypercalls",
	       (unsigned long long)life_bad, (unsigned long long)life_seen[0],
	       (unsigned long long)calls[0], (unsigned long long)life_seen[1],
	       (unsigned long long)calls[1], hc.count);
}

/* ---- the 8259s and the alarm without an exit (F_PIC, F_ALARM) ------------------ */

/* A port-I/O call: OUTB(value, port) or INB(port). */
static uint32_t io(unsigned int n, uint32_t a, uint32_t d)
{
	struct frame f;

	return run2(n, a, d, &f);
}

static void pic_state(uint32_t imr0, uint32_t imr1, uint32_t isr0, uint32_t isr1,
		      uint32_t irr0, uint32_t irr1)
{
	shared.pic_imr[0] = imr0, shared.pic_imr[1] = imr1;
	shared.pic_isr[0] = isr0, shared.pic_isr[1] = isr1;
	shared.pic_irr[0] = irr0, shared.pic_irr[1] = irr1;
	shared.pic_ready = 3;
	shared.irq_pending = 0;
}

/*
 * F_PIC: what Linux's i8259 driver does around an interrupt (mask, EOI,
 * unmask, the dummy read of the mask) stays in the page; an unmask or EOI
 * that lets a request through enters the hypervisor at once with IF set
 * and leaves irq_pending for the STI with IF clear; anything else on the
 * 8259 ports (ICW1, OCW3), other ports, a chip not ready and a missing
 * feature bit make the hypercall.
 */
static void check_pic(void)
{
	uint32_t r;

	((VROMHeader *)rom)->reserved3 = (uint32_t)&shared;
	shared.magic = VMI_SHARED_MAGIC;
	shared.version = VMI_SHARED_VERSION;
	shared.features = VMI_SHARED_F_VIF | VMI_SHARED_F_PIC;
	shared.eflags_if = 0;

	pic_state(0xfa, 0xff, 0x01, 0, 0, 0);
	io(VMI_CALL_OUTB, 0x1fb, 0x21);		/* only the low byte goes out */
	r = io(VMI_CALL_INB, 0x21, 0);
	result(hc.count == 0 && shared.pic_imr[0] == 0xfb && r == 0xfb,
	       "fast OUTB/INB of the master's mask", "hc %d, imr %#x, read %#x",
	       hc.count, shared.pic_imr[0], r);
	io(VMI_CALL_OUTB, 0x7f, 0xa1);
	r = io(VMI_CALL_INB, 0xa1, 0);
	result(hc.count == 0 && shared.pic_imr[1] == 0x7f && r == 0x7f && shared.pic_imr[0] == 0xfb,
	       "fast OUTB/INB of the slave's mask", "hc %d, imr %#x %#x, read %#x",
	       hc.count, shared.pic_imr[0], shared.pic_imr[1], r);

	pic_state(0xff, 0xff, 0x05, 0, 0, 0);
	io(VMI_CALL_OUTB, 0x60, 0x20);		/* specific EOI of input 0 */
	result(hc.count == 0 && shared.pic_isr[0] == 0x04 && !shared.irq_pending,
	       "fast specific EOI", "hc %d, isr %#x", hc.count, shared.pic_isr[0]);
	pic_state(0xff, 0xff, 0x04, 0x0a, 0, 0);
	io(VMI_CALL_OUTB, 0x20, 0xa0);		/* non-specific: the highest in service */
	io(VMI_CALL_OUTB, 0x62, 0x20);
	result(hc.count == 0 && shared.pic_isr[1] == 0x08 && shared.pic_isr[0] == 0,
	       "fast non-specific EOI to the slave, specific to the master's cascade",
	       "hc %d, isr %#x %#x", hc.count, shared.pic_isr[0], shared.pic_isr[1]);

	/* A request held back by the mask: let through with IF clear, then set. */
	pic_state(0xff, 0xff, 0, 0, 0x01, 0);
	io(VMI_CALL_OUTB, 0xfe, 0x21);
	result(hc.count == 0 && shared.pic_imr[0] == 0xfe && shared.irq_pending,
	       "unmask of a request with IF clear leaves irq_pending", "hc %d, pending %u",
	       hc.count, shared.irq_pending);
	pic_state(0xff, 0xff, 0, 0, 0x01, 0);
	shared.eflags_if = VMI_EFLAGS_IF;
	io(VMI_CALL_OUTB, 0xfe, 0x21);
	result(hc.count == 1 && hc.edi == VMI_CALL_EnableInterrupts && shared.pic_imr[0] == 0xfe,
	       "unmask of a request with IF set enters hv", "hc %d edi %u, imr %#x",
	       hc.count, hc.edi, shared.pic_imr[0]);
	pic_state(0x00, 0xff, 0x01, 0, 0x02, 0);
	io(VMI_CALL_OUTB, 0x60, 0x20);
	result(hc.count == 1 && hc.edi == VMI_CALL_EnableInterrupts && shared.pic_isr[0] == 0,
	       "EOI in front of a request with IF set enters hv", "hc %d edi %u, isr %#x",
	       hc.count, hc.edi, shared.pic_isr[0]);
	shared.eflags_if = 0;

	/* The hypervisor's: ICW1, OCW3, INB of the command port, other ports,
	 * a chip in initialisation, no F_PIC. */
	pic_state(0xff, 0xff, 0, 0, 0, 0);
	io(VMI_CALL_OUTB, 0x11, 0x20);
	result(hc.count == 1 && hc.edi == VMI_CALL_OUTB && hc.eax == 0x11 && hc.edx == 0x20 &&
	       shared.pic_imr[0] == 0xff, "ICW1 enters hv", "hc %d edi %u eax %#x edx %#x",
	       hc.count, hc.edi, hc.eax, hc.edx);
	io(VMI_CALL_OUTB, 0x0b, 0xa0);
	result(hc.count == 1 && hc.edi == VMI_CALL_OUTB && hc.eax == 0x0b && hc.edx == 0xa0,
	       "OCW3 enters hv", "hc %d edi %u eax %#x edx %#x", hc.count, hc.edi, hc.eax, hc.edx);
	io(VMI_CALL_INB, 0x20, 0);
	result(hc.count == 1 && hc.edi == VMI_CALL_INB && hc.eax == 0x20, "INB of the command port enters hv",
	       "hc %d edi %u eax %#x", hc.count, hc.edi, hc.eax);
	io(VMI_CALL_OUTB, 0x41, 0x3f9);
	result(hc.count == 1 && hc.edi == VMI_CALL_OUTB && hc.edx == 0x3f9, "OUTB to another port enters hv",
	       "hc %d edi %u edx %#x", hc.count, hc.edi, hc.edx);
	shared.pic_ready = 2;			/* the master expects an ICW */
	io(VMI_CALL_OUTB, 0x08, 0x21);
	r = io(VMI_CALL_INB, 0x21, 0);
	result(hc.count == 1 && hc.edi == VMI_CALL_INB && shared.pic_imr[0] == 0xff &&
	       r == RESULT_LO(VMI_CALL_INB), "a chip not ready enters hv", "hc %d edi %u, imr %#x",
	       hc.count, hc.edi, shared.pic_imr[0]);
	shared.pic_ready = 3;
	shared.features = VMI_SHARED_F_VIF;
	io(VMI_CALL_OUTB, 0xfe, 0x21);
	result(hc.count == 1 && hc.edi == VMI_CALL_OUTB && shared.pic_imr[0] == 0xff,
	       "OUTB without F_PIC enters hv", "hc %d edi %u, imr %#x", hc.count, hc.edi, shared.pic_imr[0]);
	shared.features = VMI_SHARED_F_PIC;
	io(VMI_CALL_OUTB, 0xfe, 0x21);
	result(hc.count == 1 && hc.edi == VMI_CALL_OUTB && shared.pic_imr[0] == 0xff,
	       "OUTB with F_PIC but not F_VIF enters hv", "hc %d edi %u", hc.count, hc.edi);
	shared.features = 0;
}

/* SetAlarm(flags, expiry, period) through the slot, in a frame of our own. */
static void alarm_call(uint32_t flags, uint64_t expiry, struct frame *f)
{
	struct frame in;
	const char *why;

	setup(f, VMI_CALL_SetAlarm);
	f->eax = flags;
	f->edx = (uint32_t)expiry;
	f->ecx = (uint32_t)(expiry >> 32);
	in = *f;
	call_slot();
	why = abi_broken(&in, f, 0);
	if (why)
		result(0, "SetAlarm", "%s", why);
}

/*
 * F_ALARM: a one-shot at or after the floor goes into alarm_lazy, over
 * the token; anything else is the hypercall with every argument as the
 * slot passes it.
 */
static void check_alarm(void)
{
	struct frame f;

	((VROMHeader *)rom)->reserved3 = (uint32_t)&shared;
	shared.features = VMI_SHARED_F_ALARM;
	alarm_gen = 7;
	alarm_next_floor = 0x100000000ull;
	alarm_exit();
	shared.alarm_floor[1] = UINT64_MAX;
	shared.alarm_lazy[1] = 0x80000000deadull << 16;	/* a token of its own */

	alarm_call(VMI_CYCLES_REAL, 0x100000123ull, &f);
	result(hc.count == 0 && shared.alarm_lazy[0] == 0x100000123ull,
	       "fast one-shot SetAlarm at or after the floor", "hc %d, lazy %#llx", hc.count,
	       (unsigned long long)shared.alarm_lazy[0]);
	alarm_call(VMI_CYCLES_REAL, 0x100000000ull, &f);
	result(hc.count == 0 && shared.alarm_lazy[0] == 0x100000000ull,
	       "a second one over the first (at the floor itself)", "hc %d, lazy %#llx", hc.count,
	       (unsigned long long)shared.alarm_lazy[0]);
	alarm_exit();
	alarm_call(VMI_CYCLES_REAL, 0xffffffffull, &f);
	result(hc.count == 1 && hc.edi == VMI_CALL_SetAlarm && hc.eax == VMI_CYCLES_REAL &&
	       hc.edx == 0xffffffffu && hc.ecx == 0 && hc.ebx == f.args[0] && hc.esi == f.args[1] &&
	       shared.alarm_lazy[0] == alarm_token(),
	       "SetAlarm before the floor enters hv", "hc %d edi %u eax %#x edx %#x ecx %#x ebx %#x esi %#x",
	       hc.count, hc.edi, hc.eax, hc.edx, hc.ecx, hc.ebx, hc.esi);
	alarm_call(VMI_CYCLES_REAL | VMI_ALARM_IS_PERIODIC, 0x200000000ull, &f);
	result(hc.count == 1 && hc.eax == (VMI_CYCLES_REAL | VMI_ALARM_IS_PERIODIC) &&
	       hc.ecx == 2 && shared.alarm_lazy[0] == alarm_token(),
	       "a periodic SetAlarm enters hv", "hc %d eax %#x", hc.count, hc.eax);
	alarm_call(VMI_CYCLES_AVAILABLE, 0x200000000ull, &f);
	result(hc.count == 1 && hc.eax == VMI_CYCLES_AVAILABLE && shared.alarm_lazy[1] == 0x80000000deadull << 16,
	       "SetAlarm on a counter with no floor enters hv", "hc %d eax %#x", hc.count, hc.eax);
	alarm_call(VMI_CYCLES_REAL, 0x8000000000000005ull, &f);
	result(hc.count == 1 && hc.ecx == 0x80000000u && shared.alarm_lazy[0] == alarm_token(),
	       "an expiry that reads as a token enters hv", "hc %d ecx %#x", hc.count, hc.ecx);
	shared.features = 0;
	alarm_call(VMI_CYCLES_REAL, 0x200000000ull, &f);
	result(hc.count == 1 && hc.edi == VMI_CALL_SetAlarm, "SetAlarm without F_ALARM enters hv",
	       "hc %d edi %u", hc.count, hc.edi);
}

static void stepped_alarm(uint64_t expiry)
{
	uint32_t a = VMI_CYCLES_REAL, d = (uint32_t)expiry, c = (uint32_t)(expiry >> 32);
	void *fn = rom + VMI_CALL_SetAlarm * VROM_CALL_LEN;

	__asm__ volatile("pushl $0\n\tpushl $0\n\tpushfl\n\torl $0x100, (%%esp)\n\tpopfl\n\t"
			 "call *%[fn]\n\taddl $8, %%esp"
			 : "+a"(a), "+d"(d), "+c"(c) : [fn] "S"(fn) : "memory", "cc");
}

/*
 * An exit after each instruction of the ROM's SetAlarm in turn, single-
 * stepped: the expiry reaches the hypervisor exactly once (taken from the
 * page or as the hypercall), and after an exit that raised the floor above
 * it, only as the hypercall: the ROM must not store under a floor it read
 * before that exit.
 */
static void check_alarm_single_step(long rom_len)
{
	struct sigaction sa;
	unsigned int runs = 0, bad = 0, longest = 0;
	const uint64_t e = 0x300000000ull;

	rom_end_addr = rom + rom_len;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = stepper;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGTRAP, &sa, NULL);
	((VROMHeader *)rom)->reserved3 = (uint32_t)&shared;
	shared.features = VMI_SHARED_F_ALARM;
	step_alarm = 1;
	for (int raise = 0; raise < 2; raise++)
	for (int target = 1; target < 200; target++) {
		uint64_t took, late;

		alarm_next_floor = 0x100000000ull;
		alarm_exit();
		alarm_taken = 0;
		memset(&hc, 0, sizeof(hc));
		alarm_next_floor = raise ? UINT64_MAX : 0x100000000ull;
		alarm_on_exit = 1;
		step_target = target;
		step_n = step_fired = 0;
		stepped_alarm(e);
		alarm_on_exit = 0;
		took = alarm_taken;
		alarm_exit();		/* the next exit takes what is left */
		late = alarm_taken - took;
		took = alarm_taken;
		runs++;
		if (took + (uint64_t)hc.count != 1 || (took && alarm_taken_value != e) ||
		    (hc.count && (hc.edx != (uint32_t)e || hc.ecx != (uint32_t)(e >> 32)))) {
			if (!bad)
				printf("# exit after instruction %d%s: taken %llu times, %d hypercalls\n", target,
				       raise ? " raising the floor" : "", (unsigned long long)took, hc.count);
			bad++;
		} else if (raise && step_fired && late) {
			if (!bad)
				printf("# exit after instruction %d raised the floor; the ROM stored after it\n", target);
			bad++;
		}
		if (!step_fired) {
			if (step_n > (int)longest)
				longest = step_n;
			break;
		}
	}
	step_alarm = 0;
	shared.features = 0;
	printf("# %u single-stepped SetAlarm runs, longest path %u instructions\n", runs, longest);
	result(bad == 0 && longest > 10, "no alarm lost, doubled or stored past a new floor, exit after any instruction",
	       "%u bad runs of %u", bad, runs);
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	FILE *fp;
	long len;

	if (argc != 3) {
		fprintf(stderr, "usage: romexec32 ROM slots|fast|noreturn|pxe|life|tick\n");
		return 2;
	}
	fp = fopen(argv[1], "rb");
	if (!fp || fseek(fp, 0, SEEK_END) || (len = ftell(fp)) <= 0 || fseek(fp, 0, SEEK_SET)) {
		perror(argv[1]);
		return 2;
	}
	rom = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE | PROT_EXEC,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rom == MAP_FAILED || fread(rom, 1, (size_t)len, fp) != (size_t)len) {
		perror("romexec32: loading the ROM");
		return 2;
	}
	fclose(fp);
	printf("# ROM mapped at %p\n", (void *)rom);

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = hypervisor;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	/* The hypervisor runs with interrupts off: no timer "exit" inside it. */
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGALRM);
	sigaction(SIGSEGV, &sa, NULL);

	if (!strcmp(argv[2], "slots"))
		check_slots();
	else if (!strcmp(argv[2], "fast"))
		check_fast();
	else if (!strcmp(argv[2], "noreturn"))
		check_noreturn();
	else if (!strcmp(argv[2], "life")) {
		check_lifecycle_basic();
		check_invalidations();
		check_lifecycle_exits();
	} else if (!strcmp(argv[2], "tick")) {
		check_pic();
		check_alarm();
		check_alarm_single_step(len);
	} else if (!strcmp(argv[2], "pxe")) {
		check_pxe_basic();
		check_flush();
		check_pxe_exits();
		check_pxe_single_step(len);
	}
	else
		return 2;
	return failures ? 1 : 0;
}
