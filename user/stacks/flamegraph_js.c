// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * flamegraph.js inside the binary as one NUL-terminated string (flamegraph_js.h): the script
 * stays a file of its own, readable and checkable as JavaScript. The Makefile makes this
 * object depend on it (-MMD does not see .incbin).
 */
#include "flamegraph_js.h"

__asm__(".section .rodata.flamegraph_js, \"a\"\n"
	".globl flamegraph_js\n"
	".type flamegraph_js, @object\n"
	"flamegraph_js:\n"
	".incbin \"user/stacks/flamegraph.js\"\n"
	".byte 0\n"
	".size flamegraph_js, . - flamegraph_js\n"
	".previous\n");
