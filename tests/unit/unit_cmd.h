/*
 * unit_cmd.h -- shell command lines in unit tests, never silently cut.
 *
 * The build bakes absolute paths into the tests, and a checkout may sit deep
 * in the file system (CI's does).  A command that does not fit its buffer is
 * a test failure that says so, not a truncated command that fails in some
 * other, confusing way.  Include after <cmocka.h>.
 */
#ifndef UNIT_CMD_H
#define UNIT_CMD_H

#include <stdio.h>

#define CMD(buf, ...)								\
	do {									\
		int n_ = snprintf((buf), sizeof(buf), __VA_ARGS__);		\
		if (n_ < 0 || (size_t)n_ >= sizeof(buf))			\
			fail_msg("%s:%d: command line longer than %zu bytes "	\
				 "(is the checkout path very deep?)",		\
				 __FILE__, __LINE__, sizeof(buf));		\
	} while (0)

#endif
