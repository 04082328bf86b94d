/*
 * tguest.c - a tiny test guest for vmi-hv (not Linux): a valid bzImage
 * whose 32-bit code does one thing the hypervisor must catch, chosen by
 * a word on its command line:
 *
 *   tguest=unsupported  a privileged instruction the emulator does not
 *                       know (sysexit, #GP outside ring 0; a VMI guest
 *                       never uses it, CPUID hides SEP): the guest is
 *                       stopped with its bytes
 *   tguest=triple       an IDT with limit 0, then ud2: #UD cannot be
 *                       delivered, nor the #GP, nor the double fault
 *   tguest=outside      reads guest-physical memory beyond its RAM
 *   tguest=switcher     reads the switcher (allowed: ring 1 is supervisor),
 *                       then writes to it (read-only: a rule break)
 *   tguest=user         ring 3: iret to user mode, int $0x80 there (a DPL 3
 *                       gate: delivered on the TSS's ring-0 stack), then
 *                       cli in user mode (#GP to its own handler), then
 *                       sysexit in the handler
 *   tguest=vmi          makes the VMI Init hypercall, then one vmi-hv
 *                       has no code for: SetPxELong straight through
 *                       int $0x82 (a PAE call; its ROM slot never gets here)
 *   tguest=trapped      VMI Init, then three privileged instructions the
 *                       hypervisor emulates (mov from cr0) with no output in
 *                       between (the console's in/out trap too), then
 *                       Shutdown: the count of instructions trapped after
 *                       activation must be exactly 3
 *   tguest=pagefault    its own IDT and a #PF it handles itself, then
 *                       sysexit as above (checks exception delivery)
 *   tguest=port         reads port 0x3e8 (COM3, absent: all ones, allowed),
 *                       then writes port 0x5000 (no PC device: a rule break)
 *   tguest=romwrite     reads the VMI ROM's signature at 0xC0000 (allowed),
 *                       then writes it (the option ROM is read-only)
 *   tguest=cslimit-iret VMI Init, then VMI IRET to an EIP beyond the limit
 *                       of its code segment (the CPU's iret would #GP)
 *   tguest=cslimit-gate ud2 through an IDT gate whose offset is beyond its
 *                       code segment's limit: the CPU raises #GP(0), which
 *                       its own #GP handler reports
 *   tguest=cslimit-lgdt lgdt of a table whose code segment (the loaded CS)
 *                       no longer holds EIP: the CPU runs on with the CS
 *                       it has cached until CS is loaded again
 *   tguest=links        paging on with all 1008 PDEs naming one page table,
 *                       VMI Init, then 70 directories announced, each
 *                       cloning those 1008 PDEs: 70,560 links to one table,
 *                       more than a 16-bit count holds (the hypervisor
 *                       must stop it at its limit, 65,535)
 *   tguest=ldt          an LDT (lldt, emulated) holding a DPL 3 call gate
 *                       to its ring-0 code and a DPL 0 data segment: the
 *                       data segment loads (in ring 1), the far call
 *                       through the gate is #GP to its own handler (gates
 *                       are never copied for the CPU); then VMI Init and
 *                       WriteLDTEntry of another gate into the loaded LDT,
 *                       a rule break that stops it
 *   tguest=exits        VMI calls in a loop for a while (tguest_exits.c)
 *   tguest=smp          vcpus=N: vCPU 0 starts the others (tguest_smp.c)
 *   tguest=smpdeath     vcpus=N: the APs spin, vCPU 0 powers off
 *   tguest=smpinit      vcpus=N: every vCPU makes VMI Init again
 *   tguest=smptick      vcpus=N: each vCPU ticks on its LVTT-wired alarm
 *   tguest=smpmmu       vcpus=2: two vCPUs on their own page directories
 *                       after activation (tguest_smp_mmu.c)
 *   tguest=smpq         vcpus=2: a write queued on vCPU 0 relied on by
 *                       vCPU 1 (tguest_smp_queue.c)
 *   tguest=swscan       reads every page of the switcher, counting what
 *                       it can read (tguest_swscan.c)
 *   tguest=smpfuzz:SEED  vcpus=N: 2-4 vCPUs fuzz the SMP surface and the MMU
 *                       at once (tguest_smpfuzz*.c)
 *   tguest=alarmwrap    a periodic alarm of period 2^64-1 (tguest_smpfuzz.c)
 *   tguest=fuzz:N       VMI Init, then 300 well-formed VMI calls with random
 *                       arguments inside each call's contract (a sequence
 *                       seeded with N), each of which must be answered;
 *                       then up to 100 garbage calls (any number, any
 *                       arguments), each answered or refused by stopping
 *                       the guest with a diagnostic, never hurting the
 *                       hypervisor.  A guest that survives calls Shutdown.
 *
 * It prints through the emulated COM1, as earlyprintk=serial does.
 */
#include <stdint.h>
#include "io.h"		/* header-only port I/O, shared with the hypervisor */
#include "vmi_abi.h"	/* the VMI call numbers (generated, vrom/abi) */
#include "tguest.h"

#define COM1 0x3f8

void putc(char c)
{
	while (!(inb(COM1 + 5) & 0x20))
		;
	outb(COM1, (uint8_t)c);
}

void puts(const char *s)
{
	for (; *s; s++) {
		if (*s == '\n')
			putc('\r');
		putc(*s);
	}
}

void puthex(uint32_t v)
{
	for (int i = 28; i >= 0; i -= 4)
		putc("0123456789abcdef"[(v >> i) & 15]);
}

int has_word(const char *cmdline, const char *word)
{
	for (const char *p = cmdline; *p; p++) {
		const char *a = p, *b = word;

		while (*b && *a == *b)
			a++, b++;
		if (!*b && (*a == 0 || *a == ' ') && (p == cmdline || p[-1] == ' '))
			return 1;
	}
	return 0;
}

/* ---- an IDT of our own, for tguest=pagefault ---------------------------- */
static uint64_t idt[32];
static volatile uint32_t pf_count, pf_cr2, pf_error;
void pf_entry(void);
__asm__(".text\n"
	"pf_entry:\n"
	"	pushal\n"
	"	movl %cr2, %eax\n"		/* emulated: the guest's virtual CR2 */
	"	movl %eax, pf_cr2\n"
	"	movl 32(%esp), %eax\n"		/* the error code */
	"	movl %eax, pf_error\n"
	"	incl pf_count\n"
	"	popal\n"
	"	addl $4, %esp\n"		/* the error code */
	"	addl $2, (%esp)\n"		/* skip the 2-byte faulting movl (%ecx), %eax */
	"	iret\n");

static void set_gate(unsigned v, void (*fn)(void))
{
	uint32_t off = (uint32_t)fn;

	idt[v] = (uint64_t)(off & 0xffff) | (0x10ull << 16) | (0x8eull << 40) |
		 ((uint64_t)(off >> 16) << 48);
}

struct __attribute__((packed)) dtr { uint16_t limit; uint32_t base; };

static uint64_t idt_big[0x81];

/* ---- ring 3, for tguest=user ------------------------------------------- */
static struct tss32 tss;
static uint64_t user_gdt[7] = {
	0, 0,
	0x00cf9a000000ffffull,	/* 0x10 kernel code */
	0x00cf92000000ffffull,	/* 0x18 kernel data */
	0x00cffa000000ffffull,	/* 0x20 user code, DPL 3 */
	0x00cff2000000ffffull,	/* 0x28 user data, DPL 3 */
	0,			/* 0x30 TSS, filled in */
};
static uint8_t kernel_stack[4096] __attribute__((aligned(16)));
static uint8_t user_stack[4096] __attribute__((aligned(16)));
volatile uint32_t sys_eax, sys_cs, gp_error, gp_cs, gp_ss;

void sys_entry(void);
void gp_entry(void);
void user_code(void);
void gp_report(void);
__asm__(".text\n"
	"sys_entry:\n"			/* int $0x80 from ring 3, on tss.esp0 */
	"	movl %eax, sys_eax\n"
	"	movl 4(%esp), %eax\n"		/* the pushed cs */
	"	movl %eax, sys_cs\n"
	"	iret\n"
	"gp_entry:\n"			/* #GP: error, eip, cs, eflags, esp, ss */
	"	movl (%esp), %eax\n"
	"	movl %eax, gp_error\n"
	"	movl 8(%esp), %eax\n"
	"	movl %eax, gp_cs\n"
	"	movl 20(%esp), %eax\n"
	"	movl %eax, gp_ss\n"
	"	movl $0x18, %eax\n"
	"	movl %eax, %ds\n"
	"	movl %eax, %es\n"
	"	call gp_report\n"
	"1:	jmp 1b\n"
	"user_code:\n"			/* ring 3 */
	"	movl $42, %eax\n"
	"	int $0x80\n"
	"	cli\n"				/* #GP in ring 3 */
	"2:	jmp 2b\n");

void gp_report(void)
{
	puts("tguest: syscall from ring 3: eax ");
	puthex(sys_eax);
	puts(" cs ");
	puthex(sys_cs & 0xffff);
	puts("\ntguest: #GP from ring 3: error ");
	puthex(gp_error);
	puts(" cs ");
	puthex(gp_cs & 0xffff);
	puts(" ss ");
	puthex(gp_ss & 0xffff);
	puts("\ntguest: now sysexit\n");
	__asm__ volatile("sysexit");
}

static void test_user(void)
{
	struct dtr g = { sizeof(user_gdt) - 1, (uint32_t)user_gdt };
	struct dtr d = { sizeof(idt_big) - 1, (uint32_t)idt_big };
	uint32_t base = (uint32_t)&tss, limit = sizeof(tss) - 1;
	uint32_t gate;

	tss.esp0 = (uint32_t)(kernel_stack + sizeof(kernel_stack));
	tss.ss0 = 0x18;
	tss.iomap_base = sizeof(tss);
	user_gdt[6] = (uint64_t)(limit & 0xffff) | ((uint64_t)(base & 0xffffff) << 16) |
		      (0x89ull << 40) | ((uint64_t)(base >> 24) << 56);
	gate = (uint32_t)sys_entry;	/* trap gate, DPL 3 */
	idt_big[0x80] = (uint64_t)(gate & 0xffff) | (0x10ull << 16) | (0xefull << 40) |
			((uint64_t)(gate >> 16) << 48);
	gate = (uint32_t)gp_entry;	/* interrupt gate, DPL 0 */
	idt_big[13] = (uint64_t)(gate & 0xffff) | (0x10ull << 16) | (0x8eull << 40) |
		      ((uint64_t)(gate >> 16) << 48);
	__asm__ volatile("lgdt %0" : : "m"(g));
	__asm__ volatile("lidt %0" : : "m"(d));
	__asm__ volatile("ltr %w0" : : "r"(0x30));
	puts("tguest: entering ring 3\n");
	__asm__ volatile("pushl $0x2b\n"
			 "pushl %0\n"
			 "pushl $0x202\n"
			 "pushl $0x23\n"
			 "pushl $user_code\n"
			 "iret"
			 : : "r"(user_stack + sizeof(user_stack)) : "memory");
}

static uint32_t page_dir[1024] __attribute__((aligned(4096)));

static void test_pagefault(void)
{
	struct dtr d = { sizeof(idt) - 1, (uint32_t)idt };
	uint32_t val, cr0;

	set_gate(14, pf_entry);
	__asm__ volatile("lidt %0" : : "m"(d));
	/* Paging on: 4 MiB identity pages for the first 16 MiB; the page at
	 * 32 MiB is left out, so touching it is a #PF for us to handle. */
	for (uint32_t i = 0; i < 4; i++)
		page_dir[i] = (i << 22) | 0x83;	/* P, W, PS */
	__asm__ volatile("movl %%cr4, %%eax; orl $0x10, %%eax; movl %%eax, %%cr4" ::: "eax");
	__asm__ volatile("movl %0, %%cr3" : : "r"(page_dir));
	__asm__ volatile("movl %%cr0, %0" : "=r"(cr0));
	__asm__ volatile("movl %0, %%cr0" : : "r"(cr0 | 0x80010000u));
	puts("tguest: paging on\n");
	__asm__ volatile("movl (%%ecx), %%eax" : "=a"(val) : "c"(0x02000000u) : "memory");
	puts("tguest: page fault handled: count ");
	puthex(pf_count);
	puts(" cr2 ");
	puthex(pf_cr2);
	puts(" error ");
	puthex(pf_error);
	puts("\n");
}

/* ---- a code segment with a small limit, for tguest=cslimit-* ------------ */
/* 0x20: code, base 0, limit 32 MiB - 1 (0x1fff pages); the test guest runs
 * at 1 MiB, so it holds the guest's code but not BEYOND_LIMIT. */
#define SMALL_CS	0x20
#define BEYOND_LIMIT	0x03000000u
static uint64_t limit_gdt[5] = {
	0, 0,
	0x00cf9a000000ffffull,	/* 0x10 flat code */
	0x00cf92000000ffffull,	/* 0x18 flat data */
	0x00c09a0000001fffull,	/* 0x20 code, limit 0x01ffffff */
};
/* The same, but 0x10 (the loaded CS) shrunk to 64 KiB, below our code. */
static uint64_t shrunk_gdt[4] = {
	0, 0,
	0x00409a000000ffffull,	/* 0x10 code, limit 0xffff, byte granular */
	0x00cf92000000ffffull,	/* 0x18 flat data */
};
volatile uint32_t gp13_error, gp13_eip;

void gp13_entry(void);
void gp13_report(void);
__asm__(".text\n"
	"gp13_entry:\n"			/* #GP at our CPL 0: error, eip, cs, eflags */
	"	movl (%esp), %eax\n"
	"	movl %eax, gp13_error\n"
	"	movl 4(%esp), %eax\n"
	"	movl %eax, gp13_eip\n"
	"	call gp13_report\n"
	"1:	jmp 1b\n");

void gp13_report(void)
{
	puts("tguest: #GP delivered: error ");
	puthex(gp13_error);
	puts(" eip ");
	puthex(gp13_eip);
	puts("\ntguest: now sysexit\n");
	__asm__ volatile("sysexit");
}

static void load_limit_gdt(void)
{
	struct dtr g = { sizeof(limit_gdt) - 1, (uint32_t)limit_gdt };

	__asm__ volatile("lgdt %0" : : "m"(g));
}

/* The IRET hypercall below: a faulting IRET made from outside the ROM is
 * reported at its int $0x82 (docs/VROM.md, "A faulting IRET"). */
extern const char cslimit_iret_int[];

static void test_cslimit_iret(void)
{
	struct dtr d = { sizeof(idt) - 1, (uint32_t)idt };
	uint32_t r;

	load_limit_gdt();
	set_gate(13, gp13_entry);
	__asm__ volatile("lidt %0" : : "m"(d));
	__asm__ volatile("int $0x82" : "=a"(r) : "D"(VMI_CALL_Init) : "memory");
	puts("tguest: VMI IRET to 0020:");
	puthex(BEYOND_LIMIT);
	puts(", beyond the limit 01ffffff, from ");
	puthex((uint32_t)cslimit_iret_int);
	puts("\n");
	/* [esp] = edi, then eip, cs, eflags */
	__asm__ volatile("pushl $0x2\n"
			 "pushl $0x20\n"
			 "pushl %0\n"
			 "pushl $0\n"
			 ".globl cslimit_iret_int\n"
			 "cslimit_iret_int:\n"
			 "int $0x82"
			 : : "r"(BEYOND_LIMIT), "D"(VMI_CALL_IRET) : "memory");
}

static void test_cslimit_gate(void)
{
	struct dtr d = { sizeof(idt) - 1, (uint32_t)idt };

	load_limit_gdt();
	/* #UD: interrupt gate to SMALL_CS:BEYOND_LIMIT; #GP: ours. */
	idt[6] = (uint64_t)(BEYOND_LIMIT & 0xffff) | ((uint64_t)SMALL_CS << 16) | (0x8eull << 40) |
		 ((uint64_t)(BEYOND_LIMIT >> 16) << 48);
	set_gate(13, gp13_entry);
	__asm__ volatile("lidt %0" : : "m"(d));
	puts("tguest: ud2 through a gate to 0020:");
	puthex(BEYOND_LIMIT);
	puts("\n");
	__asm__ volatile("ud2");
}

static void test_cslimit_lgdt(void)
{
	struct dtr g = { sizeof(shrunk_gdt) - 1, (uint32_t)shrunk_gdt };

	puts("tguest: lgdt with cs 0010 shrunk to 64 KiB\n");
	__asm__ volatile("lgdt %0" : : "m"(g));
	puts("tguest: still running on the cached cs\n");
}

/* ---- tguest=ldt ---------------------------------------------------------- */
/* Entry 0 (selector 0x4, 0x7 with RPL 3): a DPL 3 call gate to 0x10:ldt_ring0,
 * the classic way from ring 3 into ring 0; entry 1 (0xc): flat data, DPL 0. */
static uint64_t ldt_table[2];
static uint64_t ldt_gdt[8] = {
	0, 0,
	0x00cf9a000000ffffull,	/* 0x10 flat code */
	0x00cf92000000ffffull,	/* 0x18 flat data */
	0, 0, 0,
	0,			/* 0x38: the LDT, filled in */
};
volatile uint32_t ldt_gp_error, ldt_gp_count;

void ldt_gp_entry(void);
void ldt_ring0(void);
__asm__(".text\n"
	"ldt_gp_entry:\n"		/* #GP: error, eip, cs, eflags; skip the 7-byte lcall */
	"	pushl %eax\n"
	"	movl 4(%esp), %eax\n"
	"	movl %eax, ldt_gp_error\n"
	"	incl ldt_gp_count\n"
	"	popl %eax\n"
	"	addl $4, %esp\n"
	"	addl $7, (%esp)\n"
	"	iret\n"
	"ldt_ring0:\n"			/* never reached: the gate is not copied */
	"	movl $0xbad, %eax\n"
	"	lret\n");


static uint64_t call_gate(uint16_t sel, uint32_t off, unsigned dpl)
{
	return (uint64_t)(off & 0xffff) | ((uint64_t)sel << 16) |
	       ((uint64_t)(0x8c | dpl << 5) << 40) | ((uint64_t)(off >> 16) << 48);
}

static void test_ldt(void)
{
	struct dtr g = { sizeof(ldt_gdt) - 1, (uint32_t)ldt_gdt };
	struct dtr d = { sizeof(idt) - 1, (uint32_t)idt };
	uint32_t base = (uint32_t)ldt_table, limit = sizeof(ldt_table) - 1, r, eax = 0;
	uint64_t gate;

	ldt_table[0] = call_gate(0x10, (uint32_t)ldt_ring0, 3);
	ldt_table[1] = 0x00cf92000000ffffull;
	ldt_gdt[7] = (uint64_t)(limit & 0xffff) | ((uint64_t)(base & 0xffffff) << 16) |
		     (0x82ull << 40) | ((uint64_t)(base >> 24) << 56);
	set_gate(13, ldt_gp_entry);
	__asm__ volatile("lgdt %0" : : "m"(g));
	__asm__ volatile("lidt %0" : : "m"(d));
	__asm__ volatile("lldt %w0" : : "r"(0x38));
	__asm__ volatile("movw %w0, %%es\n\tmovw %%ds, %w0\n\tmovw %w0, %%es" : : "r"(0xc) : "memory");
	puts("tguest: LDT data segment 000c loaded\n");
	__asm__ volatile("lcall $0x7, $0" : "+a"(eax) : : "memory");
	puts("tguest: lcall through the LDT call gate: #GP count ");
	puthex(ldt_gp_count);
	puts(" error ");
	puthex(ldt_gp_error);
	puts(" eax ");
	puthex(eax);
	puts("\ntguest: VMI Init, then WriteLDTEntry 1 = a DPL 3 call gate\n");
	__asm__ volatile("int $0x82" : "=a"(r) : "D"(VMI_CALL_Init) : "memory");
	gate = call_gate(0x10, (uint32_t)ldt_ring0, 3);
	vmi_call5(VMI_CALL_WriteLDTEntry, base, 1, (uint32_t)gate, (uint32_t)(gate >> 32), 0);
}

/* ---- tguest=links -------------------------------------------------------- */
#define CLONES 70
static uint32_t hot_pt[1024] __attribute__((aligned(4096)));
static uint32_t links_pd[1024] __attribute__((aligned(4096)));
static uint32_t clone_pd[CLONES + 1][1024] __attribute__((aligned(4096)));

uint32_t vmi_call5(uint32_t call, uint32_t a, uint32_t d, uint32_t c, uint32_t b, uint32_t s)
{
	__asm__ volatile("int $0x82" : "+a"(a), "+d"(d), "+c"(c), "+b"(b), "+S"(s)
			 : "D"(call) : "memory", "cc");
	return a;
}

/* "prefix what value\n" in one instruction (rep outsb: one exit, so that
 * the lines of vCPUs taking turns mid-line never interleave), under a
 * lock: vCPUs running at once on two CPUs would interleave the batches
 * the hypervisor serves a long rep outsb in. */
static volatile uint32_t say_lock;

void say_value(const char *prefix, const char *what, uint32_t v)
{
	char line[112];
	const char *p = line;
	uint32_t n = 0;

	for (const char *s = prefix; *s && n < 80; s++)
		line[n++] = *s;
	for (const char *s = what; *s && n < 96; s++)
		line[n++] = *s;
	line[n++] = ' ';
	for (int i = 28; i >= 0; i -= 4)
		line[n++] = "0123456789abcdef"[(v >> i) & 15];
	line[n++] = '\r';
	line[n++] = '\n';
	while (__atomic_exchange_n(&say_lock, 1, __ATOMIC_ACQUIRE))
		__asm__ volatile("pause");
	__asm__ volatile("cld; rep outsb" : "+S"(p), "+c"(n) : "d"(COM1) : "memory", "cc");
	__atomic_store_n(&say_lock, 0, __ATOMIC_RELEASE);
}

static void test_links(void)
{
	uint32_t cr0, r;

	/* One table identity-maps the first 4 MiB (all of us), and every
	 * PDE below the reserved top names it: each 4 MiB is that 4 MiB. */
	for (uint32_t i = 0; i < 1024; i++)
		hot_pt[i] = (i << 12) | 0x63;			/* P, W, A, D */
	for (uint32_t i = 0; i < 1008; i++)
		links_pd[i] = (uint32_t)hot_pt | 0x23;		/* P, W, A */
	__asm__ volatile("movl %0, %%cr3" : : "r"(links_pd));
	__asm__ volatile("movl %%cr0, %0" : "=r"(cr0));
	__asm__ volatile("movl %0, %%cr0" : : "r"(cr0 | 0x80010000u));	/* PG, WP */
	puts("tguest: paging on, 1008 PDEs name one page table\n");
	__asm__ volatile("int $0x82" : "=a"(r) : "D"(VMI_CALL_Init) : "memory");
	for (uint32_t k = 0; k < CLONES; k++) {
		/* The copy Linux makes of the cloned PDEs, so that the
		 * audit compares the shadows with what the guest has. */
		for (uint32_t i = 0; i < 1008; i++)
			clone_pd[k][i] = links_pd[i];
		vmi_call5(VMI_CALL_AllocatePage, (uint32_t)clone_pd[k] >> 12, VMI_PAGE_PD,
			  (uint32_t)links_pd >> 12, 0, 1008);
		if (k % 16 == 15) {
			puts("tguest: directories announced: ");
			puthex(k + 1);
			puts("\n");
		}
	}
	puts("tguest: nothing stopped the link count\n");
	/* What a wrapped count would give away: the table's shadow freed
	 * while PDE 1 still links it, then reused for a shadow directory,
	 * whose entry 1023 maps the switcher's page table. */
	vmi_call5(VMI_CALL_ReleasePage, (uint32_t)hot_pt >> 12, VMI_PAGE_PT, 0, 0, 0);
	vmi_call5(VMI_CALL_AllocatePage, (uint32_t)clone_pd[CLONES] >> 12, VMI_PAGE_PD, 0, 0, 0);
	puts("tguest: through PDE 1, linear 007ff000 reads ");
	puthex(*(volatile uint32_t *)0x007ff000u);
	puts("\n");
}

/* ---- tguest=fuzz:N ------------------------------------------------------ */
static uint32_t rng;

static uint32_t next_random(void)
{
	return xorshift32(&rng);
}

/*
 * Scratch memory the well-formed calls point into: never our code, stack
 * or data, so that a call that writes guest memory (GetGDT, WriteGDTEntry,
 * SetPxE...) cannot damage the guest and end the run on its own.
 */
#define SCRATCH_SIZE 16384
static uint8_t scratch[SCRATCH_SIZE] __attribute__((aligned(4096)));

static uint32_t scratch_ptr(unsigned len)
{
	return (uint32_t)scratch + next_random() % (SCRATCH_SIZE - len + 1);
}

/* A garbage argument: mostly small numbers (counters, flags, ports,
 * indexes) or pointers into the scratch memory, one in ten anything at
 * all. */
static uint32_t fuzz_arg(void)
{
	uint32_t r = next_random(), kind = next_random() % 10;

	if (kind < 4)
		return r & 7;
	if (kind < 6)
		return r & 0x3ff;
	if (kind < 9)
		return scratch_ptr(8);
	return r;
}

static uint32_t parse_seed(const char *cmdline)
{
	const char *key = "tguest=fuzz:";
	uint32_t seed = 0;

	for (const char *p = cmdline; *p; p++) {
		const char *a = p, *b = key;

		while (*b && *a == *b)
			a++, b++;
		if (*b)
			continue;
		while (*a >= '0' && *a <= '9')
			seed = seed * 10 + (uint32_t)(*a++ - '0');
		return seed;
	}
	return 0;
}

uint32_t cmdline_number(const char *cmdline, const char *key, uint32_t def)
{
	for (const char *p = cmdline; *p; p++) {
		const char *a = p, *b = key;
		uint32_t n = 0;

		while (*b && *a == *b)
			a++, b++;
		if (*b || *a < '0' || *a > '9')
			continue;
		while (*a >= '0' && *a <= '9')
			n = n * 10 + (uint32_t)(*a++ - '0');
		return n;
	}
	return def;
}

struct vmi_regs { uint32_t call, a, d, c, b, s; };

static void vmi_call(struct vmi_regs *r)
{
	__asm__ volatile("int $0x82"
			 : "+a"(r->a), "+d"(r->d), "+c"(r->c), "+b"(r->b), "+S"(r->s)
			 : "D"(r->call) : "memory", "cc");
}

static uint32_t vmi_get(uint32_t call)
{
	struct vmi_regs r = { call, 0, 0, 0, 0, 0 };

	vmi_call(&r);
	return r.a;
}

/* The GDT the hypervisor loaded for us (VMI GetGDT, not sgdt: in ring 1
 * that reads the hypervisor's own), for SetGDT with a valid table. */
static uint8_t our_gdtr[6];

/*
 * A well-formed call: a call number the hypervisor implements, with
 * random arguments inside the call's contract (any value where the call
 * takes any value; pointers into the scratch memory; an existing counter,
 * a legal port, the control-register bits a guest may flip with paging
 * off).  Each must be answered; none may stop the guest.  Left out: the
 * calls that end or freeze a run by design (Halt with interrupts off,
 * Reboot, Shutdown), IRET (it transfers control), SetTR (we have no
 * TSS), EnableInterrupts (we have no IDT to take them), and the ports of
 * COM1 (our console) and the keyboard controller (0xFE there resets).
 */
static void well_formed(struct vmi_regs *r)
{
	static const uint8_t calls[] = {
		VMI_CALL_CPUID, VMI_CALL_WRMSR, VMI_CALL_RDMSR, VMI_CALL_SetGDT,
		VMI_CALL_SetIDT, VMI_CALL_SetLDT, VMI_CALL_GetGDT, VMI_CALL_GetIDT,
		VMI_CALL_GetLDT, VMI_CALL_GetTR, VMI_CALL_WriteGDTEntry,
		VMI_CALL_WriteLDTEntry, VMI_CALL_WriteIDTEntry,
		VMI_CALL_UpdateKernelStack, VMI_CALL_SetCR0, VMI_CALL_SetCR2,
		VMI_CALL_SetCR3, VMI_CALL_SetCR4, VMI_CALL_GetCR0, VMI_CALL_GetCR2,
		VMI_CALL_GetCR3, VMI_CALL_GetCR4, VMI_CALL_INVD, VMI_CALL_WBINVD,
		VMI_CALL_Pause, VMI_CALL_IODelay, VMI_CALL_SetLinearMapping,
		VMI_CALL_FlushDeferredCalls, VMI_CALL_SetDR, VMI_CALL_GetDR,
		VMI_CALL_RDTSC, VMI_CALL_CLTS, VMI_CALL_DisableInterrupts,
		VMI_CALL_GetInterruptMask, VMI_CALL_SetInterruptMask,
		VMI_CALL_SetPxE, VMI_CALL_GetPxE, VMI_CALL_SwapPxE,
		VMI_CALL_TestAndSetPxEBit, VMI_CALL_TestAndClearPxEBit,
		VMI_CALL_AllocatePage, VMI_CALL_ReleasePage, VMI_CALL_InvalPage,
		VMI_CALL_FlushTLB, VMI_CALL_INB, VMI_CALL_INW, VMI_CALL_IN,
		VMI_CALL_OUTB, VMI_CALL_OUTW, VMI_CALL_OUT,
		VMI_CALL_GetCycleFrequency, VMI_CALL_GetCycleCounter,
		VMI_CALL_SetAlarm, VMI_CALL_CancelAlarm, VMI_CALL_GetWallclockTime,
	};
	uint32_t call = calls[next_random() % sizeof(calls)];
	unsigned size;

	*r = (struct vmi_regs){ call, next_random(), next_random(), next_random(),
				next_random(), next_random() };
	switch (call) {
	case VMI_CALL_SetGDT:
		r->a = (uint32_t)our_gdtr;
		break;
	case VMI_CALL_SetIDT:		/* any table: nothing is delivered */
	case VMI_CALL_GetGDT:
	case VMI_CALL_GetIDT:
		r->a = scratch_ptr(6);
		break;
	case VMI_CALL_SetLDT:
		r->a = 0;		/* the only LDT vmi-hv supports */
		break;
	case VMI_CALL_WriteGDTEntry:
	case VMI_CALL_WriteLDTEntry:
	case VMI_CALL_WriteIDTEntry:	/* a table in the scratch memory */
		r->a = (uint32_t)scratch;
		r->d %= SCRATCH_SIZE / 8;
		break;
	case VMI_CALL_SetCR0:		/* PE stays, PG stays off */
		r->a = (vmi_get(VMI_CALL_GetCR0) ^ (r->a & 0x0005002a)) & ~0x80000000u;
		break;
	case VMI_CALL_SetCR3:		/* paging is off: any page of our memory */
		r->a = 0x00100000u + (r->a & 0x00eff000u);
		break;
	case VMI_CALL_SetCR4:		/* TSD, DE, PSE, PGE, PCE, OSFXSR; never PAE */
		r->a = vmi_get(VMI_CALL_GetCR4) ^ (r->a & 0x0000039c);
		break;
	case VMI_CALL_SetInterruptMask:
		r->a &= ~0x200u;	/* the IF stays clear */
		break;
	case VMI_CALL_SetPxE:
	case VMI_CALL_GetPxE:
	case VMI_CALL_SwapPxE:
	case VMI_CALL_TestAndSetPxEBit:
	case VMI_CALL_TestAndClearPxEBit:
		r->a = scratch_ptr(4) & ~3u;
		break;
	case VMI_CALL_INB: case VMI_CALL_INW: case VMI_CALL_IN:
	case VMI_CALL_OUTB: case VMI_CALL_OUTW: case VMI_CALL_OUT:
		size = call == VMI_CALL_INB || call == VMI_CALL_OUTB ? 1 :
		       call == VMI_CALL_INW || call == VMI_CALL_OUTW ? 2 : 4;
		if (call == VMI_CALL_INB || call == VMI_CALL_INW || call == VMI_CALL_IN) {
			r->a = next_random() % (0x400 - size + 1);	/* IN: port in eax */
			break;
		}
		do {		/* OUT: port in edx, value in eax; not 0x64, not COM1 */
			r->d = next_random() % (0x3f8 - size + 1);
		} while (r->d <= 0x64 && r->d + size > 0x64);
		break;
	case VMI_CALL_GetCycleCounter:
		r->a %= 3;		/* REAL, AVAILABLE, STOLEN */
		break;
	case VMI_CALL_SetAlarm:		/* REAL or AVAILABLE, one-shot or periodic */
		r->a &= VMI_ALARM_IS_PERIODIC | 1;
		r->b |= 1;		/* a periodic alarm needs a period */
		break;
	case VMI_CALL_CancelAlarm:
		r->a &= 1;
		break;
	}
}

#define FUZZ_CALLS	300
#define FUZZ_GARBAGE	100

/*
 * First FUZZ_CALLS well-formed calls, each answered (the test counts
 * them); then garbage: any call number with any arguments, which the
 * hypervisor must answer or refuse by stopping us with a diagnostic (a
 * VMI call has no error return), never by hurting itself.  A guest that
 * survives FUZZ_GARBAGE of those calls Shutdown.
 */
static void fuzz(uint32_t seed)
{
	struct vmi_regs r;
	uint32_t init;

	rng = seed * 2654435761u | 1;
	__asm__ volatile("int $0x82" : "=a"(init) : "D"(VMI_CALL_Init) : "memory");
	r = (struct vmi_regs){ VMI_CALL_GetGDT, (uint32_t)our_gdtr, 0, 0, 0, 0 };
	vmi_call(&r);
	for (int i = 0; i < FUZZ_CALLS; i++) {
		well_formed(&r);
		vmi_call(&r);
	}
	puts("tguest: fuzz: ");
	puthex(FUZZ_CALLS);
	puts(" well-formed calls answered; now garbage\n");
	for (int i = 0; i < FUZZ_GARBAGE; i++) {
		/* Mostly calls the hypervisor answers, now and then any
		 * number (an unimplemented one stops the guest). */
		static const uint8_t answered[] = {
			VMI_CALL_CPUID, VMI_CALL_WRMSR, VMI_CALL_RDMSR, VMI_CALL_SetGDT,
			VMI_CALL_SetIDT, VMI_CALL_SetLDT, VMI_CALL_SetTR, VMI_CALL_GetGDT,
			VMI_CALL_GetIDT, VMI_CALL_WriteGDTEntry, VMI_CALL_WriteIDTEntry,
			VMI_CALL_UpdateKernelStack, VMI_CALL_SetCR0, VMI_CALL_SetCR3,
			VMI_CALL_SetCR4, VMI_CALL_GetCR2, VMI_CALL_SetDR, VMI_CALL_GetDR,
			VMI_CALL_EnableInterrupts, VMI_CALL_DisableInterrupts,
			VMI_CALL_SetInterruptMask, VMI_CALL_IRET, VMI_CALL_SetPxE,
			VMI_CALL_GetPxE, VMI_CALL_SwapPxE, VMI_CALL_TestAndSetPxEBit,
			VMI_CALL_TestAndClearPxEBit, VMI_CALL_AllocatePage,
			VMI_CALL_ReleasePage, VMI_CALL_InvalPage, VMI_CALL_FlushTLB,
			VMI_CALL_INB, VMI_CALL_OUTB, VMI_CALL_IN, VMI_CALL_OUT,
			VMI_CALL_GetCycleCounter, VMI_CALL_SetAlarm, VMI_CALL_CancelAlarm,
		};
		uint32_t call = next_random() % 8 ? answered[next_random() % sizeof(answered)]
						  : next_random() % (NUM_VMI_CALLS + 8);

		r = (struct vmi_regs){ call, fuzz_arg(), fuzz_arg(), fuzz_arg(), fuzz_arg(), fuzz_arg() };
		/* Halt with interrupts off and the shutdowns end a run
		 * without telling us anything; the fuzz is about garbage. */
		if (call == VMI_CALL_Halt || call == VMI_CALL_Reboot || call == VMI_CALL_Shutdown)
			continue;
		puts("tguest: fuzz call ");
		puthex(call);
		puts(" args ");
		puthex(r.a);
		putc(' ');
		puthex(r.d);
		putc(' ');
		puthex(r.c);
		puts("\n");
		vmi_call(&r);
	}
	puts("tguest: fuzz survived\n");
	__asm__ volatile("int $0x82" : : "D"(VMI_CALL_Shutdown) : "memory");
}

void tguest_main(const uint8_t *boot_params)
{
	const char *cmdline = (const char *)*(const uint32_t *)(boot_params + 0x228);

	/* The 8250 set-up earlyprintk does: 8N1, no interrupts. */
	outb(COM1 + 3, 0x80);
	outb(COM1 + 0, 1);
	outb(COM1 + 1, 0);
	outb(COM1 + 3, 0x03);
	outb(COM1 + 1, 0);
	puts("tguest: hello from the test guest, command line: ");
	puts(cmdline);
	puts("\n");

	if (hostile_main(boot_params, cmdline) || floods_main(cmdline) || exits_main(cmdline) ||
	    smp_main(cmdline) || smp_ends_main(cmdline) || smp_mmu_main(cmdline) || smp_queue_main(cmdline) ||
	    rates_main(cmdline) || swscan_main(cmdline) ||
	    smpfuzz_main(boot_params, cmdline) || alarm_wrap_main(cmdline)) {
		/* a hostile case, the idle, busy or exit-heavy guest: never returns here */
	} else if (has_word(cmdline, "tguest=pagefault")) {
		test_pagefault();
		puts("tguest: now sysexit\n");
		__asm__ volatile("sysexit");
	} else if (has_word(cmdline, "tguest=unsupported")) {
		puts("tguest: executing sysexit\n");
		__asm__ volatile("sysexit");
	} else if (has_word(cmdline, "tguest=triple")) {
		struct dtr d = { 0, 0 };

		puts("tguest: IDT limit 0, then ud2\n");
		__asm__ volatile("lidt %0; ud2" : : "m"(d));
	} else if (has_word(cmdline, "tguest=outside")) {
		puts("tguest: reading guest-physical 0x3f000000\n");
		(void)*(volatile uint32_t *)0x3f000000;
	} else if (has_word(cmdline, "tguest=switcher")) {
		volatile uint32_t *sw = (volatile uint32_t *)0xffc00000u;

		puts("tguest: switcher word 0: ");
		puthex(*sw);
		puts("; writing it\n");
		*sw = 0xdeadbeef;
	} else if (has_word(cmdline, "tguest=port")) {
		puts("tguest: port 0x3e8 reads ");
		puthex(inb(0x3e8));
		puts("; writing port 0x5000\n");
		outb(0x5000, 0x42);
	} else if (has_word(cmdline, "tguest=romwrite")) {
		volatile uint16_t *rom = (volatile uint16_t *)0xc0000u;

		puts("tguest: ROM signature ");
		puthex(*rom);
		puts("; writing it\n");
		*rom = 0x1234;
	} else if (cmdline_number(cmdline, "tguest=sfuzz:", 0)) {
		sfuzz_run(boot_params, cmdline_number(cmdline, "tguest=sfuzz:", 0),
			  cmdline_number(cmdline, "sfuzz_calls=", 100000), has_word(cmdline, "sfuzz_trace"));
	} else if (parse_seed(cmdline)) {
		puts("tguest: fuzzing the VMI calls\n");
		fuzz(parse_seed(cmdline));
	} else if (has_word(cmdline, "tguest=cslimit-iret")) {
		test_cslimit_iret();
	} else if (has_word(cmdline, "tguest=cslimit-gate")) {
		test_cslimit_gate();
	} else if (has_word(cmdline, "tguest=cslimit-lgdt")) {
		test_cslimit_lgdt();
		puts("tguest: now sysexit\n");
		__asm__ volatile("sysexit");
	} else if (has_word(cmdline, "tguest=ldt")) {
		test_ldt();
	} else if (has_word(cmdline, "tguest=links")) {
		test_links();
	} else if (has_word(cmdline, "tguest=user")) {
		test_user();
	} else if (has_word(cmdline, "tguest=trapped")) {
		uint32_t r, cr0;

		puts("tguest: VMI Init, then 3 x mov %cr0, %eax, then Shutdown\n");
		__asm__ volatile("int $0x82" : "=a"(r) : "D"(VMI_CALL_Init) : "memory");
		for (int i = 0; i < 3; i++)
			__asm__ volatile("movl %%cr0, %0" : "=r"(cr0));
		__asm__ volatile("int $0x82" : : "D"(VMI_CALL_Shutdown) : "memory");
	} else if (has_word(cmdline, "tguest=vmi")) {
		uint32_t r, d;

		puts("tguest: VMI Init\n");
		__asm__ volatile("int $0x82" : "=a"(r) : "D"(VMI_CALL_Init) : "memory");
		puts("tguest: Init returned ");
		puthex(r);
		puts("; now SetPxELong through int $0x82\n");
		d = 0;
		__asm__ volatile("int $0x82" : "=a"(r), "+d"(d) : "D"(VMI_CALL_SetPxELong), "a"(0x20), "c"(0) : "memory");
		puts("tguest: SetPxELong returned eax ");
		puthex(r);
		puts(" edx ");
		puthex(d);
		puts("\n");
		__asm__ volatile("int $0x82" : : "D"(VMI_CALL_Shutdown) : "memory");
	}
	puts("tguest: nothing caught me\n");
}
