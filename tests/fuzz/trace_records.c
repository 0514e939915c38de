// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Makes a fuzz_decode seed from a real trace: the options byte, then the trace's records as
 * the reader hands them over, back to back (fuzz_decode.c's input format). Every STRING,
 * PROCESS, THREAD and SYMBOL record is kept (the others' names), and at most MAX records of
 * each other type (default 4), so that a seed stays small.
 *   cc -O2 -D_GNU_SOURCE -Iuser/core -Iuser/lib -Ibpf tests/fuzz/trace_records.c user/core/trace_reader.c \
 *      user/core/trace_codec.c user/core/trace_meta.c user/core/trace_chunk_dec.c \
 *      user/core/trace_columns_dec.c -lzstd -lz -o /tmp/trace_records
 *   /tmp/trace_records TRACE.bst OUT [OPTIONS_BYTE [MAX]]
 */
#include <stdio.h>
#include <stdlib.h>
#include "trace_reader.h"

static int always_kept(__u16 type)
{
	return type == BS_REC_STRING || type == BS_REC_PROCESS || type == BS_REC_THREAD ||
	       type == BS_REC_SYMBOL;
}

int main(int argc, char **argv)
{
	static unsigned int seen[BS_REC_TYPE_MAX];
	unsigned int max = argc > 4 ? (unsigned int)atoi(argv[4]) : 4, kept = 0;
	const struct bs_hdr *h;
	struct trace_reader *r;
	char err[256] = "";
	FILE *out;
	int e = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: %s TRACE OUT [OPTIONS_BYTE [MAX_PER_TYPE]]\n", argv[0]);
		return 2;
	}
	r = trace_reader__open(argv[1], err, sizeof(err), &e);
	if (!r) {
		fprintf(stderr, "%s: %s\n", argv[1], err);
		return 1;
	}
	out = fopen(argv[2], "wb");
	if (!out) {
		perror(argv[2]);
		trace_reader__free(r);
		return 1;
	}
	fputc(argc > 3 ? (int)strtol(argv[3], NULL, 0) : 0, out);
	while (trace_reader__next(r, &h) == 1) {
		if (!always_kept(h->type) && seen[h->type]++ >= max)
			continue;
		fwrite(h, 1, h->size, out);
		kept++;
	}
	trace_reader__free(r);
	if (fclose(out)) {
		perror(argv[2]);
		return 1;
	}
	printf("%s: %u records\n", argv[2], kept);
	return 0;
}
