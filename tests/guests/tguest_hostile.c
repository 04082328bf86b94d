/*
 * tguest_hostile.c - tguest=h:NAME: one hostile act per case, for the
 * hostile-guest suite (docs/HV.md, "Tests", tests/cases/test_hv_hostile.py,
 * which lists every case with the diagnostic it expects).
 *
 * Every case starts from the same environment (h_env): a GDT of ours
 * (kernel code and data, user code and data, a TSS, an LDT, free slots),
 * an IDT whose 32 exception gates all lead to one reporter, the TSS
 * loaded, and optionally paging on (the first 16 MiB identity-mapped
 * through four page tables) before VMI Init, so that the hypervisor's
 * shadows serve.  Then the case does its one thing.  What must follow is
 * one of:
 *   - the hypervisor stops us with its diagnostic;
 *   - the CPU's (or the hypervisor's) fault is delivered to us: the
 *     reporter prints "hostile: delivered vector V error E eip X cs C"
 *     and calls Shutdown;
 *   - the act is harmless by design: the case prints what it saw and
 *     "hostile: survived", then Shutdown.
 *
 * The str-* cases make the string port I/O calls and refuse makes calls
 * a vmi_refuse= ROM answers unsupported, all through the ROM's slots at
 * 0xC0000 as Linux calls them (rom3), not with a bare int $0x82: the
 * hypervisor re-executes the slot's int $0x82 and refuses by rewriting
 * slots, so the slots themselves must be what runs.
 *
 * tguest=idle is the second guest the suite runs beside each case: VMI
 * Init, its UART's receive interrupt on, then Halt; each byte typed to it
 * is answered with "idle: got X", so the test sees it still runs.
 */
#include <stdint.h>
#include "tguest.h"
#include "io.h"
#include "vmi_abi.h"
#include "segments.h"

#define P	0x001u
#define W	0x002u
#define A	0x020u
#define D	0x040u
#define PS	0x080u

#define PAGE __attribute__((aligned(4096)))
static uint32_t h_pd[1024] PAGE;
static uint32_t h_id[4][1024] PAGE;
static uint32_t h_pt[2][1024] PAGE;	/* spare tables for the cases */
static uint32_t h_pd2[1024] PAGE;	/* a second directory */
static uint8_t h_kstack[4096] PAGE;	/* the TSS's ring-0 stack */
static uint8_t h_ustack[4096] PAGE;
static uint8_t h_page[4096] PAGE;	/* a page to map and touch */

/* Selectors of h_gdt. */
#define KCS	0x10
#define KDS	0x18
#define UCS	0x23
#define UDS	0x2b
#define TSS	0x30
#define LDT	0x38
#define FREE	0x40	/* 0x40 and 0x48: the cases' own (0x50 is the hypervisor's) */

static uint64_t h_gdt[10] = {
	0, 0,
	0x00cf9a000000ffffull,	/* 0x10 kernel code */
	0x00cf92000000ffffull,	/* 0x18 kernel data */
	0x00cffa000000ffffull,	/* 0x20 user code */
	0x00cff2000000ffffull,	/* 0x28 user data */
};
static uint64_t h_ldt[4];
static uint64_t h_idt[256];

/* The TSS with an I/O bitmap after it that allows every port. */
static struct __attribute__((packed)) {
	struct tss32 t;
	uint8_t iomap[8192 / 8 + 1];
} h_tss;

struct __attribute__((packed)) dtr { uint16_t limit; uint32_t base; };

static uint32_t npages;

static uint64_t seg(uint32_t base, uint32_t limit, uint32_t access, uint32_t flags)
{
	return (uint64_t)(limit & 0xffff) | (uint64_t)(base & 0xffffff) << 16 | (uint64_t)access << 40 |
	       (uint64_t)((limit >> 16) & 0xf) << 48 | (uint64_t)flags << 52 | (uint64_t)(base >> 24) << 56;
}

static uint64_t gate(uint16_t sel, uint32_t off, uint32_t access)
{
	return (uint64_t)(off & 0xffff) | (uint64_t)sel << 16 | (uint64_t)access << 40 |
	       (uint64_t)(off >> 16) << 48;
}

static void say(const char *what, uint32_t v)
{
	say_value("hostile: ", what, v);
}

__attribute__((noreturn)) static void survived(void)
{
	puts("hostile: survived\n");
	vmi_call5(VMI_CALL_Shutdown, 0, 0, 0, 0, 0);
	for (;;)
		;
}

/* ---- the reporter: every exception gate leads here ---------------------- */
volatile uint32_t h_vec, h_err, h_eip, h_cs;
void h_report(void);
void h_stub_common(void);
/* Vectors with an error code: 8, 10-14, 17, 21. */
#define NOERR(n) "h_stub" #n ": pushl $0\n pushl $" #n "\n jmp h_stub_common\n"
#define ERR(n)   "h_stub" #n ": pushl $" #n "\n jmp h_stub_common\n"
__asm__(".text\n"
	NOERR(0) NOERR(1) NOERR(2) NOERR(3) NOERR(4) NOERR(5) NOERR(6) NOERR(7)
	ERR(8) NOERR(9) ERR(10) ERR(11) ERR(12) ERR(13) ERR(14) NOERR(15)
	NOERR(16) ERR(17) NOERR(18) NOERR(19) NOERR(20) ERR(21) NOERR(22) NOERR(23)
	NOERR(24) NOERR(25) NOERR(26) NOERR(27) NOERR(28) NOERR(29) NOERR(30) NOERR(31)
	"h_stub_common:\n"
	"	movl $0x18, %eax\n"
	"	movl %eax, %ds\n"
	"	movl %eax, %es\n"
	"	popl h_vec\n"
	"	popl h_err\n"
	"	popl h_eip\n"
	"	popl h_cs\n"
	"	call h_report\n"
	"1:	jmp 1b\n"
	".data\n"
	"h_stubs:\n"
	"	.long h_stub0, h_stub1, h_stub2, h_stub3, h_stub4, h_stub5, h_stub6, h_stub7\n"
	"	.long h_stub8, h_stub9, h_stub10, h_stub11, h_stub12, h_stub13, h_stub14, h_stub15\n"
	"	.long h_stub16, h_stub17, h_stub18, h_stub19, h_stub20, h_stub21, h_stub22, h_stub23\n"
	"	.long h_stub24, h_stub25, h_stub26, h_stub27, h_stub28, h_stub29, h_stub30, h_stub31\n"
	".text\n");
extern const uint32_t h_stubs[32];

void h_report(void)
{
	uint32_t cr2 = vmi_call5(VMI_CALL_GetCR2, 0, 0, 0, 0, 0);

	puts("hostile: delivered vector ");
	puthex(h_vec);
	puts(" error ");
	puthex(h_err);
	puts(" eip ");
	puthex(h_eip);
	puts(" cs ");
	puthex(h_cs & 0xffff);
	if (h_vec == 14) {
		puts(" cr2 ");
		puthex(cr2);
	}
	puts("\n");
	vmi_call5(VMI_CALL_Shutdown, 0, 0, 0, 0, 0);
}

/* ---- the environment --------------------------------------------------- */

static uint32_t e820_top(const uint8_t *bp)
{
	uint32_t top = 0;

	for (unsigned i = 0; i < bp[0x1e8] && i < 128; i++) {
		const uint8_t *e = bp + 0x2d0 + i * 20;

		if (*(const uint32_t *)(e + 16) == 1 && *(const uint32_t *)e + *(const uint32_t *)(e + 8) > top)
			top = *(const uint32_t *)e + *(const uint32_t *)(e + 8);
	}
	return top;
}

static void h_env(int paging)
{
	struct dtr g = { sizeof(h_gdt) - 1, (uint32_t)h_gdt }, d = { sizeof(h_idt) - 1, (uint32_t)h_idt };
	uint32_t r, cr0;

	h_tss.t.esp0 = (uint32_t)(h_kstack + sizeof(h_kstack));
	h_tss.t.ss0 = KDS;
	h_tss.t.iomap_base = sizeof(h_tss.t);
	h_gdt[6] = seg((uint32_t)&h_tss, sizeof(h_tss) - 1, 0x89, 0);
	h_gdt[7] = seg((uint32_t)h_ldt, sizeof(h_ldt) - 1, 0x82, 0);
	for (unsigned v = 0; v < 32; v++)
		h_idt[v] = gate(KCS, h_stubs[v], 0x8e);
	__asm__ volatile("lgdt %0" : : "m"(g));
	__asm__ volatile("lidt %0" : : "m"(d));
	__asm__ volatile("ltr %w0" : : "r"(TSS));
	if (paging) {
		for (unsigned t = 0; t < 4; t++) {
			for (unsigned i = 0; i < 1024; i++)
				h_id[t][i] = (t << 22 | i << 12) | P | W | A | D | 4;
			h_pd[t] = (uint32_t)h_id[t] | P | W | A | 4;
		}
		__asm__ volatile("movl %0, %%cr3" : : "r"(h_pd));
		__asm__ volatile("movl %%cr0, %0" : "=r"(cr0));
		__asm__ volatile("movl %0, %%cr0" : : "r"(cr0 | 0x80010000u));
	}
	__asm__ volatile("int $0x82" : "=a"(r) : "D"(VMI_CALL_Init) : "memory");
	if (paging) {
		vmi_call5(VMI_CALL_AllocatePage, (uint32_t)h_pt[0] >> 12, VMI_PAGE_PT, 0, 0, 0);
		vmi_call5(VMI_CALL_AllocatePage, (uint32_t)h_pt[1] >> 12, VMI_PAGE_PT, 0, 0, 0);
	}
}

/* To ring 3 at fn, on our user stack. */
__attribute__((noreturn)) static void to_ring3(void (*fn)(void))
{
	__asm__ volatile("pushl %0\n pushl %1\n pushl $0x202\n pushl %2\n pushl %3\n iret"
			 : : "i"(UDS), "r"(h_ustack + sizeof(h_ustack)), "i"(UCS), "r"(fn) : "memory");
	__builtin_unreachable();
}

/* The linear address 32 MiB + n pages, through PDE 8 -> h_pt[0]. */
#define FUZZ_LIN(n)	(0x02000000u + ((n) << 12))

static void map8(uint32_t pde, uint32_t pte0)
{
	vmi_call5(VMI_CALL_SetPxE, (uint32_t)&h_pt[0][0], pte0, 0, 0, 0);
	vmi_call5(VMI_CALL_SetPxE, (uint32_t)&h_pd[8], pde, 0, 0, 0);
}

static uint32_t rd(uint32_t lin)
{
	uint32_t v;

	__asm__ volatile("movl (%1), %0" : "=r"(v) : "r"(lin) : "memory");
	return v;
}

static void wr(uint32_t lin, uint32_t v)
{
	__asm__ volatile("movl %0, (%1)" : : "r"(v), "r"(lin) : "memory");
}

static volatile uint32_t *shared_word(uint32_t off)
{
	return (volatile uint32_t *)(*(const uint32_t *)(0xc0000u + VMI_OFF_VROMHeader_reserved3) + off);
}

static void vmi_iret(uint32_t eip, uint32_t cs, uint32_t eflags, uint32_t esp, uint32_t ss)
{
	/* [esp] = edi, then the iret frame. */
	__asm__ volatile("pushl %4\n pushl %3\n pushl %2\n pushl %1\n pushl %0\n pushl $0\n int $0x82"
			 : : "r"(eip), "r"(cs), "r"(eflags), "r"(esp), "r"(ss), "D"(VMI_CALL_IRET) : "memory");
}

void h_ring1_landing(void);
__asm__(".text\nh_ring1_landing:\n call h_landed\n1: jmp 1b\n");
void h_landed(void)
{
	uint32_t cs, fl;

	__asm__ volatile("movl %%cs, %0; pushfl; popl %1" : "=r"(cs), "=r"(fl));
	say("landed: cs", cs);
	say("landed: eflags", fl);
	survived();
}

/* ---- ring-3 bodies ------------------------------------------------------ */
void u_int82(void);
void u_kbd_reset(void);
void u_debug_exit(void);
void u_int_dpl0(void);
void u_int80(void);
__asm__(".text\n"
	"u_int82: movl $4, %edi\n int $0x82\n 1: jmp 1b\n"
	"u_kbd_reset: movb $0xfe, %al\n outb %al, $0x64\n 1: jmp 1b\n"
	"u_debug_exit: movb $0x11, %al\n outb %al, $0xf4\n 1: jmp 1b\n"
	"u_int_dpl0: int $0x40\n 1: jmp 1b\n"
	"u_int80: int $0x80\n 1: jmp 1b\n");

/* ---- the cases ---------------------------------------------------------- */

static void write_gdt(unsigned idx, uint64_t d)
{
	vmi_call5(VMI_CALL_WriteGDTEntry, (uint32_t)h_gdt, idx, (uint32_t)d, (uint32_t)(d >> 32), 0);
}

static void c_gdt_dpl0_code(void)
{
	write_gdt(FREE >> 3, seg(0, 0xfffff, 0x9a, 0xc));	/* DPL 0 code: runs as DPL 1 */
	__asm__ volatile("ljmp %0, $h_ring1_landing" : : "i"(FREE));
}

static void c_gdt_conforming(void)
{
	/* Conforming DPL 0 code: a far call from ring 3 would stay in ring 3
	 * on a CPU; from ring 1 it runs at ring 1. */
	write_gdt(FREE >> 3, seg(0, 0xfffff, 0x9e, 0xc));
	__asm__ volatile("ljmp %0, $h_ring1_landing" : : "i"(FREE));
}

static void c_gdt_call_gate(void) { write_gdt(FREE >> 3, gate(KCS, (uint32_t)h_ring1_landing, 0xec)); }
static void c_gdt_task_gate(void) { write_gdt(FREE >> 3, gate(TSS, 0, 0x85)); }
static void c_gdt_int_gate(void) { write_gdt(FREE >> 3, gate(KCS, (uint32_t)h_ring1_landing, 0x8e)); }

static void c_ldt_call_gate(void)
{
	h_ldt[0] = gate(KCS, (uint32_t)h_ring1_landing, 0xec);
	vmi_call5(VMI_CALL_SetLDT, LDT, 0, 0, 0, 0);
	__asm__ volatile("lcall $0x7, $0");		/* not copied: #GP(4) */
}

static void c_ldt_gate_write(void)
{
	uint64_t g = gate(KCS, (uint32_t)h_ring1_landing, 0xec);

	vmi_call5(VMI_CALL_SetLDT, LDT, 0, 0, 0, 0);
	vmi_call5(VMI_CALL_WriteLDTEntry, (uint32_t)h_ldt, 1, (uint32_t)g, (uint32_t)(g >> 32), 0);
}

/* A data segment whose base lies in the reserved top: a write through it
 * reaches the switcher's linear addresses. */
static void c_seg_reserved_top(void)
{
	write_gdt(FREE >> 3, seg(0xffc00000u, 0xfffff, 0x92, 0xc));
	__asm__ volatile("movw %w0, %%es\n movl $0xdeadbeef, %%es:0" : : "r"(FREE) : "memory");
}

/* Expand-down data, limit 0 (offsets 1-4 GiB), so a flat segment in
 * another shape: a write through it into the switcher must still stop us
 * (TCG does not check data-segment limits, so a beyond-the-limit access
 * shows nothing here; the CPU copy of the descriptor is the guest's). */
static void c_seg_expand_down(void)
{
	write_gdt(FREE >> 3, seg(0, 0, 0x96, 0xc));
	__asm__ volatile("movw %w0, %%es\n movl $0xdeadbeef, %%es:0xffc00010" : : "r"(FREE) : "memory");
}

/* A data segment loaded in gs, an exit with it (the hypervisor resumes
 * us through it and may remember that it passed), then its descriptor
 * made not present while still loaded.  On the entry after that write the
 * hypervisor must see that gs no longer loads (its iret would fault at
 * ring 0) and null it; the CPU keeps no cached copy for us across it. */
static void c_gdt_loaded_revoked(void)
{
	uint32_t gs;

	write_gdt(FREE >> 3, seg(0, 0xfffff, 0x92, 0xc));
	__asm__ volatile("movw %w0, %%gs" : : "r"(FREE));
	vmi_call5(VMI_CALL_GetCR0, 0, 0, 0, 0, 0);
	vmi_call5(VMI_CALL_GetCR0, 0, 0, 0, 0, 0);
	write_gdt(FREE >> 3, seg(0, 0xfffff, 0x12, 0xc));	/* not present */
	__asm__ volatile("movl %%gs, %0" : "=r"(gs));
	say("gs after its descriptor went", gs);
	survived();
}

static void c_farjmp_user_code(void) { __asm__ volatile("ljmp %0, $h_ring1_landing" : : "i"(UCS)); }

/* The hypervisor's own GDT slots (segments.h) and a TSS named where a
 * code or data segment belongs, with a GDT as long as Linux's (so the
 * slots are within its limit, empty): natively each is #GP(selector),
 * which the guest's own handler gets (an IDT gate's: after the #UD it
 * served). */
static uint64_t h_gdt_full[HV_GDT_ENTRIES];

static void full_gdt(void)
{
	struct dtr g = { sizeof(h_gdt_full) - 1, (uint32_t)h_gdt_full };

	for (unsigned i = 0; i < sizeof(h_gdt) / sizeof(h_gdt[0]); i++)
		h_gdt_full[i] = h_gdt[i];
	__asm__ volatile("lgdt %0" : : "m"(g));
}

static void c_farjmp_hv_cs(void)
{
	full_gdt();
	__asm__ volatile("ljmp %0, $h_ring1_landing" : : "i"(HV_CS));
}

static void c_mov_ds_hv_ds(void)
{
	full_gdt();
	__asm__ volatile("movw %w0, %%ds" : : "r"(HV_DS));
}

static void ud_through_gate(uint16_t sel)
{
	full_gdt();
	h_idt[6] = gate(sel, h_stubs[6], 0x8e);
	__asm__ volatile("ud2");
}

static void c_idt_gate_hv_cs(void) { ud_through_gate(HV_CS); }
static void c_idt_gate_hv_tss(void) { ud_through_gate(HV_TSS_SEL); }
static void c_idt_gate_tss(void) { ud_through_gate(TSS); }

static void c_idt_not_present(void)
{
	h_idt[6] &= ~(0x80ull << 40);
	__asm__ volatile("ud2");
}

/* idt-not-present-loop: ud2 again and again with vector 6's gate not
 * present; each failed delivery raises #NP, whose handler skips the ud2
 * and returns.  The hypervisor's line for each failed delivery is the
 * guest's to cause at will: it must be logged within a limit. */
#define NP_LOOPS 200
volatile uint32_t h_np_taken;
__asm__(".text\n"
	"h_np_skip:\n"
	"	addl $4, %esp\n"		/* the error code */
	"	incl h_np_taken\n"
	"	addl $2, (%esp)\n"		/* past the ud2 */
	"	iret\n");
extern char h_np_skip[];

static void c_idt_not_present_loop(void)
{
	h_idt[6] &= ~(0x80ull << 40);
	h_idt[11] = gate(KCS, (uint32_t)h_np_skip, 0x8e);
	for (unsigned i = 0; i < NP_LOOPS; i++)
		__asm__ volatile("ud2");
	say("#NP taken for the ud2s", h_np_taken);
	survived();
}

static void c_idt_task_gate(void)
{
	h_idt[6] = gate(TSS, 0, 0x85);
	__asm__ volatile("ud2");
}

static void c_idt_16bit_gate(void)
{
	h_idt[6] = gate(KCS, h_stubs[6], 0x86);
	__asm__ volatile("ud2");
}

static void c_idt_data_selector(void)
{
	h_idt[6] = gate(KDS, h_stubs[6], 0x8e);
	__asm__ volatile("ud2");
}

static void c_idt_limit(void)
{
	struct dtr d = { 6 * 8 - 1, (uint32_t)h_idt };	/* ends below #UD's gate */

	vmi_call5(VMI_CALL_SetIDT, (uint32_t)&d, 0, 0, 0, 0);
	__asm__ volatile("ud2");
}

static void c_idt_user_int_dpl0(void)
{
	h_idt[0x40] = gate(KCS, h_stubs[6], 0x8e);	/* DPL 0: int $0x40 from ring 3 is #GP */
	to_ring3(u_int_dpl0);
}

static void c_ring3_int82(void) { to_ring3(u_int82); }
static void c_ring3_kbd_reset(void) { to_ring3(u_kbd_reset); }
static void c_ring3_debug_exit(void) { to_ring3(u_debug_exit); }

/* The guest TSS's I/O bitmap allows every port: the CPU never reads it
 * (the TSS loaded is the hypervisor's), so ring 3 still gets #GP. */
static void c_tss_iomap(void) { to_ring3(u_debug_exit); }

/* Delivery from ring 3 onto a kernel stack that is not mapped. */
static void c_tss_esp0_unmapped(void)
{
	h_idt[0x80] = gate(KCS, h_stubs[3], 0xee);
	vmi_call5(VMI_CALL_UpdateKernelStack, KDS, 0x3f000000u, 0, 0, 0);
	to_ring3(u_int80);
}

/*
 * The direct int $0x80 gate (vcpu_syscall.c) onto a kernel stack whose
 * entry the guest has not accessed yet: the CPU, at CPL 3, pushes the
 * frame with a supervisor write that the shadow does not map yet (error
 * code 2: no U bit).  The fill must walk the guest's tables as the
 * kernel's access it is (the page is supervisor-only); walked as a user
 * access (the frame's CPL) it became a user #PF (error 7) on the kernel
 * stack.  The handler, at ring 1, lands.
 */
static uint8_t h_fresh_kstack[4096] PAGE;

static void c_int80_fresh_kstack(void)
{
	struct dtr d = { sizeof(h_idt) - 1, (uint32_t)h_idt };

	if (!(*shared_word(VMI_OFF_vmi_shared_page_features) & VMI_SHARED_F_INT80))
		say("no direct int $0x80 gate offered; features", *shared_word(VMI_OFF_vmi_shared_page_features));
	*shared_word(VMI_OFF_vmi_shared_page_guest_flags) |= VMI_SHARED_G_INT80;
	h_idt[0x80] = gate(KCS, (uint32_t)h_ring1_landing, 0xee);
	vmi_call5(VMI_CALL_SetIDT, (uint32_t)&d, 0, 0, 0, 0);	/* the gate is read at SetIDT */
	/* Supervisor, writable, dirty but not accessed: no shadow entry. */
	map8((uint32_t)h_pt[0] | P | W | A | 4, (uint32_t)h_fresh_kstack | P | W | D);
	vmi_call5(VMI_CALL_UpdateKernelStack, KDS, FUZZ_LIN(1), 0, 0, 0);
	to_ring3(u_int80);
}

/*
 * The direct int $0x80 gate set up through SetIDT, then a plain lidt of
 * a second IDT whose vector 0x80 is not present: the CPU reads the IDT
 * lidt named, so the user's int $0x80 is #NP(0x80 * 8 + 2), not an entry
 * through the first IDT's gate.
 */
static uint64_t h_idt2[256];

static void c_int80_gate_after_lidt(void)
{
	struct dtr d = { sizeof(h_idt) - 1, (uint32_t)h_idt }, d2 = { sizeof(h_idt2) - 1, (uint32_t)h_idt2 };

	*shared_word(VMI_OFF_vmi_shared_page_guest_flags) |= VMI_SHARED_G_INT80;
	h_idt[0x80] = gate(KCS, (uint32_t)h_ring1_landing, 0xee);
	vmi_call5(VMI_CALL_SetIDT, (uint32_t)&d, 0, 0, 0, 0);
	vmi_call5(VMI_CALL_UpdateKernelStack, KDS, (uint32_t)(h_kstack + sizeof(h_kstack)), 0, 0, 0);
	for (unsigned v = 0; v < 256; v++)
		h_idt2[v] = h_idt[v];
	h_idt2[0x80] &= ~(0x80ull << 40);
	__asm__ volatile("lidt %0" : : "m"(d2));
	to_ring3(u_int80);
}

/* UpdateKernelStack naming a user data segment (DPL 3) as ss0. */
static void c_ukstack_user_ss(void)
{
	h_idt[0x80] = gate(KCS, h_stubs[3], 0xee);
	vmi_call5(VMI_CALL_UpdateKernelStack, UDS, (uint32_t)(h_kstack + 4096), 0, 0, 0);
	to_ring3(u_int80);
}

/* The guest TSS's ss0 a user data segment (DPL 3), no UpdateKernelStack. */
static void c_tss_ss0_user(void)
{
	h_idt[0x80] = gate(KCS, h_stubs[3], 0xee);
	h_tss.t.ss0 = UDS;
	to_ring3(u_int80);
}

/* A kernel stack in the reserved top: the vCPU's own register page. */
static void c_ukstack_switcher(void)
{
	h_idt[0x80] = gate(KCS, h_stubs[3], 0xee);
	vmi_call5(VMI_CALL_UpdateKernelStack, KDS, 0xffd01000u, 0, 0, 0);
	to_ring3(u_int80);
}

/* Ring 1 on a stack that is not mapped: #UD cannot be pushed. */
static void c_stack_unmapped(void)
{
	__asm__ volatile("movl $0x3f000000, %esp\n ud2");
}

/* Ring 1 on the vCPU's register page in the switcher, then #UD. */
static void c_stack_switcher(void)
{
	__asm__ volatile("movl $0xffd01000, %esp\n ud2");
}

static void c_iret_rpl0(void) { vmi_iret((uint32_t)h_ring1_landing, KCS, 0x2, 0, 0); }
static void c_iret_vm(void) { vmi_iret((uint32_t)h_ring1_landing, KCS | 1, 0x20002, 0, 0); }
static void c_iret_nt(void) { vmi_iret((uint32_t)h_ring1_landing, KCS | 1, 0x4002, 0, 0); }
static void c_iret_rf(void) { vmi_iret((uint32_t)h_ring1_landing, KCS | 1, 0x10002, 0, 0); }

/* IOPL 3 asked for: if it were granted, ring 1 could reach the machine's
 * ports; a port the hypervisor has no device for must still trap. */
void h_iopl_landing(void);
__asm__(".text\nh_iopl_landing:\n movb $0x42, %al\n outb %al, $0x70\n movw $0x5000, %dx\n outb %al, %dx\n 1: jmp 1b\n");
static void c_iret_iopl(void) { vmi_iret((uint32_t)h_iopl_landing, KCS | 1, 0x3002, 0, 0); }
static void c_iret_user_ss_rpl(void) { vmi_iret((uint32_t)u_int82, UCS, 0x202, (uint32_t)h_ustack + 4096, KDS); }
static void c_iret_eip_limit(void)
{
	write_gdt(FREE >> 3, seg(0, 0x1fff, 0x9a, 0xc));	/* 32 MiB */
	vmi_iret(0x03000000u, FREE | 1, 0x2, 0, 0);
}

static void c_cr0_pg_off(void) { vmi_call5(VMI_CALL_SetCR0, vmi_call5(VMI_CALL_GetCR0, 0, 0, 0, 0, 0) & ~0x80000000u, 0, 0, 0, 0); }
static void c_cr0_wp_off(void) { vmi_call5(VMI_CALL_SetCR0, vmi_call5(VMI_CALL_GetCR0, 0, 0, 0, 0, 0) & ~0x10000u, 0, 0, 0, 0); }
static void c_cr4_pae(void)
{
	vmi_call5(VMI_CALL_SetCR4, vmi_call5(VMI_CALL_GetCR4, 0, 0, 0, 0, 0) | 0x20, 0, 0, 0, 0);
	say("cr4 after SetCR4(PAE)", vmi_call5(VMI_CALL_GetCR4, 0, 0, 0, 0, 0));
	survived();
}

static void c_cr4_vme_pvi(void)
{
	uint32_t cr4;

	__asm__ volatile("movl %%cr4, %0" : "=r"(cr4));
	__asm__ volatile("movl %0, %%cr4" : : "r"(cr4 | 0x3));	/* VME, PVI */
	__asm__ volatile("movl %%cr4, %0" : "=r"(cr4));
	say("cr4 after mov with VME|PVI", cr4);
	outb(0x5000, 0);	/* a stop, whose dump shows the real CR4 */
}

static void c_msr_sysenter_cs(void)
{
	uint64_t v;

	vmi_call5(VMI_CALL_WRMSR, 0x174, KCS, 0, 0, 0);		/* SYSENTER_CS = our ring-0 code */
	v = vmi_call5(VMI_CALL_RDMSR, 0x174, 0, 0, 0, 0);
	say("SYSENTER_CS reads", (uint32_t)v);
	survived();
}

static void c_msr_unknown_rdmsr(void) { __asm__ volatile("rdmsr" : : "c"(0xc0000080) : "eax", "edx"); }
static void c_msr_apic_base(void) { __asm__ volatile("wrmsr" : : "c"(0x1b), "a"(0xfee00000 | 0x800), "d"(0)); survived(); }

/* A hardware breakpoint on the switcher: SetDR keeps it virtual, so
 * neither our read of the switcher nor the hypervisor trips over it. */
static void c_dr7_switcher(void)
{
	vmi_call5(VMI_CALL_SetDR, 0, 0xffc00000u, 0, 0, 0);
	vmi_call5(VMI_CALL_SetDR, 7, 0x000f0003u, 0, 0, 0);	/* L0|G0, RW0 = 11 (read/write) */
	say("dr7 reads", vmi_call5(VMI_CALL_GetDR, 7, 0, 0, 0, 0));
	say("switcher word 0 reads", rd(0xffc00000u));
	survived();
}

/* mov to a debug register: the emulator has no such op (SetDR is the
 * paravirtual way): stopped as unsupported. */
static void c_dr_mov(void) { __asm__ volatile("movl %0, %%dr7" : : "r"(0x000f0003u)); }

static void c_dr_bad_number(void) { vmi_call5(VMI_CALL_SetDR, 9, 0x1, 0, 0, 0); survived(); }

static void c_port_pci_config(void)
{
	uint32_t v;

	__asm__ volatile("outl %0, %w1" : : "a"(0x80000000u), "Nd"(0xcf8));
	__asm__ volatile("inl %w1, %0" : "=a"(v) : "Nd"(0xcfc));
	say("PCI config 0:0.0 reads", v);
	survived();
}

static void c_port_kbd_reset(void) { outb(0x64, 0xfe); }
static void c_port_debug_exit(void)
{
	outb(0xf4, 0x11);	/* QEMU's isa-debug-exit: status (0x11 << 1) | 1 if it got there */
	outb(0x501, 0x11);
	survived();
}
static void c_port_high(void) { outb(0x5000, 0x42); }

/* ---- page tables ---------------------------------------------------------- */

static void c_pt_outside_frame(void)
{
	map8((uint32_t)h_pt[0] | P | W | A, npages << 12 | P | W | A | D);
	rd(FUZZ_LIN(0));
}

static void c_pt_far_frame(void)
{
	map8((uint32_t)h_pt[0] | P | W | A, 0xfffff000u | P | A);
	rd(FUZZ_LIN(0));
}

static void c_pt_reserved_top(void)
{
	vmi_call5(VMI_CALL_SetPxE, (uint32_t)&h_pd[1020], (uint32_t)h_pt[1] | P | W | A, 0, 0, 0);
	vmi_call5(VMI_CALL_SetPxE, (uint32_t)&h_pt[1][0], (uint32_t)h_page | P | W | A | D, 0, 0, 0);
	rd(0xff000000u);
}

static void c_pt_switcher_pde(void)
{
	/* PDE 1023 is the switcher's: a guest PDE there is never used. */
	vmi_call5(VMI_CALL_SetPxE, (uint32_t)&h_pd[1023], (uint32_t)h_pt[1] | P | W | A, 0, 0, 0);
	vmi_call5(VMI_CALL_SetPxE, (uint32_t)&h_pt[1][0], (uint32_t)h_page | P | W | A | D, 0, 0, 0);
	wr(0xffc00000u, 0x12345678);
}

static void c_pt_recursive(void) { map8((uint32_t)h_pd | P | W | A, 0); }

static void c_pt_pd_as_pt(void)
{
	for (unsigned t = 0; t < 4; t++)
		h_pd2[t] = h_pd[t];
	vmi_call5(VMI_CALL_AllocatePage, (uint32_t)h_pd2 >> 12, VMI_PAGE_PD, 0, 0, 0);
	map8((uint32_t)h_pd2 | P | W | A, 0);
}

static void c_pt_double_announce(void)
{
	map8((uint32_t)h_pt[0] | P | W | A, (uint32_t)h_page | P | W | A | D);
	vmi_call5(VMI_CALL_AllocatePage, (uint32_t)h_pt[0] >> 12, VMI_PAGE_PT, 0, 0, 0);
	vmi_call5(VMI_CALL_AllocatePage, (uint32_t)h_pt[0] >> 12, VMI_PAGE_PT, 0, 0, 0);
	wr(FUZZ_LIN(0), 0x1234);
	say("through the twice-announced table", rd((uint32_t)h_page));
	survived();
}

static void c_pt_release_linked(void)
{
	map8((uint32_t)h_pt[0] | P | W | A, (uint32_t)h_page | P | W | A | D);
	wr(FUZZ_LIN(0), 0x5678);
	vmi_call5(VMI_CALL_ReleasePage, (uint32_t)h_pt[0] >> 12, VMI_PAGE_PT, 0, 0, 0);
	say("after ReleasePage of the linked table, it still reads", rd(FUZZ_LIN(0)));
	survived();
}

/* The same, but nothing touches the region again: the guest's PDE
 * still names the released table, whose shadow is gone. */
static void c_pt_release_linked_idle(void)
{
	map8((uint32_t)h_pt[0] | P | W | A, (uint32_t)h_page | P | W | A | D);
	wr(FUZZ_LIN(0), 0x5678);
	vmi_call5(VMI_CALL_ReleasePage, (uint32_t)h_pt[0] >> 12, VMI_PAGE_PT, 0, 0, 0);
	survived();
}

static void c_pt_release_loaded_pd(void) { vmi_call5(VMI_CALL_ReleasePage, (uint32_t)h_pd >> 12, VMI_PAGE_PD, 0, 0, 0); }
static void c_pt_announce_outside(void) { vmi_call5(VMI_CALL_AllocatePage, npages, VMI_PAGE_PT, 0, 0, 0); }
static void c_pt_clone_range(void) { vmi_call5(VMI_CALL_AllocatePage, (uint32_t)h_pd2 >> 12, VMI_PAGE_PD, (uint32_t)h_pd >> 12, 1000, 100); }
static void c_pt_cr3_outside(void) { vmi_call5(VMI_CALL_SetCR3, npages << 12, 0, 0, 0, 0); }
static void c_pt_cr3_table(void) { vmi_call5(VMI_CALL_SetCR3, (uint32_t)h_pt[0], 0, 0, 0, 0); }
static void c_pt_4m_page(void)
{
	vmi_call5(VMI_CALL_SetPxE, (uint32_t)&h_pd[8], 0x02000000u | P | W | A | PS, 0, 0, 0);
	rd(FUZZ_LIN(0));
}

/* A page table in the read-only option-ROM area (the VMI ROM
 * itself): through an entry there that is present without A, the walker
 * would have to set A in the ROM. */
static void c_pt_rom_table(void)
{
	const uint32_t *rom = (const uint32_t *)0x000c0000u;
	unsigned i;

	for (i = 0; i < 1024; i++)
		if ((rom[i] & (P | A | PS)) == P && (rom[i] >> 12) < npages)
			break;
	say("ROM word with P and not A at index", i);
	vmi_call5(VMI_CALL_SetPxE, (uint32_t)&h_pd[8], 0x000c0000u | P | W | A, 0, 0, 0);
	rd(FUZZ_LIN(i));
}

static void c_pt_not_announced_flags(void) { vmi_call5(VMI_CALL_AllocatePage, (uint32_t)h_pt[0] >> 12, VMI_PAGE_PAE | VMI_PAGE_PT, 0, 0, 0); }

/* ---- the shared page's queue ---------------------------------------------- */

static void c_queue_count(void)
{
	*shared_word(VMI_OFF_vmi_shared_page_pxe_count) = VMI_SHARED_PXE_QUEUE_LEN + 1;
	vmi_call5(VMI_CALL_FlushTLB, 0, 0, 0, 0, 0);
}

static void c_queue_count_negative(void)
{
	*shared_word(VMI_OFF_vmi_shared_page_pxe_count) = 0xffffffffu;
	vmi_call5(VMI_CALL_FlushTLB, 0, 0, 0, 0, 0);
}

static void c_queue_bad_address(void)
{
	*shared_word(VMI_OFF_vmi_shared_page_pxe_queue) = 0x3f000000u;
	*shared_word(VMI_OFF_vmi_shared_page_pxe_count) = 1;
	vmi_call5(VMI_CALL_FlushTLB, 0, 0, 0, 0, 0);
}

static void c_queue_switcher_address(void)
{
	/* A queued "entry" in the hypervisor's own page: it translates (the
	 * switcher is mapped) but is no page table of the guest's. */
	*shared_word(VMI_OFF_vmi_shared_page_pxe_queue) = 0xffc00000u;
	*shared_word(VMI_OFF_vmi_shared_page_pxe_count) = 1;
	vmi_call5(VMI_CALL_FlushTLB, 0, 0, 0, 0, 0);
	survived();
}

/* An entry queued, then changed to not present before the exit: the
 * drain must derive what is there, so the access after it faults.  A
 * host interrupt may drain the queue between the queueing and the change
 * (the change would then go untold): the count shows it, and we retry. */
static void c_queue_changed(void)
{
	map8((uint32_t)h_pt[0] | P | W | A, (uint32_t)h_page | P | W | A | D);
	rd(FUZZ_LIN(0));
	do {
		h_pt[0][0] = (uint32_t)h_page | P | W | A | D;
		*shared_word(VMI_OFF_vmi_shared_page_pxe_queue) = (uint32_t)&h_pt[0][0];
		*shared_word(VMI_OFF_vmi_shared_page_pxe_count) = 1;
		h_pt[0][0] = 0;
	} while (*shared_word(VMI_OFF_vmi_shared_page_pxe_count) != 1);
	vmi_call5(VMI_CALL_FlushTLB, 0, 0, 0, 0, 0);
	rd(FUZZ_LIN(0));
}

/* ---- round 3: queued lifecycle calls ---- */

/* The ROM's own slot for call n, called as Linux does (regparm(3), the
 * rest on the stack), so F_PTLIFE queues it without an exit. */
typedef void (*rom_call5)(uint32_t a, uint32_t d, uint32_t c, uint32_t b, uint32_t s)
	__attribute__((regparm(3)));
#define ROM_SLOT(n)	((rom_call5)(0xc0000u + (n) * VROM_CALL_LEN))
#define QCALL(n)	(VMI_SHARED_PXE_CALL | (uint32_t)(n) << 2)

/* Put words[0..n-1] in the queue as the ROM would and let the next exit
 * drain them; again if an exit came between (it drains what is there
 * and sets the count to 0).  after() runs once the count is set. */
static void queue_words(const uint32_t *words, uint32_t n, void (*after)(void))
{
	do {
		for (uint32_t i = 0; i < n; i++) {
			shared_word(VMI_OFF_vmi_shared_page_pxe_queue)[i] = words[i];
			shared_word(VMI_OFF_vmi_shared_page_pxe_site)[i] = 0xc0de0000u + i;
		}
		*shared_word(VMI_OFF_vmi_shared_page_pxe_count) = n;
		if (after)
			after();
	} while (*shared_word(VMI_OFF_vmi_shared_page_pxe_count) != n);
	vmi_call5(VMI_CALL_GetCR3, 0, 0, 0, 0, 0);	/* an exit: the drain */
}

/* The released directory's page, reused as data before the drain: PDE 8
 * now "names" our loaded directory as a page table, which the drain must
 * not derive (the queue releases the page after that write). */
static void reuse_pd2_as_data(void) { h_pd2[8] = (uint32_t)h_pd | P | W | A; }

static void c_life_release_reused(void)
{
	const uint32_t q[] = { (uint32_t)&h_pd2[8] | VMI_SHARED_PXE_SET,
			       QCALL(VMI_CALL_ReleasePage), (uint32_t)h_pd2 >> 12, VMI_PAGE_PD };

	vmi_call5(VMI_CALL_AllocatePage, (uint32_t)h_pd2 >> 12, VMI_PAGE_PD, 0, 0, 0);
	h_pd2[8] = 0;
	queue_words(q, 4, reuse_pd2_as_data);
	map8((uint32_t)h_pt[0] | P | W | A, (uint32_t)h_page | P | W | A | D);
	wr(FUZZ_LIN(0), 0x4242);
	say("released directory reused as data before the drain; 02000000 reads", rd(FUZZ_LIN(0)));
	survived();
}

/* One page announced as a page table and as a page directory in one
 * batch, then used as a table: the second announcement wins, and the
 * PDE that links the page as a table afterwards is a rule break. */
static void c_life_pt_and_pd(void)
{
	const uint32_t q[] = { QCALL(VMI_CALL_AllocatePage), (uint32_t)h_pt[1] >> 12, VMI_PAGE_PT, 0, 0, 0,
			       QCALL(VMI_CALL_AllocatePage), (uint32_t)h_pt[1] >> 12, VMI_PAGE_PD, 0, 0, 0 };

	h_pt[1][0] = (uint32_t)h_page | P | W | A | D;
	queue_words(q, 12, 0);
	say("announced as PT and PD in one batch; frame", (uint32_t)h_pt[1] >> 12);
	vmi_call5(VMI_CALL_SetPxE, (uint32_t)&h_pd[8], (uint32_t)h_pt[1] | P | W | A, 0, 0, 0);
}

/* 512 lifecycle calls through the ROM without an exit of their own (the
 * queue takes 149 ReleasePages at a time; a full one is the hypercall),
 * then the table is used. */
static void c_life_512(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		ROM_SLOT(VMI_CALL_ReleasePage)((uint32_t)h_pt[0] >> 12, VMI_PAGE_PT, 0, 0, 0);
		ROM_SLOT(VMI_CALL_AllocatePage)((uint32_t)h_pt[0] >> 12, VMI_PAGE_PT, 0, 0, 0);
	}
	say("512 lifecycle calls queued; queue holds", *shared_word(VMI_OFF_vmi_shared_page_pxe_count));
	map8((uint32_t)h_pt[0] | P | W | A, (uint32_t)h_page | P | W | A | D);
	wr(FUZZ_LIN(0), 0x5120);
	say("after 512 lifecycle calls, 02000000 reads", rd(FUZZ_LIN(0)));
	survived();
}

/* A queue that ends inside a call's arguments. */
static void c_life_cut_short(void)
{
	const uint32_t q[] = { QCALL(VMI_CALL_AllocatePage), (uint32_t)h_pt[1] >> 12, VMI_PAGE_PT };

	queue_words(q, 3, 0);
}

/* A call the ROM never queues. */
static void c_life_not_queued(void)
{
	const uint32_t q[] = { QCALL(VMI_CALL_SetCR3), (uint32_t)h_pd };

	queue_words(q, 2, 0);
}

/* A run of InvalPages after entry writes queued by the ROM (F_INVAL): 16
 * pages remapped from their own frames to h_page through the ROM's
 * SetPxE, then flushed through the ROM's InvalPage, as Linux flushes a
 * range.  Every page must then read h_page: the first InvalPage found
 * the queue full and made the hypercall, which drained it; the others
 * had nothing to do (the VMI calls line shows at most one).  The old
 * frames, 8 MiB up, are written through the identity map first. */
#define RUN_BASE	0x800u

static void c_life_inval_run(void)
{
	uint32_t same = 0;

	for (uint32_t i = 0; i < 16; i++) {
		wr((RUN_BASE + i) << 12, 0xaaaa0000u + i);
		vmi_call5(VMI_CALL_SetPxE, (uint32_t)&h_pt[0][i], (RUN_BASE + i) << 12 | P | W | A | D, 0, 0, 0);
	}
	vmi_call5(VMI_CALL_SetPxE, (uint32_t)&h_pd[8], (uint32_t)h_pt[0] | P | W | A, 0, 0, 0);
	for (uint32_t i = 0; i < 16; i++)
		rd(FUZZ_LIN(i));		/* in the shadow now */
	wr((uint32_t)h_page, 0x1616);
	for (uint32_t i = 0; i < 16; i++)
		ROM_SLOT(VMI_CALL_SetPxE)((uint32_t)&h_pt[0][i], (uint32_t)h_page | P | W | A | D, 0, 0, 0);
	for (uint32_t i = 0; i < 16; i++)
		ROM_SLOT(VMI_CALL_InvalPage)(FUZZ_LIN(i), 0, 0, 0, 0);
	for (uint32_t i = 0; i < 16; i++)
		same += rd(FUZZ_LIN(i)) == 0x1616;
	say("pages reading the new frame after 16 queued writes and 16 InvalPages", same);
	survived();
}

/* ---- the shared page's 8259 and alarm state (docs/VROM.md, "The 8259s and
 * the alarm without an exit") ------------------------------------------------ */

#define PIC_WORD(field, chip) shared_word(VMI_OFF_vmi_shared_page_##field + 4 * (chip))

/* A mask no 8259 has: the ROM stores bytes. */
static void c_pic_mask_wide(void)
{
	*PIC_WORD(pic_imr, 0) = 0x1ff;
	vmi_call5(VMI_CALL_FlushTLB, 0, 0, 0, 0, 0);
	survived();
}

/* An in-service bit the hypervisor never set: an EOI can only clear. */
static void c_pic_isr_forged(void)
{
	*PIC_WORD(pic_isr, 1) = 0x40;
	vmi_call5(VMI_CALL_FlushTLB, 0, 0, 0, 0, 0);
	survived();
}

/* The master in its initialisation (ICW1 made, ICW2 due), the ready bit
 * and a mask forged: the hypervisor takes nothing from a chip it did not
 * publish as ready, and the guest's own INB of the mask (the hypercall
 * then) reads the 0 that ICW1 left. */
static void c_pic_ready_forged(void)
{
	vmi_call5(VMI_CALL_OUTB, 0x11, 0x20, 0, 0, 0);
	*PIC_WORD(pic_ready, 0) = 3;
	*PIC_WORD(pic_imr, 0) = 0xab;
	say("master mask after a forged ready bit", vmi_call5(VMI_CALL_INB, 0x21, 0, 0, 0, 0));
}

/* alarm_lazy written directly, past the ROM and its floor: an expiry in
 * the past and one far away.  The hypervisor takes them as SetAlarm calls
 * (raised to the minimum distance) and puts a fresh token back. */
static void c_alarm_lazy_garbage(void)
{
	volatile uint32_t *lazy = shared_word(VMI_OFF_vmi_shared_page_alarm_lazy);

	lazy[0] = 1, lazy[1] = 0;
	lazy[2] = 0xffffffffu, lazy[3] = 0x7fffffffu;
	vmi_call5(VMI_CALL_FlushTLB, 0, 0, 0, 0, 0);
	say("alarm_lazy high words after the exit", lazy[1] & lazy[3]);
}

/* ---- frame budgets (docs/MEMORY.md, "Frame budgets") ------------------------------ */

/* Guest frames from 16 MiB up: zero pages, mapped by no table of ours, to
 * announce as tables by the thousand. */
#define FLOOD_BASE	0x1000u
#define FLOOD_COUNT	4000u
/* Frames 8-16 MiB: mapped by the identity tables, so the guest writes them. */
#define MAPPED_BASE	0x800u

static void flood_directories(void)
{
	for (uint32_t i = 0; i < FLOOD_COUNT; i++)
		vmi_call5(VMI_CALL_AllocatePage, FLOOD_BASE + i, VMI_PAGE_PD, 0, 0, 0);
}

/* After a flood: the loaded directory still maps, and a new mapping made
 * through SetPxE still works. */
static uint32_t still_maps(void)
{
	map8((uint32_t)h_pt[0] | P | W | A, (uint32_t)h_page | P | W | A | D);
	wr(FUZZ_LIN(0), 0x1234);
	return rd(FUZZ_LIN(0));
}

/* 4000 directories, 2 frames of shadow each: twice the budget.  The
 * shadows evict within it; the guest then holds what it has (spinning),
 * so the second guest allocates while this one holds its budget. */
static void c_budget_pd_flood(void)
{
	flood_directories();
	say("4000 page directories announced; 02000000 reads", still_maps());
	puts("hostile: holding\n");
	for (;;)
		;
}

/* Page tables that nothing links: evicted within the budget. */
static void c_budget_pt_flood(void)
{
	for (uint32_t i = 0; i < FLOOD_COUNT; i++)
		vmi_call5(VMI_CALL_AllocatePage, FLOOD_BASE + i, VMI_PAGE_PT, 0, 0, 0);
	say("4000 page tables announced; 02000000 reads", still_maps());
	survived();
}

/* 2000 directories that each clone the identity PDEs (2 frames each and
 * 4 links to the same tables), then CR3 on the last one: evicted within
 * the budget, rebuilt on demand. */
static void c_budget_clone_flood(void)
{
	const uint32_t n = 2000;
	uint32_t *pd = 0;

	for (uint32_t i = 0; i < n; i++) {
		pd = (uint32_t *)((MAPPED_BASE + i) << 12);
		for (unsigned t = 0; t < 4; t++)
			pd[t] = h_pd[t];
		vmi_call5(VMI_CALL_AllocatePage, MAPPED_BASE + i, VMI_PAGE_PD, (uint32_t)h_pd >> 12, 0, 4);
	}
	vmi_call5(VMI_CALL_SetCR3, (uint32_t)pd, 0, 0, 0, 0);
	h_page[0] = 0x42;
	say("2000 cloned directories announced; through the last one, h_page reads", rd((uint32_t)h_page));
	survived();
}

/* Two directories of 1008 tables each: the loaded one and one being
 * announced, more than the budget holds.  The loaded directory's tables
 * are a cache too (unlinked, linked again at a fault): the announcement
 * is made, and the loaded directory still maps. */
static void c_budget_two_directories(void)
{
	uint32_t *a = (uint32_t *)(MAPPED_BASE << 12), *b = a + 1024;
	uint32_t next = MAPPED_BASE + 2;

	for (unsigned i = 0; i < 4; i++)
		a[i] = b[i] = h_pd[i];
	for (unsigned i = 4; i < 1008; i++)
		a[i] = (next++ << 12) | P | W | A | 4;
	vmi_call5(VMI_CALL_AllocatePage, MAPPED_BASE, VMI_PAGE_PD, 0, 0, 0);
	vmi_call5(VMI_CALL_SetCR3, (uint32_t)a, 0, 0, 0, 0);
	say("directory of 1008 tables loaded; h_page reads", rd((uint32_t)h_page));
	for (unsigned i = 4; i < 1008; i++)
		b[i] = (next++ << 12) | P | W | A | 4;
	vmi_call5(VMI_CALL_AllocatePage, MAPPED_BASE + 1, VMI_PAGE_PD, 0, 0, 0);
	h_page[0] = 0x77;
	say("second directory of 1008 tables announced; h_page reads", rd((uint32_t)h_page));
	survived();
}

static volatile uint32_t ldt_word = 0xabcd;

/* The budget filled by a flood, then the first LDT: its frames come from
 * the guest's own budget, which its shadows give back to. */
static void c_budget_ldt_after_flood(void)
{
	uint32_t v;

	flood_directories();
	h_ldt[1] = seg(0, 0xfffff, 0xf2, 0xc);		/* flat data, DPL 3 */
	vmi_call5(VMI_CALL_SetLDT, LDT, 0, 0, 0, 0);
	__asm__ volatile("movw %w1, %%fs\n movl %%fs:(%2), %0" : "=r"(v) : "r"(0x0f), "r"(&ldt_word) : "memory");
	say("after 4000 page directories, the LDT's segment reads", v);
	survived();
}

/* ---- string port I/O: the VMI INS/OUTS calls -------------------------------- */

/* A call through the guest's ROM slot, as Linux makes it (regparm(3):
 * eax, edx, ecx; eax, ecx, edx clobbered): returns eax. */
static uint32_t rom3(uint32_t call, uint32_t a, uint32_t d, uint32_t c)
{
	uint32_t fn = 0xc0000u + call * VROM_CALL_LEN;

	__asm__ volatile("call *%3" : "+a"(a), "+d"(d), "+c"(c) : "r"(fn) : "memory", "cc");
	return a;
}

static uint8_t s_buf[12288] PAGE;
static uint8_t h_page2[4096] PAGE;
static const char s_msg[] = "string: hello through OUTSB\n";

static void fill(uint8_t *p, unsigned n, uint8_t v)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = v;
}

static uint32_t get32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/* How many of n bytes at p are v. */
static uint32_t count_of(const uint8_t *p, unsigned n, uint8_t v)
{
	uint32_t k = 0;

	for (unsigned i = 0; i < n; i++)
		k += p[i] == v;
	return k;
}

static void c_str_io(void)
{
	uint32_t r, fn = 0xc0000u + VMI_CALL_OUTSB * VROM_CALL_LEN, a, d, c;

	r = rom3(VMI_CALL_OUTSB, (uint32_t)s_msg, 0x3f8, sizeof(s_msg) - 1);
	say("OUTSB returned", r);
	/* The CMOS index port reads back the index; the keyboard status
	 * port reads 0x01 (vcpu_io.c). */
	outb(0x70, 0x0b);
	fill(s_buf, 8, 0x5a);
	r = rom3(VMI_CALL_INSB, (uint32_t)s_buf, 0x70, 5);
	say("INSB port 70 x5 returned", r);
	say("INSB port 70 bytes 0-3", get32(s_buf));
	say("INSB port 70 bytes 4-7", get32(s_buf + 4));
	fill(s_buf, 10001, 0x5a);
	r = rom3(VMI_CALL_INSB, (uint32_t)s_buf, 0x64, 10000);
	say("INSB port 64 x10000 returned", r);
	say("INSB port 64 x10000: bytes 01", count_of(s_buf, 10000, 0x01));
	say("INSB port 64 x10000: byte after", s_buf[10000]);
	/* An absent device (denied, logged): all ones. */
	fill(s_buf, 16, 0x5a);
	r = rom3(VMI_CALL_INSW, (uint32_t)s_buf, 0x3e8, 3);
	say("INSW port 3e8 x3 returned", r);
	say("INSW port 3e8 bytes 0-3", get32(s_buf));
	say("INSW port 3e8 bytes 4-7", get32(s_buf + 4));
	fill(s_buf, 16, 0x5a);
	r = rom3(VMI_CALL_INS, (uint32_t)s_buf, 0x3e8, 2);
	say("INS port 3e8 x2 returned", r);
	say("INS port 3e8 bytes 4-7", get32(s_buf + 4));
	say("INS port 3e8 bytes 8-11", get32(s_buf + 8));
	/* OUTSW and OUTS to the quiet POST port. */
	say("OUTSW port 80 x3 returned", rom3(VMI_CALL_OUTSW, (uint32_t)s_buf, 0x80, 3));
	say("OUTS port 80 x3 returned", rom3(VMI_CALL_OUTS, (uint32_t)s_buf, 0x80, 3));
	/* Count 0: nothing, not even the buffer is looked at. */
	say("INSB count 0 at an unmapped buffer returned", rom3(VMI_CALL_INSB, 0x3f000000u, 0x64, 0));
	/* DF set: still forward. */
	a = (uint32_t)"string: forward with DF set\n";
	d = 0x3f8;
	c = 28;
	__asm__ volatile("std\n call *%3\n cld" : "+a"(a), "+d"(d), "+c"(c) : "r"(fn) : "memory", "cc");
	say("OUTSB with DF set returned", a);
	survived();
}

/* A #PF on the buffer, fixed by the guest's handler: the call goes on. */
volatile uint32_t s_pf_count, s_pf_cr2, s_pf_error, s_pf_eip, s_pf_eax, s_pf_ecx, s_pf_edi;
void s_pf_entry(void);
void s_pf_fix(uint32_t *regs);
__asm__(".text\n"
	"s_pf_entry:\n"
	"	pushal\n"
	"	pushl %esp\n"
	"	call s_pf_fix\n"
	"	addl $4, %esp\n"
	"	popal\n"
	"	addl $4, %esp\n"		/* the error code */
	"	iret\n");

void s_pf_fix(uint32_t *regs)
{
	/* pushal: edi, esi, ebp, esp, ebx, edx, ecx, eax; then error, eip */
	s_pf_count++;
	s_pf_cr2 = vmi_call5(VMI_CALL_GetCR2, 0, 0, 0, 0, 0);
	s_pf_error = regs[8];
	s_pf_eip = regs[9];
	s_pf_eax = regs[7];
	s_pf_ecx = regs[6];
	s_pf_edi = regs[0];
	if (s_pf_count > 1) {
		say("page fault again at", s_pf_cr2);
		survived();
	}
	vmi_call5(VMI_CALL_SetPxE, (uint32_t)&h_pt[0][1], (uint32_t)h_page2 | P | W | A | D, 0, 0, 0);
	vmi_call5(VMI_CALL_InvalPage, FUZZ_LIN(1), 0, 0, 0, 0);
}

static void c_str_pf_resume(void)
{
	uint32_t r, slot = 0xc0000u + VMI_CALL_INSB * VROM_CALL_LEN;

	fill(h_page, 4096, 0x5a);
	fill(h_page2, 4096, 0x5a);
	map8((uint32_t)h_pt[0] | P | W | A, (uint32_t)h_page | P | W | A | D);	/* page 1 absent */
	h_idt[14] = gate(KCS, (uint32_t)s_pf_entry, 0x8e);
	r = rom3(VMI_CALL_INSB, FUZZ_LIN(0) + 4000, 0x64, 200);
	say("INSB across an absent page returned", r);
	say("page faults", s_pf_count);
	say("fault cr2", s_pf_cr2);
	say("fault error", s_pf_error);
	say("fault eip in the INSB slot at", s_pf_eip - slot);
	say("fault eip bytes", *(const uint8_t *)s_pf_eip | *(const uint8_t *)(s_pf_eip + 1) << 8);
	say("fault eax (buffer left)", s_pf_eax);
	say("fault ecx (count left)", s_pf_ecx);
	say("fault edi (call)", s_pf_edi);
	say("bytes 01 in the first page", count_of(h_page + 4000, 96, 0x01));
	say("bytes 01 in the second page", count_of(h_page2, 104, 0x01));
	say("byte after", h_page2[104]);
	survived();
}

/* Not mapped: the guest's #PF (the reporter), at the slot's int $0x82. */
static void c_str_unmapped(void) { rom3(VMI_CALL_INSB, FUZZ_LIN(0), 0x64, 16); }

/* The switcher, which the guest's tables do not map: a #PF, not its bytes. */
static void c_str_switcher(void) { rom3(VMI_CALL_OUTSB, 0xffc00000u, 0x80, 16); }

/* Paging off: the reserved top is the hypervisor's. */
static void c_str_reserved_top(void) { rom3(VMI_CALL_INSB, 0xffc00000u, 0x64, 4); }

/* A guest mapping in the reserved top (as pt-reserved-top). */
static void c_str_reserved_mapped(void)
{
	vmi_call5(VMI_CALL_SetPxE, (uint32_t)&h_pd[1020], (uint32_t)h_pt[1] | P | W | A, 0, 0, 0);
	vmi_call5(VMI_CALL_SetPxE, (uint32_t)&h_pt[1][0], (uint32_t)h_page | P | W | A | D, 0, 0, 0);
	rom3(VMI_CALL_OUTSB, 0xff000000u, 0x3f8, 4);
}

/* Paging off, beyond the guest's memory. */
static void c_str_outside(void) { rom3(VMI_CALL_OUTS, npages << 12, 0x80, 4); }

/* The VMI ROM, read-only: INSB into it. */
static void c_str_rom(void) { rom3(VMI_CALL_INSB, 0xc0000u, 0x64, 2); }

static void c_str_port_high(void) { rom3(VMI_CALL_OUTSB, (uint32_t)s_msg, 0x5000, 4); }
static void c_str_port_wide(void) { rom3(VMI_CALL_INSB, (uint32_t)s_buf, 0x10064, 4); }
static void c_str_port_edge(void) { rom3(VMI_CALL_INS, (uint32_t)s_buf, 0x3fe, 1); }

/* A count of 2^32-1 to the quiet POST port from 8 MiB: 8 MiB of
 * batches, then the #PF at 16 MiB, where our identity map ends. */
static void c_str_huge_count(void) { rom3(VMI_CALL_OUTSB, 0x00800000u, 0x80, 0xffffffffu); }

/* The same, over 4000 MiB that all map one page: it runs on until the
 * test stops it. */
static void c_str_endless(void)
{
	for (unsigned i = 0; i < 1024; i++)
		h_pt[0][i] = (uint32_t)h_page | P | A;
	vmi_call5(VMI_CALL_AllocatePage, (uint32_t)h_pt[0] >> 12, VMI_PAGE_PT, 0, 0, 0);
	for (unsigned i = 8; i < 1008; i++)
		vmi_call5(VMI_CALL_SetPxE, (uint32_t)&h_pd[i], (uint32_t)h_pt[0] | P | W | A, 0, 0, 0);
	say("OUTSB of 2^32-1 bytes from", FUZZ_LIN(0));
	rom3(VMI_CALL_OUTSB, FUZZ_LIN(0), 0x80, 0xffffffffu);
}

/* ---- vmi_refuse=: calls the ROM answers unsupported ------------------------- */

static void rom_report(const char *what, uint32_t call, uint32_t a)
{
	uint32_t fn = 0xc0000u + call * VROM_CALL_LEN, d = 0x5678, c = 0x9abc;

	__asm__ volatile("call *%3" : "+a"(a), "+d"(d), "+c"(c) : "r"(fn) : "memory", "cc");
	puts("hostile: ");
	puts(what);
	puts(" eax ");
	puthex(a);
	puts(" edx ");
	puthex(d);
	puts("\n");
}

/* Through the ROM: a u64 call, a void call, a fast one and a u32 call,
 * then a slot with no code (SetPxELong), which answers unsupported too. */
static void c_refuse(void)
{
	rom_report("GetWallclockTime:", VMI_CALL_GetWallclockTime, 0x1234);
	rom_report("GetWallclockTime again:", VMI_CALL_GetWallclockTime, 0x1234);
	rom_report("IODelay:", VMI_CALL_IODelay, 0x1234);
	rom_report("GetCR2:", VMI_CALL_GetCR2, 0x1234);
	rom_report("GetCR0:", VMI_CALL_GetCR0, 0x1234);
	puts("hostile: still running; now SetPxELong\n");
	rom_report("SetPxELong:", VMI_CALL_SetPxELong, 0x1234);
	survived();
}

/* ---- MSRs through the ROM: an absent one answers unsupported ------------------ */

/* RDMSR and WRMSR through their ROM slots: EFER (absent: this CPU model
 * has none for the guest) answers unsupported, as rdmsr/wrmsr would
 * raise #GP; the microcode revision (0x8b), the one MSR the guest has,
 * reads 0 and takes a write. */
static void c_msr_vmi_absent(void)
{
	rom_report("RDMSR c0000080:", VMI_CALL_RDMSR, 0xc0000080u);
	rom_report("WRMSR c0000080:", VMI_CALL_WRMSR, 0xc0000080u);
	rom_report("RDMSR 0000008b:", VMI_CALL_RDMSR, 0x8b);
	rom_report("WRMSR 0000008b:", VMI_CALL_WRMSR, 0x8b);
	survived();
}

/* ---- round 4: calls that used to stop a guest ---------------------------------- */

/* A u64 call through the ROM's slot: edx:eax. */
static uint64_t rom64(uint32_t call, uint32_t a)
{
	uint32_t fn = 0xc0000u + call * VROM_CALL_LEN, d = 0x5678, c = 0x9abc;

	__asm__ volatile("call *%3" : "+a"(a), "+d"(d), "+c"(c) : "r"(fn) : "memory", "cc");
	return (uint64_t)d << 32 | a;
}

/* RDPMC reads a virtual zero for any counter (docs/VROM.md, "Calls that
 * used to stop a guest"): edx:eax = 0, where the caller left junk. */
static void c_vmi_rdpmc(void)
{
	rom_report("RDPMC 0:", VMI_CALL_RDPMC, 0);
	rom_report("RDPMC 40000000:", VMI_CALL_RDPMC, 0x40000000u);
	rom_report("RDPMC ffffffff:", VMI_CALL_RDPMC, 0xffffffffu);
	survived();
}

/* SYSEXIT is an unsupported slot: called (not jumped to) it answers -38
 * and returns, as every unsupported slot does, so a guest can probe it. */
static void c_vmi_sysexit_probe(void)
{
	rom_report("SYSEXIT:", VMI_CALL_SYSEXIT, 0);
	survived();
}

static uint32_t real_eflags(void)
{
	uint32_t f;

	__asm__ volatile("pushfl\n popl %0" : "=r"(f));
	return f;
}

/* The IOPL bits of EFLAGS as the guest reads them: through the ROM (its
 * fast path from the shared page when on) and by the hypercall. */
static void say_iopl(const char *when)
{
	puts("hostile: IOPL ");
	puts(when);
	puts(": ROM ");
	puthex(rom3(VMI_CALL_GetInterruptMask, 0, 0, 0) & 0x3000);
	puts(" hypercall ");
	puthex(vmi_call5(VMI_CALL_GetInterruptMask, 0, 0, 0, 0, 0) & 0x3000);
	puts(" real ");
	puthex(real_eflags() & 0x3000);
	puts("\n");
}

/* SetIOPLMask keeps the IOPL virtual: the guest reads it back, the real
 * EFLAGS keep IOPL 0, and it grants nothing: port I/O from ring 3 is
 * still #GP to the guest's own handler. */
static void c_vmi_iopl(void)
{
	say_iopl("at start");
	rom_report("SetIOPLMask 3000:", VMI_CALL_SetIOPLMask, 0x3000);
	say_iopl("after SetIOPLMask 3000");
	to_ring3(u_kbd_reset);
}

/* A mask with bits outside IOPL is refused (-38) and changes nothing; a
 * good one after it is taken. */
static void c_vmi_iopl_garbage(void)
{
	rom_report("SetIOPLMask ffffffff:", VMI_CALL_SetIOPLMask, 0xffffffffu);
	rom_report("SetIOPLMask 3200:", VMI_CALL_SetIOPLMask, 0x3200);
	say_iopl("after the refused masks");
	rom_report("SetIOPLMask 1000:", VMI_CALL_SetIOPLMask, 0x1000);
	say_iopl("after SetIOPLMask 1000");
	survived();
}

/* WallclockUpdated says whether the wall clock changed since the guest
 * last read it: yes before its first GetWallclockTime, then no. */
static void c_vmi_wallclock(void)
{
	uint64_t t1, t2;

	rom_report("WallclockUpdated before reading:", VMI_CALL_WallclockUpdated, 0);
	t1 = rom64(VMI_CALL_GetWallclockTime, 0);
	say("GetWallclockTime high", (uint32_t)(t1 >> 32));
	say("GetWallclockTime low", (uint32_t)t1);
	say("the wall clock is past 2020-01-01", t1 >= 1577836800ull * 1000000000ull);
	rom_report("WallclockUpdated after reading:", VMI_CALL_WallclockUpdated, 0);
	t2 = rom64(VMI_CALL_GetWallclockTime, 0);
	say("a second reading is not earlier", t2 >= t1);
	rom_report("WallclockUpdated after reading again:", VMI_CALL_WallclockUpdated, 0);
	survived();
}

/* VMI Init made again and again after the activation (h_env's): each
 * one is refused (VMI_ERROR_INVALID) and prints no second activation
 * report with its full shadow audit. */
static void c_vmi_init_again(void)
{
	for (unsigned i = 0; i < 5; i++) {
		uint32_t r;

		__asm__ volatile("int $0x82" : "=a"(r) : "D"(VMI_CALL_Init) : "memory");
		say("Init again returned", r);
	}
	survived();
}

/*
 * The queue flooded with directory builds (docs/HV.md, "The work of one
 * exit"): two directories whose PDEs 4-1007 name two disjoint sets of 1004
 * present, accessed "tables" (16 MiB up, never written: derived all the
 * same), more than the frame budget holds together, announced in turn
 * through the shared page's queue, 74 calls (drain_calls=N) per round and
 * one exit (GetCR3) to drain them; each build evicts the other's tables
 * and derives 1004 again.  On the TSC grid of tguest=ticker (windows of
 * 100 ms) it spins for DRAIN_LEAD windows first (no exit: the victim's
 * baseline beside a busy neighbour), says "drain: attacking from window
 * K", then attacks for ever.
 */
#define DRAIN_D1	0x800u
#define DRAIN_D2	0x801u
#define DRAIN_T1	0x1000u
#define DRAIN_T2	0x1400u
#define DRAIN_LEAD	20u

static const char *h_cmdline;
static uint32_t drain_q[VMI_SHARED_PXE_QUEUE_LEN];

static uint64_t h_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return lo | (uint64_t)hi << 32;
}

static uint32_t h_window(uint32_t w)
{
	uint64_t tsc = h_rdtsc();
	uint32_t q, r;

	__asm__("divl %4" : "=a"(q), "=d"(r) : "a"((uint32_t)tsc), "d"((uint32_t)(tsc >> 32)), "rm"(w));
	return q;
}

static void drain_directory(uint32_t pd, uint32_t tables)
{
	uint32_t *d = (uint32_t *)(pd << 12);

	for (unsigned i = 0; i < 1024; i++)
		d[i] = i < 4 ? h_pd[i] : i < 1008 ? (tables + i - 4) << 12 | P | W | A : 0;
}

static void c_drain_flood(void)
{
	uint32_t calls = cmdline_number(h_cmdline, "drain_calls=", VMI_SHARED_PXE_QUEUE_LEN / 6);
	uint32_t w = vmi_call5(VMI_CALL_GetCycleFrequency, 0, 0, 0, 0, 0) / 1000 * 100, rounds = 0;

	if (calls > VMI_SHARED_PXE_QUEUE_LEN / 6)
		calls = VMI_SHARED_PXE_QUEUE_LEN / 6;
	drain_directory(DRAIN_D1, DRAIN_T1);
	drain_directory(DRAIN_D2, DRAIN_T2);
	for (uint32_t i = 0; i < calls; i++) {
		uint32_t *c = &drain_q[i * 6];

		c[0] = QCALL(VMI_CALL_AllocatePage);
		c[1] = i & 1 ? DRAIN_D2 : DRAIN_D1;
		c[2] = VMI_PAGE_PD;
		c[3] = c[4] = c[5] = 0;
	}
	say("drain: calls per round", calls);
	/* Busy for the first DRAIN_LEAD windows: the victim's baseline. */
	for (uint32_t start = h_window(w); h_window(w) < start + DRAIN_LEAD;)
		;
	say("drain: attacking from window", h_window(w));
	for (;;) {
		queue_words(drain_q, calls * 6, 0);
		if (!(++rounds & 3))
			say("drain: rounds", rounds);
	}
}

/* A CR3 load of a directory never announced whose PDEs 4-1007 name 1004
 * present, accessed "tables" (drain_directory's): its shadow is built at
 * the load within one exit's work (EXIT_WORK), the rest of its PDEs at
 * the faults through them (docs/HV.md, "The work of one exit"). */
static void c_cr3_unshadowed(void)
{
	drain_directory(DRAIN_D1, DRAIN_T1);
	vmi_call5(VMI_CALL_SetCR3, DRAIN_D1 << 12, 0, 0, 0, 0);
	h_page[0] = 0x55;
	say("unshadowed directory of 1008 tables loaded; h_page reads", rd((uint32_t)h_page));
	survived();
}

/* A queue the exit's work limit cuts, under the continuous audit: an entry
 * write of h_pt[0] (so the table is touched), the announcement of a
 * directory of 1004 tables of its own (a build of about a million
 * entries: cut, again and again), then the write that took RW from
 * h_pt[0][0].  The audit made after the first part must wait for the
 * rest (that RW is still in the shadow), not report it missed. */
static void c_drain_split_audit(void)
{
	const uint32_t q[] = { (uint32_t)&h_pt[0][1] | VMI_SHARED_PXE_SET,
			       QCALL(VMI_CALL_AllocatePage), DRAIN_D1, VMI_PAGE_PD, 0, 0, 0,
			       (uint32_t)&h_pt[0][0] | VMI_SHARED_PXE_TEST_CLEAR };

	map8((uint32_t)h_pt[0] | P | W | A, (uint32_t)h_page | P | W | A | D);
	wr(FUZZ_LIN(0), 0xabcd);
	drain_directory(DRAIN_D1, DRAIN_T1);
	h_pt[0][1] = (uint32_t)h_page | P | A;
	h_pt[0][0] &= ~W;
	queue_words(q, sizeof(q) / sizeof(q[0]), 0);
	say("split drain under the audit; 02000000 reads", rd(FUZZ_LIN(0)));
	survived();
}

/* ---- the table -------------------------------------------------------------- */

struct h_case {
	const char *name;
	int paging;
	void (*fn)(void);
};

/* ---- round 5: the PMU's instruction --------------------------------------------- */

/* The rdpmc instruction in the guest's kernel reads the virtual zero the
 * RDPMC call answers (docs/HV.md, "What the guest can reach"): the PMU is
 * not virtualised, so no counter exists to read, but an instruction a
 * kernel may execute does not stop it. */
static void c_insn_rdpmc(void)
{
	static const uint32_t counters[] = { 0, 1, 0x40000000u };

	for (unsigned i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		uint32_t a = 0x1234, d = 0x5678;

		__asm__ volatile("rdpmc" : "+a"(a), "+d"(d) : "c"(counters[i]));
		puts("hostile: rdpmc ");
		puthex(counters[i]);
		puts(": eax ");
		puthex(a);
		puts(" edx ");
		puthex(d);
		puts("\n");
	}
	survived();
}

static const struct h_case cases[] = {
	{ "gdt-dpl0-code", 0, c_gdt_dpl0_code },
	{ "gdt-conforming", 0, c_gdt_conforming },
	{ "gdt-call-gate", 0, c_gdt_call_gate },
	{ "gdt-task-gate", 0, c_gdt_task_gate },
	{ "gdt-int-gate", 0, c_gdt_int_gate },
	{ "ldt-call-gate", 0, c_ldt_call_gate },
	{ "ldt-gate-write", 0, c_ldt_gate_write },
	{ "seg-reserved-top", 1, c_seg_reserved_top },
	{ "seg-expand-down", 1, c_seg_expand_down },
	{ "gdt-loaded-revoked", 0, c_gdt_loaded_revoked },
	{ "farjmp-user-code", 0, c_farjmp_user_code },
	{ "farjmp-hv-cs", 0, c_farjmp_hv_cs },
	{ "mov-ds-hv-ds", 0, c_mov_ds_hv_ds },
	{ "idt-gate-hv-cs", 0, c_idt_gate_hv_cs },
	{ "idt-gate-hv-tss", 0, c_idt_gate_hv_tss },
	{ "idt-gate-tss", 0, c_idt_gate_tss },
	{ "idt-not-present", 0, c_idt_not_present },
	{ "idt-not-present-loop", 0, c_idt_not_present_loop },
	{ "idt-task-gate", 0, c_idt_task_gate },
	{ "idt-16bit-gate", 0, c_idt_16bit_gate },
	{ "idt-data-selector", 0, c_idt_data_selector },
	{ "idt-limit", 0, c_idt_limit },
	{ "idt-user-int-dpl0", 0, c_idt_user_int_dpl0 },
	{ "ring3-int82", 0, c_ring3_int82 },
	{ "ring3-kbd-reset", 0, c_ring3_kbd_reset },
	{ "ring3-debug-exit", 0, c_ring3_debug_exit },
	{ "tss-iomap", 0, c_tss_iomap },
	{ "int80-fresh-kstack", 1, c_int80_fresh_kstack },
	{ "int80-gate-after-lidt", 0, c_int80_gate_after_lidt },
	{ "tss-esp0-unmapped", 1, c_tss_esp0_unmapped },
	{ "ukstack-user-ss", 0, c_ukstack_user_ss },
	{ "tss-ss0-user", 0, c_tss_ss0_user },
	{ "ukstack-switcher", 1, c_ukstack_switcher },
	{ "stack-unmapped", 1, c_stack_unmapped },
	{ "stack-switcher", 1, c_stack_switcher },
	{ "iret-rpl0", 0, c_iret_rpl0 },
	{ "iret-vm", 0, c_iret_vm },
	{ "iret-nt", 0, c_iret_nt },
	{ "iret-rf", 0, c_iret_rf },
	{ "iret-iopl", 0, c_iret_iopl },
	{ "iret-user-ss-rpl", 0, c_iret_user_ss_rpl },
	{ "iret-eip-limit", 0, c_iret_eip_limit },
	{ "cr0-pg-off", 1, c_cr0_pg_off },
	{ "cr0-wp-off", 1, c_cr0_wp_off },
	{ "cr4-pae", 0, c_cr4_pae },
	{ "cr4-vme-pvi", 0, c_cr4_vme_pvi },
	{ "msr-sysenter-cs", 0, c_msr_sysenter_cs },
	{ "msr-unknown", 0, c_msr_unknown_rdmsr },
	{ "msr-apic-base", 0, c_msr_apic_base },
	{ "dr7-switcher", 0, c_dr7_switcher },
	{ "dr-bad-number", 0, c_dr_bad_number },
	{ "dr-mov", 0, c_dr_mov },
	{ "port-pci-config", 0, c_port_pci_config },
	{ "port-kbd-reset", 0, c_port_kbd_reset },
	{ "port-debug-exit", 0, c_port_debug_exit },
	{ "port-high", 0, c_port_high },
	{ "pt-outside-frame", 1, c_pt_outside_frame },
	{ "pt-far-frame", 1, c_pt_far_frame },
	{ "pt-reserved-top", 1, c_pt_reserved_top },
	{ "pt-switcher-pde", 1, c_pt_switcher_pde },
	{ "pt-recursive", 1, c_pt_recursive },
	{ "pt-pd-as-pt", 1, c_pt_pd_as_pt },
	{ "pt-double-announce", 1, c_pt_double_announce },
	{ "pt-release-linked", 1, c_pt_release_linked },
	{ "pt-release-linked-idle", 1, c_pt_release_linked_idle },
	{ "pt-release-loaded-pd", 1, c_pt_release_loaded_pd },
	{ "pt-announce-outside", 1, c_pt_announce_outside },
	{ "pt-clone-range", 1, c_pt_clone_range },
	{ "pt-cr3-outside", 1, c_pt_cr3_outside },
	{ "pt-cr3-table", 1, c_pt_cr3_table },
	{ "pt-4m-page", 1, c_pt_4m_page },
	{ "pt-rom-table", 1, c_pt_rom_table },
	{ "pt-pae-flags", 1, c_pt_not_announced_flags },
	{ "budget-pd-flood", 1, c_budget_pd_flood },
	{ "budget-pt-flood", 1, c_budget_pt_flood },
	{ "budget-clone-flood", 1, c_budget_clone_flood },
	{ "budget-two-directories", 1, c_budget_two_directories },
	{ "budget-ldt-after-flood", 1, c_budget_ldt_after_flood },
	{ "queue-count", 1, c_queue_count },
	{ "queue-count-negative", 1, c_queue_count_negative },
	{ "queue-bad-address", 1, c_queue_bad_address },
	{ "queue-switcher-address", 1, c_queue_switcher_address },
	{ "queue-changed", 1, c_queue_changed },
	/* ---- round 3: queued lifecycle calls ---- */
	{ "life-release-reused", 1, c_life_release_reused },
	{ "life-pt-and-pd", 1, c_life_pt_and_pd },
	{ "life-512", 1, c_life_512 },
	{ "life-cut-short", 1, c_life_cut_short },
	{ "life-not-queued", 1, c_life_not_queued },
	{ "life-inval-run", 1, c_life_inval_run },
	{ "pic-mask-wide", 0, c_pic_mask_wide },
	{ "pic-isr-forged", 0, c_pic_isr_forged },
	{ "pic-ready-forged", 0, c_pic_ready_forged },
	{ "alarm-lazy-garbage", 0, c_alarm_lazy_garbage },
	{ "refuse", 0, c_refuse },
	{ "msr-vmi-absent", 0, c_msr_vmi_absent },
	{ "str-io", 1, c_str_io },
	{ "str-pf-resume", 1, c_str_pf_resume },
	{ "str-unmapped", 1, c_str_unmapped },
	{ "str-switcher", 1, c_str_switcher },
	{ "str-reserved-top", 0, c_str_reserved_top },
	{ "str-reserved-mapped", 1, c_str_reserved_mapped },
	{ "str-outside", 0, c_str_outside },
	{ "str-rom", 0, c_str_rom },
	{ "str-port-high", 0, c_str_port_high },
	{ "str-port-wide", 0, c_str_port_wide },
	{ "str-port-edge", 0, c_str_port_edge },
	{ "str-huge-count", 1, c_str_huge_count },
	{ "str-endless", 1, c_str_endless },
	/* ---- round 4: calls that used to stop a guest ---- */
	{ "vmi-rdpmc", 0, c_vmi_rdpmc },
	{ "vmi-sysexit-probe", 0, c_vmi_sysexit_probe },
	{ "vmi-iopl", 0, c_vmi_iopl },
	{ "vmi-iopl-garbage", 0, c_vmi_iopl_garbage },
	{ "vmi-wallclock", 0, c_vmi_wallclock },
	/* ---- round 5: the PMU's instruction ---- */
	{ "insn-rdpmc", 0, c_insn_rdpmc },
	/* ---- the work of one exit ---- */
	{ "vmi-init-again", 1, c_vmi_init_again },
	{ "drain-flood", 1, c_drain_flood },
	{ "cr3-unshadowed", 1, c_cr3_unshadowed },
	{ "drain-split-audit", 1, c_drain_split_audit },
};

/* ---- tguest=idle ------------------------------------------------------------ */
volatile uint32_t idle_bytes;
void idle_irq(void);
void idle_rx(void);
__asm__(".text\n"
	"idle_irq:\n"
	"	pushal\n"
	"	call idle_rx\n"
	"	popal\n"
	"	pushl %edi\n"
	"	movl $39, %edi\n"	/* VMI_CALL_IRET: [esp] = edi, then the frame */
	"	int $0x82\n");

void idle_rx(void)
{
	while (inb(0x3f8 + 5) & 1) {
		char c = (char)inb(0x3f8);

		idle_bytes++;
		puts("idle: got ");
		putc(c);
		puts("\n");
	}
	outb(0x20, 0x20);	/* EOI */
}

/*
 * After each byte typed to it, the idle guest makes the hypervisor take
 * frames for it, so the suite sees them still granted after (or while)
 * the offender spent its own budget: an LDT (its copy's frames, the
 * first time) and a 4 MiB region it has not touched (a new vTLB page
 * table: paging is off), one further up each time.
 */
static void idle_allocate(uint32_t n)
{
	static const uint32_t word = 0x1d1e;
	uint32_t regions = npages > 0x1000 ? (npages - 0x1000) >> 10 : 0, lin = 0, v, t;
	struct dtr g = { sizeof(h_gdt) - 1, (uint32_t)h_gdt };

	h_gdt[7] = seg((uint32_t)h_ldt, sizeof(h_ldt) - 1, 0x82, 0);
	h_ldt[1] = seg(0, 0xfffff, 0xf2, 0xc);		/* flat data, DPL 3 */
	__asm__ volatile("lgdt %0" : : "m"(g));
	vmi_call5(VMI_CALL_SetLDT, LDT, 0, 0, 0, 0);
	__asm__ volatile("movw %w1, %%fs\n movl %%fs:(%2), %0" : "=r"(v) : "r"(0x0f), "r"(&word) : "memory");
	if (regions)
		lin = (0x1000u + ((n - 1) % regions << 10)) << 12;
	t = regions ? rd(lin) : 0;
	puts("idle: allocated: the LDT's segment reads ");
	puthex(v);
	puts(", new page table for ");
	puthex(lin);
	puts(" reads ");
	puthex(t);
	puts("\n");
}

static void idle(void)
{
	struct dtr d = { sizeof(h_idt) - 1, (uint32_t)h_idt };
	uint32_t r;

	h_idt[0x24] = gate(0x10, (uint32_t)idle_irq, 0x8e);	/* IRQ4 at vector 0x20 + 4 */
	__asm__ volatile("lidt %0" : : "m"(d));
	__asm__ volatile("int $0x82" : "=a"(r) : "D"(VMI_CALL_Init) : "memory");
	/* The 8259 pair as Linux sets it up: master at 0x20, slave at 0x28. */
	outb(0x20, 0x11); outb(0x21, 0x20); outb(0x21, 0x04); outb(0x21, 0x01);
	outb(0xa0, 0x11); outb(0xa1, 0x28); outb(0xa1, 0x02); outb(0xa1, 0x01);
	outb(0x21, (uint8_t)~0x10);	/* only IRQ4 */
	outb(0xa1, 0xff);
	outb(0x3f8 + 4, 0x08);		/* MCR.OUT2: the IRQ line */
	outb(0x3f8 + 1, 0x01);		/* IER: received data */
	puts("idle: waiting for input\n");
	/* Bytes are counted with interrupts off, and Halt with the virtual
	 * IF clear enables it as it halts (as sti; hlt), so a byte that
	 * arrives between the test and the Halt still wakes us. */
	for (uint32_t seen = 0;;) {
		vmi_call5(VMI_CALL_DisableInterrupts, 0, 0, 0, 0, 0);
		if (idle_bytes != seen) {
			vmi_call5(VMI_CALL_EnableInterrupts, 0, 0, 0, 0, 0);
			idle_allocate(seen = idle_bytes);
			continue;
		}
		vmi_call5(VMI_CALL_Halt, 0, 0, 0, 0, 0);
	}
}

int hostile_main(const uint8_t *boot_params, const char *cmdline)
{
	h_cmdline = cmdline;
	if (has_word(cmdline, "tguest=idle")) {
		npages = e820_top(boot_params) >> 12;
		idle();
		return 1;
	}
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char word[48] = "tguest=h:";
		unsigned n = 9;

		for (const char *p = cases[i].name; *p && n < sizeof(word) - 1; p++)
			word[n++] = *p;
		word[n] = 0;
		if (!has_word(cmdline, word))
			continue;
		npages = e820_top(boot_params) >> 12;
		h_env(cases[i].paging);
		puts("hostile: case ");
		puts(cases[i].name);
		puts(cases[i].paging ? " (paging on, shadows active)\n" : "\n");
		cases[i].fn();
		puts("hostile: the case returned\n");
		survived();
	}
	return 0;
}
