// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the Python line-table decoders (user/python/py_stack.c): the tables are read
 * from the traced process's memory, so any bytes. Input: 4 bytes of first line, 8 of
 * instruction index/offset, then the table; all three decoders run on it, and each answer
 * must be 0 or a line no further than the table could move it from the first. The whole
 * input is also decoded as the start of _PyRuntime (_Py_DebugOffsets, user/python/py_debug_offsets.c),
 * likewise read from the process: it must stay inside the bytes it is given.
 *   build/tests/fuzz_pylines -runs=100000 CORPUS tests/fuzz/seeds-pylines
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "py_debug_offsets.h"
#include "py_stack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	__u32 first;
	__s64 at;
	uint8_t *t;
	size_t n;

	if (size < 12)
		return 0;
	memcpy(&first, data, 4);
	memcpy(&at, data + 4, 8);
	first &= 0xffffff; /* a real first line: no overflow games with the sum below */
	n = size - 12;
	t = malloc(n ? n : 1); /* exactly the table: a read past it trips ASan */
	if (!t)
		return 0;
	memcpy(t, data + 12, n);
	/* Every entry moves the line by at most 2^31 (a varint) or 127: bounded by the table. */
	if (py_stack__line(t, n, first, at) > first + (__u64)n * 0x80000000ull ||
	    py_stack__line310(t, n, first, at) > first + 127 * (__u64)n ||
	    py_stack__lnotab(t, n, first, at) > first + 127 * (__u64)n)
		abort();
	free(t);
	t = malloc(size); /* exactly the input: a read past it trips ASan */
	if (!t)
		return 0;
	memcpy(t, data, size);
	{
		struct py_dbg o;
		char why[160];

		/* ASan and UBSan are the checks, and: a table read says where its fields are. */
		if (!py_dbg__parse(t, size, &o, why, sizeof(why)) &&
		    (!o.format || o.ts_next != 8 || o.fr_executable != 0 ||
		     o.co_name != o.co_filename + 8))
			abort();
	}
	free(t);
	return 0;
}
