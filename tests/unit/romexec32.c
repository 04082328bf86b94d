/*
 * romexec32.c -- run the real VMI ROM's slots in a 32-bit process.
 *
 * Built -m32 (host cmocka is 64-bit only) and driven by test_vrom_transport.
 * The ROM is mapped at whatever address mmap picks, which also shows it is
 * position-independent.  Its int $0x82 faults in user mode (the host IDT
 * gate has DPL 0), so a SIGSEGV handler plays the hypervisor: it records
 * the registers the ROM handed over and returns canned results.
 *
 * Usage: romexec32 ROM slots|fast|noreturn
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
#include <ucontext.h>

#include "vmi_abi.h"

/* ---- the fake hypervisor ------------------------------------------------ */

struct hc_record {
	int count;
	uint32_t eax, edx, ecx, ebx, esi, edi, esp, word0, word1;
};
static struct hc_record hc;

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
	hc.count++;
	hc.eax = g[REG_EAX]; hc.edx = g[REG_EDX]; hc.ecx = g[REG_ECX];
	hc.ebx = g[REG_EBX]; hc.esi = g[REG_ESI]; hc.edi = n;
	hc.esp = g[REG_ESP]; hc.word0 = sp[0]; hc.word1 = sp[1];

	if (n == VMI_CALL_IRET) {
		/* [esp] = the guest's edi, then the iret frame: eip, cs, eflags. */
		g[REG_EDI] = sp[0];
		g[REG_EIP] = sp[1];
		g[REG_ESP] = (greg_t)(sp + 4);
		return;
	}
	if (n == VMI_CALL_SYSEXIT) {
		g[REG_EDI] = sp[0];
		g[REG_EIP] = g[REG_EDX];
		g[REG_ESP] = g[REG_ECX];
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
 * jmp_slot_iret(), jmp_slot_sysexit(): enter cs_fn with jmp as the guest
 * does for IRET/SYSEXIT, resuming at a label that records the registers. */
void call_slot(void);
void jmp_slot_iret(void);
void jmp_slot_sysexit(void);
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
	"	ret\n"
	".globl jmp_slot_sysexit\n"
	"jmp_slot_sysexit:\n"
	"	pushl %ebp\n	pushl %ebx\n	pushl %esi\n	pushl %edi\n"
	"	movl %esp, cs_saved_esp\n"
	"	movl cs_f, %ebp\n"
	"	pushl 44(%ebp)\n	pushl 40(%ebp)\n	pushl 36(%ebp)\n"
	"	pushl 32(%ebp)\n	pushl 28(%ebp)\n"
	"	movl %esp, 48(%ebp)\n"
	"	call load_regs\n"
	"	movl $2f, %edx\n"	/* sysexit: edx = eip, ecx = esp */
	"	movl %esp, %ecx\n"
	"	jmp *cs_fn\n"
	"2:	call store_regs\n"
	"	movl cs_saved_esp, %esp\n"
	"	popl %edi\n	popl %esi\n	popl %ebx\n	popl %ebp\n"
	"	ret\n");

/* ---- checks ----------------------------------------------------------------- */

static uint8_t *rom;
static struct vmi_shared_page shared __attribute__((aligned(4096)));
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

		if (d->kind == VMI_KIND_HEADER || d->kind == VMI_KIND_NORETURN)
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

/* IRET and SYSEXIT: no register may change, edi comes back via the stack. */
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

	setup(&out, VMI_CALL_SYSEXIT);
	in = out;
	jmp_slot_sysexit();
	why = abi_broken(&in, &out, 0);
	result(!why && hc.count == 1 && hc.word0 == in.edi && out.eax == in.eax,
	       "SYSEXIT resumes at edx with esp = ecx", "%s; hc %d, [esp] %08x, eax %08x",
	       why ? why : "regs", hc.count, hc.word0, out.eax);
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

int main(int argc, char **argv)
{
	struct sigaction sa;
	FILE *fp;
	long len;

	if (argc != 3) {
		fprintf(stderr, "usage: romexec32 ROM slots|fast|noreturn\n");
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
	sigaction(SIGSEGV, &sa, NULL);

	if (!strcmp(argv[2], "slots"))
		check_slots();
	else if (!strcmp(argv[2], "fast"))
		check_fast();
	else if (!strcmp(argv[2], "noreturn"))
		check_noreturn();
	else
		return 2;
	return failures ? 1 : 0;
}
