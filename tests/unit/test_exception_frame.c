/*
 * Unit tests for hv/vcpu/exit/exception_frame.c: the words pushed when the
 * hypervisor delivers an exception or interrupt through the guest's IDT.
 * Each frame is built into an array of exactly EXC_FRAME_MAX_WORDS, on
 * the stack as in vcpu_exception.c, so that the sanitizers of the unit
 * build (hv/Makefile) catch a write past it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "exception_frame.h"

#define SS     0x2bu
#define ESP    0x0bfff000u
#define EFLAGS 0x00000246u
#define CS     0x23u
#define EIP    0x08048123u
#define ERROR  0x00000007u

static struct exc_frame_in frame_in(bool from_user, bool has_error)
{
	return (struct exc_frame_in){
		.stack_switch = from_user, .ss = SS, .esp = ESP,
		.eflags = EFLAGS, .cs = CS, .eip = EIP,
		.has_error = has_error, .error = ERROR,
	};
}

static void kernel_interrupt_is_three_words(void **state)
{
	struct exc_frame_in in = frame_in(false, false);
	uint32_t stack[EXC_FRAME_MAX_WORDS];
	const uint32_t want[] = { EIP, CS, EFLAGS };

	assert_int_equal(exc_frame_build(&in, stack), 3);
	assert_memory_equal(stack, want, sizeof(want));
}

static void kernel_fault_with_error_is_four_words(void **state)
{
	struct exc_frame_in in = frame_in(false, true);
	uint32_t stack[EXC_FRAME_MAX_WORDS];
	const uint32_t want[] = { ERROR, EIP, CS, EFLAGS };

	assert_int_equal(exc_frame_build(&in, stack), 4);
	assert_memory_equal(stack, want, sizeof(want));
}

static void user_interrupt_is_five_words(void **state)
{
	struct exc_frame_in in = frame_in(true, false);
	uint32_t stack[EXC_FRAME_MAX_WORDS];
	const uint32_t want[] = { EIP, CS, EFLAGS, ESP, SS };

	assert_int_equal(exc_frame_build(&in, stack), 5);
	assert_memory_equal(stack, want, sizeof(want));
}

/* Every page fault in guest user space: the largest frame there is. */
static void user_fault_with_error_is_six_words(void **state)
{
	struct exc_frame_in in = frame_in(true, true);
	uint32_t stack[EXC_FRAME_MAX_WORDS];
	const uint32_t want[] = { ERROR, EIP, CS, EFLAGS, ESP, SS };

	assert_int_equal(exc_frame_build(&in, stack), 6);
	assert_memory_equal(stack, want, sizeof(want));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(kernel_interrupt_is_three_words),
		cmocka_unit_test(kernel_fault_with_error_is_four_words),
		cmocka_unit_test(user_interrupt_is_five_words),
		cmocka_unit_test(user_fault_with_error_is_six_words),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
