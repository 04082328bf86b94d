/*
 * Unit tests for the instruction emulator (hv/emul/).
 *
 * A fake vCPU: 256 KiB of flat guest-linear memory (pages can be made to
 * fault), per-segment bases, and every effect the emulator asks for
 * recorded so each test can check exactly what happened.  Reference
 * encodings were produced with `as --32` and are literal here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>
#include <cmocka.h>
#include "emulate.h"
#include "emulate_kernel_forms.h"

#define MEM_SIZE 0x40000u
#define CODE 0x1000u		/* instructions are placed here (CS base 0) */
#define STACK 0x8000u		/* guest esp */
#define DATA 0x2000u

static struct fake {
	uint8_t mem[MEM_SIZE];
	bool unmapped[MEM_SIZE / 4096];
	uint32_t base[6];
	uint32_t cr[5];
	uint32_t dr[8];
	bool if_flag, set_if_called;
	unsigned halts;
	/* load_seg */
	unsigned nseg;
	struct { int seg; uint16_t sel; uint32_t eip; } segs[4];
	uint16_t fail_sel;	/* load_seg of this selector: #GP(sel) */
	/* write_cr */
	int cr_written; uint32_t cr_val; bool cr_fail;
	int dtr_which; uint32_t dtr_base; uint16_t dtr_limit; unsigned dtr_loads;
	uint16_t ldtr, tr;
	/* port I/O */
	unsigned nio;
	struct { bool out; uint16_t port; unsigned size; uint32_t val; } io[8];
	uint32_t in_val; bool io_fail;
	uint32_t msr; uint64_t msr_val; bool wrmsr_called;
	uint32_t invlpg_lin; unsigned invlpgs;
	uint32_t gdtr_base; uint16_t gdtr_limit;
	bool wrap;	/* linear addresses wrap into mem (kernel addresses) */
} fk;

static struct trap_frame f;
static struct emul_outcome out;

static bool fake_access(uint32_t lin, void *buf, unsigned len, uint32_t *err, bool write)
{
	/* The emulator splits at page boundaries; check that it does. */
	assert_true((lin & 4095) + len <= 4096);
	if (fk.wrap)
		lin %= MEM_SIZE;
	if (lin >= MEM_SIZE || fk.unmapped[lin / 4096]) {
		*err = 0x4 | (write ? 0x2 : 0);
		return false;
	}
	if (write)
		memcpy(fk.mem + lin, buf, len);
	else
		memcpy(buf, fk.mem + lin, len);
	return true;
}
static bool f_read_lin(void *c, uint32_t lin, void *buf, unsigned len, uint32_t *err)
{ return fake_access(lin, buf, len, err, false); }
static bool f_write_lin(void *c, uint32_t lin, const void *buf, unsigned len, uint32_t *err)
{ return fake_access(lin, (void *)buf, len, err, true); }
static uint32_t f_seg_base(void *c, int seg) { return fk.base[seg]; }
static uint32_t f_read_cr(void *c, int n) { return fk.cr[n]; }
static enum emul_result f_write_cr(void *c, int n, uint32_t val, struct emul_outcome *o)
{
	fk.cr_written = n;
	fk.cr_val = val;
	if (fk.cr_fail) {
		o->vector = 13; o->has_error = true; o->error = 0;
		return EMUL_FAULT;
	}
	fk.cr[n] = val;
	return EMUL_OK;
}
static enum emul_result f_load_seg(void *c, struct trap_frame *fr, int seg, uint16_t sel, struct emul_outcome *o)
{
	assert_true(fk.nseg < 4);
	fk.segs[fk.nseg].seg = seg;
	fk.segs[fk.nseg].sel = sel;
	fk.segs[fk.nseg].eip = fr->eip;
	fk.nseg++;
	if (fk.fail_sel && sel == fk.fail_sel) {
		o->vector = 13; o->has_error = true; o->error = sel & 0xfffc;
		return EMUL_FAULT;
	}
	uint32_t *slot[7] = { &fr->es, &fr->cs, &fr->ss, &fr->ds, &fr->fs, &fr->gs, &fr->cs };
	*slot[seg] = sel;
	return EMUL_OK;
}
static enum emul_result f_load_dtr(void *c, int which, uint32_t base, uint16_t limit, struct emul_outcome *o)
{
	fk.dtr_which = which; fk.dtr_base = base; fk.dtr_limit = limit; fk.dtr_loads++;
	return EMUL_OK;
}
static enum emul_result f_load_ldtr(void *c, uint16_t sel, struct emul_outcome *o) { fk.ldtr = sel; return EMUL_OK; }
static enum emul_result f_load_tr(void *c, uint16_t sel, struct emul_outcome *o) { fk.tr = sel; return EMUL_OK; }
#define SLOW_PORT 0x3f8
static enum emul_result io_record(bool isout, uint16_t port, unsigned size, uint32_t val, struct emul_outcome *o)
{
	if (fk.io_fail) {
		o->vector = 13; o->has_error = true; o->error = 0;
		return EMUL_FAULT;
	}
	if (fk.nio < 8) {
		fk.io[fk.nio].out = isout; fk.io[fk.nio].port = port;
		fk.io[fk.nio].size = size; fk.io[fk.nio].val = val;
	}
	fk.nio++;
	if (isout && port == SLOW_PORT)
		o->slow_io++;		/* as vcpu_ops.c counts a byte to COM1 */
	return EMUL_OK;
}
static enum emul_result f_io_in(void *c, uint16_t port, unsigned size, uint32_t *val, struct emul_outcome *o)
{
	*val = size == 4 ? fk.in_val : fk.in_val & ((1u << (8 * size)) - 1);
	fk.in_val += 0x01010101;	/* successive reads differ */
	return io_record(false, port, size, *val, o);
}
static enum emul_result f_io_out(void *c, uint16_t port, unsigned size, uint32_t val, struct emul_outcome *o)
{ return io_record(true, port, size, val, o); }
static void f_cpuid(void *c, uint32_t leaf, uint32_t sub, uint32_t r[4])
{ r[0] = leaf + 1; r[1] = sub + 2; r[2] = 0x33; r[3] = 0x44; }
static enum emul_result f_rdmsr(void *c, uint32_t msr, uint64_t *val, struct emul_outcome *o)
{ fk.msr = msr; *val = 0x1122334455667788ull; return EMUL_OK; }
static enum emul_result f_wrmsr(void *c, uint32_t msr, uint64_t val, struct emul_outcome *o)
{ fk.msr = msr; fk.msr_val = val; fk.wrmsr_called = true; return EMUL_OK; }
static bool f_get_if(void *c) { return fk.if_flag; }
static void f_set_if(void *c, bool on) { fk.if_flag = on; fk.set_if_called = true; }
static enum emul_result f_invlpg(void *c, uint32_t lin) { fk.invlpg_lin = lin; fk.invlpgs++; return EMUL_OK; }
static enum emul_result f_halt(void *c) { fk.halts++; return EMUL_HALT; }
static void f_read_dtr(void *c, int which, uint32_t *base, uint16_t *limit)
{ *base = fk.gdtr_base + (uint32_t)which; *limit = fk.gdtr_limit; }
static uint32_t f_read_dr(void *c, int n) { return fk.dr[n]; }
static enum emul_result f_write_dr(void *c, int n, uint32_t val, struct emul_outcome *o) { fk.dr[n] = val; return EMUL_OK; }

static struct emul_ops ops = {
	.read_lin = f_read_lin, .write_lin = f_write_lin, .seg_base = f_seg_base,
	.read_cr = f_read_cr, .write_cr = f_write_cr, .load_seg = f_load_seg,
	.load_dtr = f_load_dtr, .load_ldtr = f_load_ldtr, .load_tr = f_load_tr,
	.io_in = f_io_in, .io_out = f_io_out, .cpuid = f_cpuid, .rdmsr = f_rdmsr,
	.wrmsr = f_wrmsr, .get_if = f_get_if, .set_if = f_set_if, .invlpg = f_invlpg,
	.halt = f_halt, .read_dtr = f_read_dtr, .read_dr = f_read_dr, .write_dr = f_write_dr,
};

static int setup(void **state)
{
	memset(&fk, 0, sizeof(fk));
	memset(&f, 0, sizeof(f));
	memset(&out, 0, sizeof(out));	/* the batch calls count into it */
	f.eip = CODE;
	f.cs = 0x11;		/* guest kernel code, RPL 1 */
	f.ss = f.ds = f.es = 0x19;
	f.esp = STACK;
	f.eflags = 0x202;	/* real IF on, IOPL 0 */
	fk.cr[0] = 0x11;	/* PE ET */
	ops.read_dtr = f_read_dtr;
	ops.read_dr = f_read_dr;
	ops.write_dr = f_write_dr;
	return 0;
}

/* Emulate bytes placed at CODE; cpl 1 unless said otherwise. */
static enum emul_result run_cpl(unsigned cpl, const uint8_t *bytes, unsigned n)
{
	memcpy(fk.mem + f.eip, bytes, n);
	return emulate_one(&f, cpl, &ops, &out);
}
#define RUN(...) ({ static const uint8_t b_[] = { __VA_ARGS__ }; run_cpl(1, b_, sizeof(b_)); })
#define RUN3(...) ({ static const uint8_t b_[] = { __VA_ARGS__ }; run_cpl(3, b_, sizeof(b_)); })

static void put32(uint32_t lin, uint32_t v) { memcpy(fk.mem + lin, &v, 4); }
static void put16(uint32_t lin, uint16_t v) { memcpy(fk.mem + lin, &v, 2); }
static uint32_t get32(uint32_t lin) { uint32_t v; memcpy(&v, fk.mem + lin, 4); return v; }

#define OK_LEN(len_) do { assert_int_equal(out.result, EMUL_OK); assert_int_equal(out.len, (len_)); \
	assert_int_equal(f.eip, CODE + (len_)); } while (0)
#define FAULT(vec_, err_) do { assert_int_equal(out.result, EMUL_FAULT); assert_int_equal(out.vector, (vec_)); \
	assert_int_equal(out.error, (err_)); assert_int_equal(f.eip, CODE); } while (0)

/* ---- counters ---- */
static void kind_names(void **s)
{
	for (unsigned i = 0; i < EMUL_KIND_COUNT; i++) {
		assert_non_null(emul_kind_name(i));
		for (unsigned j = 0; j < i; j++)
			assert_string_not_equal(emul_kind_name(i), emul_kind_name(j));
	}
	assert_string_equal(emul_kind_name(EMUL_KIND_COUNT), "invalid");
	assert_string_equal(emul_kind_name(EMUL_KIND_MOV_TO_CR), "mov to cr");
}

/* ---- interrupt flag, hlt ---- */
static void cli_sti(void **s)
{
	fk.if_flag = true;
	assert_int_equal(RUN(0xfa), EMUL_OK);
	OK_LEN(1);
	assert_false(fk.if_flag);
	assert_int_equal(out.kind, EMUL_KIND_CLI);
	assert_int_equal(f.eflags, 0x202);	/* the real IF is not the guest's */
	f.eip = CODE;
	RUN(0xfb);
	OK_LEN(1);
	assert_true(fk.if_flag);
	assert_int_equal(out.kind, EMUL_KIND_STI);
	/* operand-size and rep prefixes do not matter to cli */
	f.eip = CODE;
	RUN(0x66, 0xf3, 0xfa);
	OK_LEN(3);
	assert_false(fk.if_flag);
}

static void cli_from_user_is_gp(void **s)
{
	assert_int_equal(RUN3(0xfa), EMUL_FAULT);
	FAULT(13, 0);
	assert_true(out.has_error);
	assert_false(fk.set_if_called);
}

static void lock_prefix_is_ud(void **s)
{
	RUN(0xf0, 0xfa);
	FAULT(6, 0);
	assert_false(out.has_error);
	assert_false(fk.set_if_called);
	assert_int_equal(out.kind, EMUL_KIND_CLI);
}

static void hlt(void **s)
{
	assert_int_equal(RUN(0xf4), EMUL_HALT);
	assert_int_equal(f.eip, CODE + 1);	/* resumes after the hlt */
	assert_int_equal(fk.halts, 1);
	assert_int_equal(out.kind, EMUL_KIND_HLT);
}

/* ---- descriptor tables ---- */
static void lgdt_forms(void **s)
{
	put16(DATA, 0x27); put32(DATA + 2, 0xc1234560);
	f.eax = DATA;
	RUN(0x0f, 0x01, 0x10);				/* lgdt (%eax) */
	OK_LEN(3);
	assert_int_equal(fk.dtr_which, 0);
	assert_int_equal(fk.dtr_base, 0xc1234560);
	assert_int_equal(fk.dtr_limit, 0x27);
	assert_int_equal(out.kind, EMUL_KIND_LGDT);

	f.eip = CODE;
	RUN(0x66, 0x0f, 0x01, 0x10);			/* lgdtw: 24-bit base */
	OK_LEN(4);
	assert_int_equal(fk.dtr_base, 0x00234560);

	/* lidt 8(%esp): SS is the default segment for an esp base */
	f.eip = CODE;
	fk.base[SEG_SS] = 0x100;
	put16(0x100 + STACK + 8, 0x7ff); put32(0x100 + STACK + 10, 0xc0000000);
	RUN(0x0f, 0x01, 0x5c, 0x24, 0x08);
	OK_LEN(5);
	assert_int_equal(fk.dtr_which, 1);
	assert_int_equal(fk.dtr_base, 0xc0000000);
	assert_int_equal(fk.dtr_limit, 0x7ff);
	assert_int_equal(out.kind, EMUL_KIND_LIDT);

	/* lgdt %fs:0x3000 */
	f.eip = CODE;
	fk.base[SEG_FS] = 0x10000;
	put16(0x13000, 0x1f); put32(0x13002, 0x5000);
	RUN(0x64, 0x0f, 0x01, 0x15, 0x00, 0x30, 0x00, 0x00);
	OK_LEN(8);
	assert_int_equal(fk.dtr_base, 0x5000);
	assert_int_equal(fk.dtr_limit, 0x1f);
}

static void lgdt_from_user_is_gp(void **s)
{
	f.eax = DATA;
	RUN3(0x0f, 0x01, 0x10);
	FAULT(13, 0);
	assert_int_equal(fk.dtr_loads, 0);
}

static void lgdt_operand_fault(void **s)
{
	/* The 6-byte operand straddles into an unmapped page: cr2 is the
	 * first byte on that page, not the operand's address. */
	fk.unmapped[3] = true;
	f.eax = 0x3000 - 2;
	RUN(0x0f, 0x01, 0x10);
	FAULT(14, 0x4);
	assert_int_equal(out.cr2, 0x3000);
	assert_int_equal(fk.dtr_loads, 0);
}

static void sgdt_sidt(void **s)
{
	fk.gdtr_base = 0xc0100000; fk.gdtr_limit = 0xff;
	RUN(0x0f, 0x01, 0x05, 0x00, 0x20, 0x00, 0x00);	/* sgdt 0x2000 */
	OK_LEN(7);
	assert_int_equal(fk.mem[DATA] | fk.mem[DATA + 1] << 8, 0xff);
	assert_int_equal(get32(DATA + 2), 0xc0100000);
	f.eip = CODE;
	RUN3(0x0f, 0x01, 0x0d, 0x00, 0x20, 0x00, 0x00);	/* sidt at CPL 3 is allowed */
	OK_LEN(7);
	assert_int_equal(get32(DATA + 2), 0xc0100001);
	/* without the optional op the emulator says so */
	ops.read_dtr = NULL;
	f.eip = CODE;
	assert_int_equal(RUN(0x0f, 0x01, 0x05, 0x00, 0x20, 0x00, 0x00), EMUL_UNSUPPORTED);
	assert_string_equal(out.brk.why, "unsupported instruction 0f 01 05 00 20 00 00 (sgdt: no read_dtr op)");
	assert_int_equal(f.eip, CODE);
}

static void lldt_ltr(void **s)
{
	f.eax = 0xffff0028;
	RUN(0x0f, 0x00, 0xd0);				/* lldt %ax */
	OK_LEN(3);
	assert_int_equal(fk.ldtr, 0x28);
	assert_int_equal(out.kind, EMUL_KIND_LLDT);
	f.eip = CODE;
	f.ebx = DATA;
	put16(DATA, 0x30);
	RUN(0x0f, 0x00, 0x1b);				/* ltr (%ebx) */
	OK_LEN(3);
	assert_int_equal(fk.tr, 0x30);
	assert_int_equal(out.kind, EMUL_KIND_LTR);
	f.eip = CODE;
	assert_int_equal(RUN(0x0f, 0x00, 0xc0), EMUL_UNSUPPORTED);	/* sldt %eax */
	assert_string_equal(out.brk.why, "unsupported instruction 0f 00 c0 (0f 00 group form)");
}

/* ---- control and debug registers ---- */
static void mov_cr(void **s)
{
	f.eax = 0x9000;
	RUN(0x0f, 0x22, 0xd8);				/* mov %eax,%cr3 */
	OK_LEN(3);
	assert_int_equal(fk.cr_written, 3);
	assert_int_equal(fk.cr[3], 0x9000);
	assert_int_equal(out.kind, EMUL_KIND_MOV_TO_CR);

	f.eip = CODE;
	fk.cr[0] = 0x80000011;
	RUN(0x0f, 0x20, 0xc0);				/* mov %cr0,%eax */
	OK_LEN(3);
	assert_int_equal(f.eax, 0x80000011);
	assert_int_equal(out.kind, EMUL_KIND_MOV_FROM_CR);

	f.eip = CODE;
	fk.cr[4] = 0x10;
	RUN(0x0f, 0x20, 0xe1);				/* mov %cr4,%ecx */
	OK_LEN(3);
	assert_int_equal(f.ecx, 0x10);

	/* mod is ignored: 0f 22 18 is mov %eax,%cr3 with no displacement */
	f.eip = CODE;
	f.eax = 0xa000;
	RUN(0x0f, 0x22, 0x18);
	OK_LEN(3);
	assert_int_equal(fk.cr[3], 0xa000);

	/* cr2 read */
	f.eip = CODE;
	fk.cr[2] = 0xdeadb000;
	RUN(0x0f, 0x20, 0xd7);				/* mov %cr2,%edi */
	OK_LEN(3);
	assert_int_equal(f.edi, 0xdeadb000);
}

static void mov_cr_faults(void **s)
{
	RUN(0x0f, 0x22, 0xc8);				/* mov %eax,%cr1 */
	FAULT(6, 0);
	f.eip = CODE;
	RUN(0x0f, 0x20, 0xe8);				/* mov %cr5,%eax */
	FAULT(6, 0);
	f.eip = CODE;
	RUN3(0x0f, 0x22, 0xd8);
	FAULT(13, 0);
	assert_int_equal(fk.cr_written, 0);
	/* the vCPU refuses the value (reserved bits): its #GP is reflected */
	f.eip = CODE;
	fk.cr_fail = true;
	f.eax = 0xffffffff;
	RUN(0x0f, 0x22, 0xe0);				/* mov %eax,%cr4 */
	FAULT(13, 0);
	assert_int_equal(fk.cr_written, 4);
}

static void mov_dr(void **s)
{
	f.eax = 0x400;
	RUN(0x0f, 0x23, 0xf8);				/* mov %eax,%db7 */
	OK_LEN(3);
	assert_int_equal(fk.dr[7], 0x400);
	assert_int_equal(out.kind, EMUL_KIND_MOV_TO_DR);
	f.eip = CODE;
	fk.dr[6] = 0xffff0ff0;
	RUN(0x0f, 0x21, 0xe0);				/* mov %db4,%eax = dr6 */
	OK_LEN(3);
	assert_int_equal(f.eax, 0xffff0ff0);
	assert_int_equal(out.kind, EMUL_KIND_MOV_FROM_DR);
	f.eip = CODE;
	fk.cr[4] = 1u << 3;				/* CR4.DE: dr4 is #UD */
	RUN(0x0f, 0x21, 0xe0);
	FAULT(6, 0);
	f.eip = CODE;
	ops.write_dr = NULL;
	assert_int_equal(RUN(0x0f, 0x23, 0xc0), EMUL_UNSUPPORTED);
	assert_string_equal(out.brk.why, "unsupported instruction 0f 23 c0 (mov to DR: no write_dr op)");
}

static void clts_lmsw_smsw(void **s)
{
	fk.cr[0] = 0x8000003b;				/* PG ET NE? TS MP PE */
	RUN(0x0f, 0x06);
	OK_LEN(2);
	assert_int_equal(fk.cr[0], 0x80000033);
	assert_int_equal(out.kind, EMUL_KIND_CLTS);

	/* lmsw %ax: loads MP/EM/TS but cannot clear PE */
	f.eip = CODE;
	f.eax = 0xfff8;
	RUN(0x0f, 0x01, 0xf0);
	OK_LEN(3);
	assert_int_equal(fk.cr[0], 0x80000039);
	assert_int_equal(out.kind, EMUL_KIND_LMSW);

	f.eip = CODE;
	RUN(0x0f, 0x01, 0xe0);				/* smsw %eax */
	OK_LEN(3);
	assert_int_equal(f.eax, 0x80000039);
	assert_int_equal(out.kind, EMUL_KIND_SMSW);

	f.eip = CODE;
	put32(DATA, 0xaaaaaaaa);
	RUN(0x0f, 0x01, 0x25, 0x00, 0x20, 0x00, 0x00);	/* smsw 0x2000: 16 bits */
	OK_LEN(7);
	assert_int_equal(get32(DATA), 0xaaaa0039);
}

/* ---- MSRs, cpuid, caches, TLB ---- */
static void msr_cpuid(void **s)
{
	f.ecx = 0x1b;
	RUN(0x0f, 0x32);
	OK_LEN(2);
	assert_int_equal(fk.msr, 0x1b);
	assert_int_equal(f.eax, 0x55667788);
	assert_int_equal(f.edx, 0x11223344);
	assert_int_equal(out.kind, EMUL_KIND_RDMSR);
	f.eip = CODE;
	f.ecx = 0x174; f.edx = 1; f.eax = 2;
	RUN(0x0f, 0x30);
	OK_LEN(2);
	assert_int_equal(fk.msr_val, 0x100000002ull);
	assert_int_equal(out.kind, EMUL_KIND_WRMSR);
	f.eip = CODE;
	fk.wrmsr_called = false;
	RUN3(0x0f, 0x30);
	FAULT(13, 0);
	assert_false(fk.wrmsr_called);
	f.eip = CODE;
	f.eax = 7; f.ecx = 1;
	RUN3(0x0f, 0xa2);				/* cpuid is fine at CPL 3 */
	OK_LEN(2);
	assert_int_equal(f.eax, 8);
	assert_int_equal(f.ebx, 3);
	assert_int_equal(f.ecx, 0x33);
	assert_int_equal(f.edx, 0x44);
	assert_int_equal(out.kind, EMUL_KIND_CPUID);
}

/* rdpmc: the PMU is not virtualised (CPUID leaf 0xA reads 0), so the
 * kernel reads a virtual zero, as VMI's RDPMC call answers; user mode
 * gets it only with the guest's CR4.PCE, else the #GP hardware gives. */
static void rdpmc_virtual_zero(void **s)
{
	f.ecx = 0; f.eax = 0x1234; f.edx = 0x5678;
	RUN(0x0f, 0x33);
	OK_LEN(2);
	assert_int_equal(f.eax, 0);
	assert_int_equal(f.edx, 0);
	assert_int_equal(out.kind, EMUL_KIND_RDPMC);
	f.eip = CODE;
	f.eax = 0x1234;
	RUN3(0x0f, 0x33);
	FAULT(13, 0);
	assert_int_equal(f.eax, 0x1234);
	f.eip = CODE;
	fk.cr[4] = 1u << 8;				/* CR4.PCE */
	RUN3(0x0f, 0x33);
	OK_LEN(2);
	assert_int_equal(f.eax, 0);
	fk.cr[4] = 0;
}

static void wbinvd_invd_invlpg(void **s)
{
	RUN(0x0f, 0x09);
	OK_LEN(2);
	assert_int_equal(out.kind, EMUL_KIND_WBINVD);
	f.eip = CODE;
	RUN(0x0f, 0x08);
	OK_LEN(2);
	f.eip = CODE;
	RUN3(0x0f, 0x09);
	FAULT(13, 0);

	f.eip = CODE;
	f.eax = 0xc0001234;
	fk.base[SEG_DS] = 0x10;
	RUN(0x0f, 0x01, 0x38);				/* invlpg (%eax) */
	OK_LEN(3);
	assert_int_equal(fk.invlpg_lin, 0xc0001244);
	assert_int_equal(out.kind, EMUL_KIND_INVLPG);
	f.eip = CODE;
	fk.base[SEG_GS] = 0x1000;
	RUN(0x65, 0x0f, 0x01, 0x38);			/* invlpg %gs:(%eax) */
	OK_LEN(4);
	assert_int_equal(fk.invlpg_lin, 0xc0002234);
	f.eip = CODE;
	assert_int_equal(RUN(0x0f, 0x01, 0xf9), EMUL_UNSUPPORTED);	/* rdtscp */
	assert_string_equal(out.brk.why, "unsupported instruction 0f 01 f9 (0f 01 group form)");
	assert_int_equal(fk.invlpgs, 2);
}

/* ---- segment loads ---- */
static void mov_sreg(void **s)
{
	f.eax = 0x12340018;
	RUN(0x8e, 0xd8);				/* mov %eax,%ds */
	OK_LEN(2);
	assert_int_equal(fk.nseg, 1);
	assert_int_equal(fk.segs[0].seg, SEG_DS);
	assert_int_equal(fk.segs[0].sel, 0x18);
	assert_int_equal(f.ds, 0x18);
	assert_int_equal(out.kind, EMUL_KIND_MOV_SREG);

	f.eip = CODE;
	put16(DATA, 0x2b);
	RUN(0x8e, 0x25, 0x00, 0x20, 0x00, 0x00);	/* mov 0x2000,%fs */
	OK_LEN(6);
	assert_int_equal(f.fs, 0x2b);

	f.eip = CODE;
	RUN(0x8e, 0xd0);				/* mov %eax,%ss */
	OK_LEN(2);
	assert_int_equal(f.ss, 0x18);
}

static void mov_sreg_faults(void **s)
{
	RUN(0x8e, 0xc8);				/* mov %eax,%cs */
	FAULT(6, 0);
	f.eip = CODE;
	RUN(0x8e, 0xf0);				/* sreg 6 */
	FAULT(6, 0);
	assert_int_equal(fk.nseg, 0);
	f.eip = CODE;
	fk.fail_sel = 0x43;
	f.eax = 0x43;
	RUN(0x8e, 0xc0);				/* mov %eax,%es: bad descriptor */
	FAULT(13, 0x40);
	assert_int_equal(f.es, 0x19);
}

static void pop_sreg(void **s)
{
	put32(STACK, 0xffff0023);
	RUN(0x1f);					/* pop %ds */
	OK_LEN(1);
	assert_int_equal(f.ds, 0x23);
	assert_int_equal(f.esp, STACK + 4);
	assert_int_equal(out.kind, EMUL_KIND_POP_SREG);

	static const struct { uint8_t b[2]; unsigned len; int seg; } forms[] = {
		{ { 0x07 }, 1, SEG_ES }, { { 0x17 }, 1, SEG_SS },
		{ { 0x0f, 0xa1 }, 2, SEG_FS }, { { 0x0f, 0xa9 }, 2, SEG_GS },
	};
	for (unsigned i = 0; i < 4; i++) {
		f.eip = CODE; f.esp = STACK; fk.nseg = 0;
		run_cpl(1, forms[i].b, forms[i].len);
		OK_LEN(forms[i].len);
		assert_int_equal(fk.segs[0].seg, forms[i].seg);
		assert_int_equal(fk.segs[0].sel, 0x23);
		assert_int_equal(f.esp, STACK + 4);
	}
	/* 16-bit operand size pops two bytes */
	f.eip = CODE; f.esp = STACK;
	RUN(0x66, 0x07);
	OK_LEN(2);
	assert_int_equal(f.esp, STACK + 2);
	/* a failed load leaves esp alone */
	f.eip = CODE; f.esp = STACK;
	fk.fail_sel = 0x23;
	RUN(0x1f);
	FAULT(13, 0x20);
	assert_int_equal(f.esp, STACK);
}

static void load_far_pointers(void **s)
{
	put32(DATA, 0x9ffc); put16(DATA + 4, 0x18);
	RUN(0x0f, 0xb2, 0x25, 0x00, 0x20, 0x00, 0x00);	/* lss 0x2000,%esp */
	OK_LEN(7);
	assert_int_equal(f.ss, 0x18);
	assert_int_equal(f.esp, 0x9ffc);
	assert_int_equal(out.kind, EMUL_KIND_LSS);

	static const struct { uint8_t b[7]; unsigned len; int seg; } forms[] = {
		{ { 0xc5, 0x35, 0x00, 0x20, 0x00, 0x00 }, 6, SEG_DS },		/* lds 0x2000,%esi */
		{ { 0xc4, 0x3b }, 2, SEG_ES },						/* les (%ebx),%edi */
		{ { 0x0f, 0xb4, 0x05, 0x00, 0x20, 0x00, 0x00 }, 7, SEG_FS },	/* lfs 0x2000,%eax */
		{ { 0x0f, 0xb5, 0x05, 0x00, 0x20, 0x00, 0x00 }, 7, SEG_GS },	/* lgs 0x2000,%eax */
	};
	f.ebx = DATA;
	for (unsigned i = 0; i < 4; i++) {
		f.eip = CODE; fk.nseg = 0;
		run_cpl(1, forms[i].b, forms[i].len);
		OK_LEN(forms[i].len);
		assert_int_equal(fk.segs[0].seg, forms[i].seg);
		assert_int_equal(fk.segs[0].sel, 0x18);
	}
	assert_int_equal(f.esi, 0x9ffc);
	assert_int_equal(f.edi, 0x9ffc);
	assert_int_equal(f.eax, 0x9ffc);

	/* 16-bit: lss with m16:16 writes only sp */
	f.eip = CODE; f.esp = 0x12345678;
	put16(DATA, 0x4444); put16(DATA + 2, 0x20);
	RUN(0x66, 0x0f, 0xb2, 0x25, 0x00, 0x20, 0x00, 0x00);
	OK_LEN(8);
	assert_int_equal(f.esp, 0x12344444);
	assert_int_equal(f.ss, 0x20);

	/* a failed segment load leaves the register alone */
	f.eip = CODE; f.esp = STACK;
	put32(DATA, 0x1111); put16(DATA + 4, 0x50);
	fk.fail_sel = 0x50;
	RUN(0x0f, 0xb2, 0x25, 0x00, 0x20, 0x00, 0x00);
	FAULT(13, 0x50);
	assert_int_equal(f.esp, STACK);

	/* c5 with a register operand is a VEX prefix */
	f.eip = CODE;
	assert_int_equal(RUN(0xc5, 0xf8, 0x77), EMUL_UNSUPPORTED);	/* vzeroupper */
	assert_string_equal(out.brk.why, "unsupported instruction c5 f8 (VEX-encoded instruction)");
	f.eip = CODE;
	RUN(0x0f, 0xb2, 0xc0);				/* lss with a register: #UD */
	FAULT(6, 0);
}

/* ---- far transfers ---- */
static void far_jmp(void **s)
{
	RUN(0xea, 0x78, 0x56, 0x34, 0x12, 0x10, 0x00);	/* ljmp $0x10,$0x12345678 */
	assert_int_equal(out.result, EMUL_OK);
	assert_int_equal(out.len, 7);
	assert_int_equal(f.eip, 0x12345678);
	assert_int_equal(f.cs, 0x10);
	assert_int_equal(fk.segs[0].seg, SEG_CS);
	assert_int_equal(fk.segs[0].eip, 0x12345678);	/* eip set before the CS load */
	assert_int_equal(out.kind, EMUL_KIND_FAR_JMP);

	f.eip = CODE;
	RUN(0x66, 0xea, 0x34, 0x12, 0x08, 0x00);	/* ljmpw $0x8,$0x1234 */
	assert_int_equal(out.len, 6);
	assert_int_equal(f.eip, 0x1234);
	assert_int_equal(f.cs, 0x08);

	f.eip = CODE;
	put32(DATA, 0xc0100000); put16(DATA + 4, 0x61);
	RUN(0xff, 0x2d, 0x00, 0x20, 0x00, 0x00);	/* ljmp *0x2000 */
	assert_int_equal(out.len, 6);
	assert_int_equal(f.eip, 0xc0100000);
	assert_int_equal(f.cs, 0x61);

	f.eip = CODE;
	f.eax = DATA;
	RUN(0xff, 0x28);				/* ljmp *(%eax) */
	assert_int_equal(out.result, EMUL_OK);
	assert_int_equal(f.eip, 0xc0100000);

	f.eip = CODE;
	RUN(0xff, 0xe8);				/* ljmp with a register: #UD */
	FAULT(6, 0);
}

static void far_jmp_bad_selector(void **s)
{
	fk.fail_sel = 0x10;
	RUN(0xea, 0x78, 0x56, 0x34, 0x12, 0x10, 0x00);
	FAULT(13, 0x10);
	assert_int_equal(f.cs, 0x11);
}

static void far_call(void **s)
{
	RUN(0x9a, 0x78, 0x56, 0x34, 0x12, 0x10, 0x00);	/* lcall $0x10,$0x12345678 */
	assert_int_equal(out.result, EMUL_OK);
	assert_int_equal(f.eip, 0x12345678);
	assert_int_equal(f.cs, 0x10);
	assert_int_equal(f.esp, STACK - 8);
	assert_int_equal(get32(STACK - 8), CODE + 7);	/* return eip */
	assert_int_equal(get32(STACK - 4), 0x11);	/* old cs */
	assert_int_equal(out.kind, EMUL_KIND_FAR_CALL);

	f.eip = CODE; f.esp = STACK; f.cs = 0x11;
	put32(DATA, 0x4000); put16(DATA + 4, 0x21);
	RUN(0xff, 0x1d, 0x00, 0x20, 0x00, 0x00);	/* lcall *0x2000 */
	assert_int_equal(f.eip, 0x4000);
	assert_int_equal(f.cs, 0x21);
	assert_int_equal(get32(STACK - 8), CODE + 6);

	/* the stack push faults: nothing changes */
	f.eip = CODE; f.esp = STACK; f.cs = 0x11; fk.nseg = 0;
	fk.unmapped[(STACK - 4) / 4096] = true;
	RUN(0x9a, 0x78, 0x56, 0x34, 0x12, 0x10, 0x00);
	FAULT(14, 0x6);
	assert_int_equal(out.cr2, STACK - 8);
	assert_int_equal(f.esp, STACK);
	assert_int_equal(fk.nseg, 0);
}

static void far_ret(void **s)
{
	put32(STACK, 0x5000); put32(STACK + 4, 0x10);
	RUN(0xcb);					/* lret */
	assert_int_equal(out.result, EMUL_OK);
	assert_int_equal(f.eip, 0x5000);
	assert_int_equal(f.cs, 0x10);
	assert_int_equal(f.esp, STACK + 8);
	assert_int_equal(out.kind, EMUL_KIND_FAR_RET);

	f.eip = CODE; f.esp = STACK;
	RUN(0xca, 0x08, 0x00);				/* lret $8 */
	assert_int_equal(out.len, 3);
	assert_int_equal(f.esp, STACK + 16);

	/* to user mode: also pops esp and ss, imm applies to both stacks */
	f.eip = CODE; f.esp = STACK; fk.nseg = 0;
	put32(STACK + 4, 0x23);
	put32(STACK + 16, 0xbff0); put32(STACK + 20, 0x2b);
	RUN(0xca, 0x08, 0x00);
	assert_int_equal(out.result, EMUL_OK);
	assert_int_equal(f.cs, 0x23);
	assert_int_equal(f.ss, 0x2b);
	assert_int_equal(f.esp, 0xbff8);
	assert_int_equal(fk.nseg, 2);

	/* a null CS is #GP(0) */
	f.eip = CODE; f.esp = STACK; f.cs = 0x11;
	put32(STACK + 4, 0x3);
	RUN(0xcb);
	FAULT(13, 0);
	assert_int_equal(f.esp, STACK);
}

static void iret_same_level(void **s)
{
	/* popped flags: IF, IOPL 3, CF, DF, VIF: only CF/DF reach the real
	 * flags; IF goes to the virtual flag; IOPL stays 0 */
	put32(STACK, 0x6000); put32(STACK + 4, 0x10); put32(STACK + 8, 0x80000 | 0x3000 | 0x200 | 0x401);
	fk.if_flag = false;
	RUN(0xcf);
	assert_int_equal(out.result, EMUL_OK);
	assert_int_equal(f.eip, 0x6000);
	assert_int_equal(f.cs, 0x10);
	assert_int_equal(f.esp, STACK + 12);
	assert_int_equal(f.eflags, 0x603);
	assert_true(fk.if_flag);
	assert_int_equal(out.kind, EMUL_KIND_IRET);

	/* IF clear in the popped flags clears the virtual IF, not the real one */
	f.eip = CODE; f.esp = STACK;
	put32(STACK + 8, 0x2);
	RUN(0xcf);
	assert_false(fk.if_flag);
	assert_int_equal(f.eflags, 0x202);
}

static void iret_to_user(void **s)
{
	put32(STACK, 0x08048000); put32(STACK + 4, 0x73); put32(STACK + 8, 0x246);
	put32(STACK + 12, 0xbffff000); put32(STACK + 16, 0x7b);
	RUN(0xcf);
	assert_int_equal(out.result, EMUL_OK);
	assert_int_equal(f.eip, 0x08048000);
	assert_int_equal(f.cs, 0x73);
	assert_int_equal(f.ss, 0x7b);
	assert_int_equal(f.esp, 0xbffff000);
	assert_int_equal(f.eflags, 0x246);
	assert_int_equal(fk.segs[0].seg, SEG_CS_RETURN);
	assert_int_equal(fk.segs[1].seg, SEG_SS);

	/* the SS load fails after CS was installed: the whole frame is restored */
	f.eip = CODE; f.esp = STACK; f.cs = 0x11; f.ss = 0x19; f.eflags = 0x202; fk.nseg = 0;
	fk.fail_sel = 0x7b;
	RUN(0xcf);
	FAULT(13, 0x78);
	assert_int_equal(f.cs, 0x11);
	assert_int_equal(f.esp, STACK);
	assert_int_equal(f.eflags, 0x202);
}

static void iret_rejections(void **s)
{
	put32(STACK, 0x6000); put32(STACK + 4, 0x10); put32(STACK + 8, 0x20202);
	assert_int_equal(RUN(0xcf), EMUL_UNSUPPORTED);
	assert_string_equal(out.brk.why, "unsupported instruction cf (iret to virtual-8086 mode)");
	assert_int_equal(f.eip, CODE);
	f.eip = CODE;
	put32(STACK + 8, 0x4202);
	assert_int_equal(RUN(0xcf), EMUL_UNSUPPORTED);
	f.eip = CODE;
	f.eflags = 0x4202;
	assert_int_equal(RUN(0xcf), EMUL_UNSUPPORTED);
	assert_string_equal(out.brk.why, "unsupported instruction cf (iret with EFLAGS.NT set (task return))");
	f.eip = CODE; f.eflags = 0x202;
	assert_int_equal(RUN(0x66, 0xcf), EMUL_UNSUPPORTED);

	/* from user mode, a return to the kernel is #GP(selector) and IF is untouched */
	f.eip = CODE; f.cs = 0x73;
	put32(STACK + 8, 0x202);
	RUN3(0xcf);
	FAULT(13, 0x10);
	assert_false(fk.set_if_called);
	/* user to user: allowed, IF not the user's to change */
	f.eip = CODE;
	put32(STACK + 4, 0x73); put32(STACK + 8, 0x2);
	RUN3(0xcf);
	assert_int_equal(out.result, EMUL_OK);
	assert_false(fk.set_if_called);
	assert_int_equal(f.eflags, 0x202);
}

/* ---- port I/O ---- */
static void in_out(void **s)
{
	f.eax = 0x11223344;
	fk.in_val = 0xa5a5a5a5;
	RUN(0xe4, 0x60);				/* in $0x60,%al */
	OK_LEN(2);
	assert_int_equal(f.eax, 0x112233a5);
	assert_int_equal(fk.io[0].port, 0x60);
	assert_int_equal(fk.io[0].size, 1);
	assert_int_equal(out.kind, EMUL_KIND_IN);

	f.eip = CODE; fk.in_val = 0xcafe1234;
	RUN(0x66, 0xe5, 0x60);				/* in $0x60,%ax */
	OK_LEN(3);
	assert_int_equal(f.eax, 0x11221234);
	f.eip = CODE; fk.in_val = 0xcafe1234;
	RUN(0xe5, 0x60);				/* in $0x60,%eax */
	OK_LEN(2);
	assert_int_equal(f.eax, 0xcafe1234);
	f.eip = CODE; f.edx = 0x3f8; fk.in_val = 0x41;
	RUN(0xec);					/* in (%dx),%al */
	OK_LEN(1);
	assert_int_equal(fk.io[3].port, 0x3f8);
	assert_int_equal(f.eax & 0xff, 0x41);

	fk.nio = 0;
	f.eip = CODE; f.eax = 0x12345678;
	RUN(0xe6, 0x80);				/* out %al,$0x80 */
	OK_LEN(2);
	assert_true(fk.io[0].out);
	assert_int_equal(fk.io[0].port, 0x80);
	assert_int_equal(fk.io[0].val, 0x78);
	assert_int_equal(out.kind, EMUL_KIND_OUT);
	f.eip = CODE;
	RUN(0xef);					/* out %eax,(%dx) */
	OK_LEN(1);
	assert_int_equal(fk.io[1].val, 0x12345678);
	assert_int_equal(fk.io[1].size, 4);
	f.eip = CODE;
	RUN(0x66, 0xef);				/* out %ax,(%dx) */
	OK_LEN(2);
	assert_int_equal(fk.io[2].val, 0x5678);
	assert_int_equal(fk.io[2].size, 2);
}

static void in_out_faults(void **s)
{
	RUN3(0xee);
	FAULT(13, 0);
	assert_int_equal(fk.nio, 0);
	f.eip = CODE;
	fk.io_fail = true;
	f.eax = 0x55;
	RUN(0xe4, 0x21);
	FAULT(13, 0);
	assert_int_equal(f.eax, 0x55);
}

static void rep_outs_ins(void **s)
{
	memcpy(fk.mem + DATA, "abc", 3);
	f.esi = DATA; f.ecx = 3; f.edx = 0x3f8;
	RUN(0xf3, 0x6e);				/* rep outsb */
	OK_LEN(2);
	assert_int_equal(fk.nio, 3);
	assert_int_equal(fk.io[0].val, 'a');
	assert_int_equal(fk.io[2].val, 'c');
	assert_int_equal(f.esi, DATA + 3);
	assert_int_equal(f.ecx, 0);
	assert_int_equal(out.kind, EMUL_KIND_OUTS);

	/* backwards with DF, ES override on the source */
	fk.nio = 0;
	f.eip = CODE; f.esi = 0x102; f.ecx = 2; f.eflags |= 0x400;
	fk.base[SEG_ES] = DATA - 0x100;
	RUN(0x26, 0xf3, 0x6e);
	OK_LEN(3);
	assert_int_equal(fk.io[0].val, 'c');
	assert_int_equal(fk.io[1].val, 'b');
	assert_int_equal(f.esi, 0x100);
	f.eflags &= ~0x400u;

	/* rep insl to es:edi (the ES base applies; no override possible) */
	fk.nio = 0;
	f.eip = CODE; f.edi = 0x200; f.ecx = 2; fk.in_val = 0x11111111;
	RUN(0xf3, 0x6d);
	OK_LEN(2);
	assert_int_equal(get32(DATA + 0x100), 0x11111111);
	assert_int_equal(get32(DATA + 0x104), 0x12121212);
	assert_int_equal(f.edi, 0x208);
	assert_int_equal(out.kind, EMUL_KIND_INS);

	/* count 0: nothing happens, the instruction completes */
	fk.nio = 0;
	f.eip = CODE; f.ecx = 0;
	RUN(0xf3, 0x6e);
	OK_LEN(2);
	assert_int_equal(fk.nio, 0);

	/* no rep: one iteration, ecx untouched */
	f.eip = CODE; f.ecx = 77; f.esi = DATA;
	RUN(0x6e);
	OK_LEN(1);
	assert_int_equal(fk.nio, 1);
	assert_int_equal(f.ecx, 77);

	/* 16-bit addressing: si and cx, the high halves stay */
	fk.nio = 0;
	f.eip = CODE; f.esi = 0xabcd0000 | DATA; f.ecx = 0x99990002;
	fk.base[SEG_DS] = 0;
	RUN(0x67, 0xf3, 0x6e);
	OK_LEN(3);
	assert_int_equal(fk.nio, 2);
	assert_int_equal(f.esi, 0xabcd0000 | (DATA + 2));
	assert_int_equal(f.ecx, 0x99990000);
}

static void rep_long_count_restarts(void **s)
{
	f.esi = 0; f.ecx = 5000; f.edx = 0x80;
	RUN(0xf3, 0x6e);
	assert_int_equal(out.result, EMUL_OK);
	assert_int_equal(f.eip, CODE);		/* not finished: runs again */
	assert_int_equal(f.ecx, 5000 - 4096);
	assert_int_equal(f.esi, 4096);
	RUN(0xf3, 0x6e);
	OK_LEN(2);
	assert_int_equal(f.ecx, 0);
	assert_int_equal(fk.nio, 5000);
}

static void rep_fault_keeps_progress(void **s)
{
	fk.unmapped[3] = true;
	f.esi = 0x3000 - 2; f.ecx = 4;
	RUN(0xf3, 0x6e);
	FAULT(14, 0x4);
	assert_int_equal(out.cr2, 0x3000);
	assert_int_equal(fk.nio, 2);
	assert_int_equal(f.ecx, 2);
	assert_int_equal(f.esi, 0x3000);
}

/* emul_string_io_batch: the VMI INS/OUTS calls' loop (hypercall.c). */
static void string_io_batch_forward(void **s)
{
	uint32_t lin = DATA, count = 3;

	/* OUTSB: bytes in order, forward whatever DF says (no frame here) */
	memcpy(fk.mem + DATA, "xyz", 3);
	assert_int_equal(emul_string_io_batch(&ops, true, 0x3f8, 1, &lin, &count, &out), EMUL_OK);
	assert_int_equal(fk.nio, 3);
	assert_int_equal(fk.io[0].val, 'x');
	assert_int_equal(fk.io[2].val, 'z');
	assert_true(fk.io[2].out && fk.io[2].port == 0x3f8 && fk.io[2].size == 1);
	assert_int_equal(lin, DATA + 3);
	assert_int_equal(count, 0);
	assert_int_equal(out.kind, EMUL_KIND_OUTS);

	/* INSW: the port's words stored little-endian, the next word untouched */
	fk.nio = 0;
	fk.in_val = 0x1234;
	lin = DATA + 0x100; count = 2;
	put32(DATA + 0x104, 0xa5a5a5a5);
	assert_int_equal(emul_string_io_batch(&ops, false, 0x70, 2, &lin, &count, &out), EMUL_OK);
	assert_int_equal(get32(DATA + 0x100), 0x13351234);
	assert_int_equal(get32(DATA + 0x104), 0xa5a5a5a5);
	assert_int_equal(lin, DATA + 0x104);
	assert_int_equal(out.kind, EMUL_KIND_INS);

	/* count 0: nothing */
	fk.nio = 0;
	count = 0;
	assert_int_equal(emul_string_io_batch(&ops, true, 0x80, 4, &lin, &count, &out), EMUL_OK);
	assert_int_equal(fk.nio, 0);
}

static void string_io_batch_bounded(void **s)
{
	uint32_t lin = 0, count = 0xffffffffu;

	assert_int_equal(emul_string_io_batch(&ops, true, 0x80, 1, &lin, &count, &out), EMUL_OK);
	assert_int_equal(fk.nio, EMUL_REP_BATCH);
	assert_int_equal(count, 0xffffffffu - EMUL_REP_BATCH);
	assert_int_equal(lin, EMUL_REP_BATCH);
}

/* A byte to the console UART waits for the real one: a batch ends after
 * EMUL_REP_SLOW_MAX of them, for the VMI call and for rep outsb. */
static void string_io_slow_device_bounded(void **s)
{
	uint32_t lin = DATA, count = 4096;

	assert_int_equal(emul_string_io_batch(&ops, true, SLOW_PORT, 1, &lin, &count, &out), EMUL_OK);
	assert_int_equal(fk.nio, EMUL_REP_SLOW_MAX);
	assert_int_equal(count, 4096 - EMUL_REP_SLOW_MAX);
	assert_int_equal(lin, DATA + EMUL_REP_SLOW_MAX);
	fk.nio = 0;
	f.esi = DATA; f.ecx = 100; f.edx = SLOW_PORT;
	RUN(0xf3, 0x6e);				/* rep outsb */
	assert_int_equal(out.result, EMUL_OK);
	assert_int_equal(f.eip, CODE);			/* left unfinished */
	assert_int_equal(fk.nio, EMUL_REP_SLOW_MAX);
	assert_int_equal(f.ecx, 100 - EMUL_REP_SLOW_MAX);
	assert_int_equal(f.esi, DATA + EMUL_REP_SLOW_MAX);
}

static void string_io_batch_fault(void **s)
{
	uint32_t lin = 0x3000 - 6, count = 4;

	/* INS: the element across the page boundary faults at the page's
	 * start; the one before it is done and counted */
	fk.unmapped[3] = true;
	assert_int_equal(emul_string_io_batch(&ops, false, 0x80, 4, &lin, &count, &out), EMUL_FAULT);
	assert_int_equal(out.vector, 14);
	assert_int_equal(out.error, 0x6);
	assert_int_equal(out.cr2, 0x3000);
	assert_int_equal(lin, 0x3000 - 2);
	assert_int_equal(count, 3);
}

/* ---- decoding ---- */
struct ea_case {
	uint8_t bytes[10];
	unsigned len;
	uint32_t lin;		/* where the 6-byte operand must be read */
};

static void modrm_sib_lengths(void **s)
{
	/* lgdt with every addressing form; eax=0x100 ecx=0x10 ebx=0x20 ebp=0x300 esi=0x8 edi=0x4, SS base 0x10000 */
	static const struct ea_case cases[] = {
		{ { 0x0f, 0x01, 0x10 }, 3, 0x100 },					/* (%eax) */
		{ { 0x0f, 0x01, 0x15, 0x78, 0x56, 0x00, 0x00 }, 7, 0x5678 },		/* disp32 */
		{ { 0x0f, 0x01, 0x14, 0x88 }, 4, 0x140 },				/* (%eax,%ecx,4) */
		{ { 0x0f, 0x01, 0x14, 0x8d, 0x00, 0x30, 0x00, 0x00 }, 8, 0x3040 },	/* 0x3000(,%ecx,4) */
		{ { 0x0f, 0x01, 0x55, 0x08 }, 4, 0x10308 },				/* 8(%ebp): SS */
		{ { 0x0f, 0x01, 0x90, 0x00, 0x01, 0x00, 0x00 }, 7, 0x200 },		/* 0x100(%eax) */
		{ { 0x0f, 0x01, 0x14, 0x24 }, 4, 0x10000 + STACK },			/* (%esp): SS */
		{ { 0x0f, 0x01, 0x54, 0x5c, 0x10 }, 5, 0x10000 + STACK + 0x50 },	/* 0x10(%esp,%ebx,2) */
		{ { 0x0f, 0x01, 0x50, 0xf0 }, 4, 0xf0 },				/* -0x10(%eax) */
		{ { 0x0f, 0x01, 0x14, 0x65, 0x00, 0x50, 0x00, 0x00 }, 8, 0x5000 },	/* 0x5000(,%eiz): no index */
		{ { 0x67, 0x0f, 0x01, 0x10 }, 4, 0x28 },				/* (%bx,%si) */
		{ { 0x67, 0x0f, 0x01, 0x16, 0x34, 0x12 }, 6, 0x1234 },			/* disp16 */
		{ { 0x67, 0x0f, 0x01, 0x56, 0x08 }, 5, 0x10308 },			/* 8(%bp): SS */
		{ { 0x67, 0x0f, 0x01, 0x91, 0x34, 0x12 }, 6, 0x1258 },			/* 0x1234(%bx,%di) */
		{ { 0x3e, 0x0f, 0x01, 0x55, 0x08 }, 5, 0x308 },				/* %ds:8(%ebp) */
		{ { 0x36, 0x0f, 0x01, 0x10 }, 4, 0x10100 },				/* %ss:(%eax) */
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setup(NULL);
		f.eax = 0x100; f.ecx = 0x10; f.ebx = 0x20; f.ebp = 0x300; f.esi = 0x8; f.edi = 0x4;
		fk.base[SEG_SS] = 0x10000;
		put16(cases[i].lin, (uint16_t)(0x100 + i));
		put32(cases[i].lin + 2, 0xc0000000 + i);
		run_cpl(1, cases[i].bytes, cases[i].len);
		OK_LEN(cases[i].len);
		assert_int_equal(fk.dtr_limit, 0x100 + i);
		assert_int_equal(fk.dtr_base, 0xc0000000 + i);
		assert_memory_equal(out.bytes, cases[i].bytes, cases[i].len);
	}
}

static void fifteen_byte_limit(void **s)
{
	uint8_t b[16];
	memset(b, 0x66, sizeof(b));
	b[14] = 0xfa;			/* 14 prefixes + cli = 15 bytes: fine */
	run_cpl(1, b, 15);
	OK_LEN(15);
	f.eip = CODE;
	b[14] = 0x66; b[15] = 0xfa;	/* 16 bytes: #GP(0) */
	run_cpl(1, b, 16);
	FAULT(13, 0);
	assert_int_equal(out.len, 15);
	assert_false(fk.if_flag && fk.set_if_called);
}

static void fetch_fault(void **s)
{
	/* lgdt whose displacement continues onto an unmapped page */
	f.eip = 0x2ffd;
	fk.unmapped[3] = true;
	static const uint8_t b[] = { 0x0f, 0x01, 0x15 };
	memcpy(fk.mem + f.eip, b, 3);
	assert_int_equal(emulate_one(&f, 1, &ops, &out), EMUL_FAULT);
	assert_int_equal(out.vector, 14);
	assert_int_equal(out.error, 0x4);
	assert_int_equal(out.cr2, 0x3000);
	assert_int_equal(f.eip, 0x2ffd);
	assert_int_equal(out.len, 3);

	/* the CS base applies to the fetch */
	setup(NULL);
	fk.base[SEG_CS] = 0x100;
	f.eip = CODE - 0x100;
	fk.mem[CODE] = 0xfa;
	assert_int_equal(emulate_one(&f, 1, &ops, &out), EMUL_OK);
	assert_int_equal(f.eip, CODE - 0x100 + 1);
}

static void unsupported_reported_exactly(void **s)
{
	struct trap_frame before;
	f.eax = 1;
	before = f;
	assert_int_equal(RUN(0x0f, 0x0d, 0x08), EMUL_UNSUPPORTED);	/* prefetch */
	assert_string_equal(out.brk.why, "unsupported instruction 0f 0d");
	assert_int_equal(out.len, 2);
	assert_memory_equal(out.bytes, "\x0f\x0d", 2);
	assert_int_equal(out.kind, EMUL_KIND_OTHER);
	assert_memory_equal(&f, &before, sizeof(f));

	assert_int_equal(RUN(0xf3, 0x90), EMUL_UNSUPPORTED);	/* pause */
	assert_string_equal(out.brk.why, "unsupported instruction f3 90");
	assert_int_equal(RUN(0xff, 0xc0), EMUL_UNSUPPORTED);	/* inc %eax */
	assert_string_equal(out.brk.why, "unsupported instruction ff c0 (ff group form)");
	assert_int_equal(RUN(0x0f, 0x31), EMUL_UNSUPPORTED);	/* rdtsc */
	assert_string_equal(out.brk.why, "unsupported instruction 0f 31");
	assert_int_equal(RUN(0xf0, 0x0f, 0xff), EMUL_UNSUPPORTED);
	assert_string_equal(out.brk.why, "unsupported instruction f0 0f ff");
	assert_memory_equal(&f, &before, sizeof(f));
}

static void ud2_is_reflected(void **s)
{
	RUN(0x0f, 0x0b);
	FAULT(6, 0);
	assert_int_equal(out.len, 2);
}

/* Every emulated-instruction encoding in the real guest kernel decodes to
 * exactly objdump's length and is emulated (ud2 is reflected as #UD). */
static void linux_kernel_forms(void **s)
{
	unsigned n = sizeof(kernel_forms) / sizeof(kernel_forms[0]);
	assert_true(n > 100);
	for (unsigned i = 0; i < n; i++) {
		const struct kernel_form *k = &kernel_forms[i];
		setup(NULL);
		fk.wrap = true;
		f.ecx = 1;
		put32(STACK + 4, 0x10);			/* lret/iret: kernel CS */
		put32(STACK + 8, 0x2);			/* iret: flags */
		enum emul_result r = run_cpl(1, k->bytes, k->len);
		bool ok = r == EMUL_OK || r == EMUL_HALT ||
			  (r == EMUL_FAULT && out.vector == 6 && k->bytes[k->len - 1] == 0x0b);
		bool far = strncmp(k->insn, "ljmp", 4) == 0 || strncmp(k->insn, "lret", 4) == 0 ||
			   strncmp(k->insn, "iret", 4) == 0 || strncmp(k->insn, "lcall", 5) == 0;
		if (!ok || out.len != k->len || (r != EMUL_FAULT && !far && f.eip != CODE + k->len))
			fail_msg("%s: result %d len %u (want %u) eip %#x: %s", k->insn, r, out.len, k->len,
				 f.eip, out.brk.why);
	}
}

/* The return address of an int from user space is the instruction's
 * end, legacy prefixes included (docs/HV.md, "What the guest can reach": 66 cd 80 resumed at cd 80). */
static void soft_int_lengths(void **s)
{
	static const uint8_t int80[] = { 0xcd, 0x80 }, p66[] = { 0x66, 0xcd, 0x80 };
	static const uint8_t p3e[] = { 0x3e, 0xcd, 0x80 }, many[] = { 0xf3, 0x2e, 0x66, 0x67, 0xcd, 0x80 };
	static const uint8_t int3[] = { 0xcc }, into[] = { 0x66, 0xce }, nop[] = { 0x90 };
	static const uint8_t prefixes_only[] = { 0x66, 0x66, 0x66 };
	uint8_t fifteen[16];

	assert_int_equal(emul_soft_int_length(int80, sizeof(int80)), 2);
	assert_int_equal(emul_soft_int_length(p66, sizeof(p66)), 3);
	assert_int_equal(emul_soft_int_length(p3e, sizeof(p3e)), 3);
	assert_int_equal(emul_soft_int_length(many, sizeof(many)), 6);
	assert_int_equal(emul_soft_int_length(int3, sizeof(int3)), 1);
	assert_int_equal(emul_soft_int_length(into, sizeof(into)), 2);
	assert_int_equal(emul_soft_int_length(nop, sizeof(nop)), 0);
	assert_int_equal(emul_soft_int_length(prefixes_only, sizeof(prefixes_only)), 0);
	/* The opcode byte alone is enough: the vector comes from the error code. */
	assert_int_equal(emul_soft_int_length(p66, 2), 3);
	/* 14 prefixes and cd ib is 16 bytes: beyond the CPU's limit. */
	memset(fifteen, 0x66, sizeof(fifteen));
	fifteen[14] = 0xcd;
	assert_int_equal(emul_soft_int_length(fifteen, 15), 0);
	fifteen[13] = 0xcd;
	assert_int_equal(emul_soft_int_length(fifteen, 15), 15);
}

/* strict_pt's report: the value a faulting store would write, read off
 * the instruction without executing it (store.c). */
static uint32_t store_value(bool *ok, const uint8_t *bytes, unsigned n)
{
	uint32_t val = 0xdeadbeef;
	struct trap_frame before;

	memcpy(fk.mem + f.eip, bytes, n);
	before = f;
	*ok = emulate_store_value(&f, 1, &ops, &val);
	assert_memory_equal(&before, &f, sizeof(f));	/* nothing executed */
	return val;
}
#define STORE(ok, ...) ({ static const uint8_t b_[] = { __VA_ARGS__ }; store_value(ok, b_, sizeof(b_)); })

static void store_values(void **state)
{
	bool ok;

	f.edx = 0x1234567;
	f.eax = 0x2000;
	assert_int_equal(STORE(&ok, 0x89, 0x10), 0x1234567);		/* mov %edx,(%eax) */
	assert_true(ok);
	assert_int_equal(STORE(&ok, 0x89, 0x50, 0x04), 0x1234567);	/* mov %edx,4(%eax) */
	assert_true(ok);
	assert_int_equal(STORE(&ok, 0x87, 0x10), 0x1234567);		/* xchg %edx,(%eax) */
	assert_true(ok);
	assert_int_equal(STORE(&ok, 0xc7, 0x00, 0, 0, 0, 0), 0);	/* movl $0,(%eax) */
	assert_true(ok);
	assert_int_equal(STORE(&ok, 0xc7, 0x44, 0x24, 0x08, 0x63, 0x10, 0x20, 0x00), 0x201063);
	assert_true(ok);						/* movl $0x201063,8(%esp) */
	STORE(&ok, 0x89, 0xd0);		/* mov %edx,%eax: no memory */
	assert_false(ok);
	STORE(&ok, 0x66, 0x89, 0x10);	/* mov %dx,(%eax): not 32 bits */
	assert_false(ok);
	STORE(&ok, 0x0f, 0xab, 0x10);	/* bts %edx,(%eax): not a plain store */
	assert_false(ok);
}

#define T(fn) cmocka_unit_test_setup(fn, setup)
int main(void)
{
	const struct CMUnitTest tests[] = {
		T(kind_names), T(cli_sti), T(cli_from_user_is_gp), T(lock_prefix_is_ud), T(hlt),
		T(lgdt_forms), T(lgdt_from_user_is_gp), T(lgdt_operand_fault), T(sgdt_sidt), T(lldt_ltr),
		T(mov_cr), T(mov_cr_faults), T(mov_dr), T(clts_lmsw_smsw), T(msr_cpuid), T(rdpmc_virtual_zero),
		T(wbinvd_invd_invlpg), T(mov_sreg), T(mov_sreg_faults), T(pop_sreg), T(load_far_pointers),
		T(far_jmp), T(far_jmp_bad_selector), T(far_call), T(far_ret), T(iret_same_level),
		T(iret_to_user), T(iret_rejections), T(in_out), T(in_out_faults), T(rep_outs_ins),
		T(rep_long_count_restarts), T(rep_fault_keeps_progress), T(string_io_batch_forward),
		T(string_io_batch_bounded), T(string_io_slow_device_bounded), T(string_io_batch_fault), T(modrm_sib_lengths),
		T(fifteen_byte_limit), T(fetch_fault), T(unsupported_reported_exactly), T(ud2_is_reflected),
		T(store_values),
		T(linux_kernel_forms), T(soft_int_lengths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
