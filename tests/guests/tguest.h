/*
 * tguest.h - what the test guest's files share: its console (the emulated
 * COM1) and raw VMI calls (int $0x82, registers as the ROM passes them).
 */
#ifndef TGUEST_H
#define TGUEST_H
#include <stdint.h>

/* xAPIC register offsets and the LVT mask bit, as APICRead/APICWrite take
 * them (the SMP modes: tguest_smp.c, tguest_rates.c, tguest_smpfuzz*.c). */
#define APIC_ID 0x20
#define APIC_VERSION 0x30
#define APIC_TPR 0x80
#define APIC_EOI 0xb0
#define APIC_SVR 0xf0
#define APIC_ICR_LO 0x300
#define APIC_ICR_HI 0x310
#define APIC_LVTT 0x320
#define APIC_LVT_MASKED 0x10000u

void putc(char c);
void puts(const char *s);
void puthex(uint32_t v);
int has_word(const char *cmdline, const char *word);
/* VMI call `call` with eax, edx, ecx and the two stack words (ebx, esi);
 * returns eax. */
uint32_t vmi_call5(uint32_t call, uint32_t a, uint32_t d, uint32_t c, uint32_t b, uint32_t s);
/* "PREFIXwhat xxxxxxxx\n": a value on the console, as the tests read it. */
void say_value(const char *prefix, const char *what, uint32_t v);

/* The 32-bit TSS as the CPU reads it (the fields the test guests set:
 * esp0/ss0 for a trap from ring 3, iomap_base). */
struct __attribute__((packed)) tss32 {
	uint32_t link, esp0, ss0, esp1, ss1, esp2, ss2;
	uint32_t cr3, eip, eflags, eax, ecx, edx, ebx, esp, ebp, esi, edi;
	uint32_t es, cs, ss, ds, fs, gs, ldt;
	uint16_t trap, iomap_base;
};

/* Marsaglia's xorshift32: the fuzzers' reproducible stream from a seed
 * (a state of 0 stays 0: seed it odd). */
static inline uint32_t xorshift32(uint32_t *state)
{
	uint32_t x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *state = x;
}

/* The number after `key` on the command line (decimal), or def. */
uint32_t cmdline_number(const char *cmdline, const char *key, uint32_t def);

/* tguest_sfuzz.c: tguest=sfuzz:SEED, sfuzz_calls=N, sfuzz_trace (each
 * call and queued entry printed, to replay a failing seed). */
void sfuzz_run(const uint8_t *boot_params, uint32_t seed, uint32_t calls, int trace);
/* tguest_sfuzz.c: the top of the RAM the boot protocol's e820 map lists. */
uint32_t tguest_e820_top(const uint8_t *boot_params);
/* tguest_smpfuzz_run.c: tguest=smpfuzz:SEED (smp_vcpus=N, smpfuzz_calls=N,
 * smpfuzz_epochs=E, smpfuzz_final=K, smpfuzz_skip=..., smpfuzz_trace);
 * 0 if the command line does not name it. */
int smpfuzz_main(const uint8_t *boot_params, const char *cmdline);
/* tguest_smpfuzz.c: tguest=alarmwrap; 0 if the command line does not name it. */
int alarm_wrap_main(const char *cmdline);
/* tguest_hostile.c: tguest=h:CASE and tguest=idle; 0 if the command line
 * names neither. */
int hostile_main(const uint8_t *boot_params, const char *cmdline);
/* tguest_floods.c: tguest=f:CASE, tguest=busy, tguest=ticker; 0 if the
 * command line names none. */
int floods_main(const char *cmdline);
/* tguest_exits.c: tguest=exits; 0 if the command line does not name it. */
int exits_main(const char *cmdline);
/* tguest_smp.c: tguest=smp (vcpus=N); 0 if the command line does not name it. */
int smp_main(const char *cmdline);
/* tguest_smp.c: start vCPU id (SetInitialAPState) at fn(id), on flat
 * ring-1 segments and a stack of its own, with cr0 and cr3; its answer. */
uint32_t smp_start_ap(uint32_t id, void (*fn)(uint32_t), uint32_t cr0, uint32_t cr3);
/* tguest_smp_ends.c: tguest=smpdeath, tguest=smpinit (smp_vcpus=N); 0 if
 * the command line names neither. */
int smp_ends_main(const char *cmdline);
/* tguest_smp_mmu.c: tguest=smpmmu[:remap]; 0 if the command line does not name it. */
int smp_mmu_main(const char *cmdline);
/* tguest_smp_queue.c: tguest=smpq; 0 if the command line does not name it. */
int smp_queue_main(const char *cmdline);
/* tguest_rates.c: tguest=victim and the phased attackers tguest=rates:*;
 * 0 if the command line names none.  Windows of RATES_WINDOW_MS of TSC
 * time on a grid every guest sees alike, RATES_PHASE_WINDOWS of them a
 * phase: idle, busy, attack in turn (tests/lib/victim.py reads them so). */
#define RATES_WINDOW_MS 100
#define RATES_PHASE_WINDOWS 3
int rates_main(const char *cmdline);
/* The phase (0 idle, 1 busy, 2 attack) at TSC time tsc, and its end. */
uint32_t rates_phase(uint64_t tsc);
uint64_t rates_phase_end(uint64_t tsc);
/* tguest_swscan.c: tguest=swscan; 0 if the command line does not name it. */
int swscan_main(const char *cmdline);
#endif
