/*
 * tguest.h - what the test guest's files share: its console (the emulated
 * COM1) and raw VMI calls (int $0x82, registers as the ROM passes them).
 */
#ifndef TGUEST_H
#define TGUEST_H
#include <stdint.h>

void putc(char c);
void puts(const char *s);
void puthex(uint32_t v);
int has_word(const char *cmdline, const char *word);
/* VMI call `call` with eax, edx, ecx and the two stack words (ebx, esi). */
void vmi_call5(uint32_t call, uint32_t a, uint32_t d, uint32_t c, uint32_t b, uint32_t s);

/* The number after `key` on the command line (decimal), or def. */
uint32_t cmdline_number(const char *cmdline, const char *key, uint32_t def);

/* tguest_sfuzz.c: tguest=sfuzz:SEED, sfuzz_calls=N, sfuzz_trace (each
 * call and queued entry printed, to replay a failing seed). */
void sfuzz_run(const uint8_t *boot_params, uint32_t seed, uint32_t calls, int trace);
/* tguest_hostile.c: tguest=h:CASE and tguest=idle; 0 if the command line
 * names neither. */
int hostile_main(const uint8_t *boot_params, const char *cmdline);
#endif
