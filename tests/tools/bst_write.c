// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bst_write: a trace file from a stream of raw records on stdin (each a struct bs_hdr and its
 * body, hdr.size bytes), written with the real trace writer. The readers' tests script records
 * no recorder can produce on this machine (GPU kernels, CUPTI records, NVTX ranges) with it:
 * tests/e2e/synth.py packs them as records.h lays them out.
 *
 *   bst_write [--families LIST] [--gpus TEXT] [--start NS] [--end NS] [--flush-every N]
 *             [--no-close] OUT
 *
 * --flush-every N ends a chunk after every N records (a recorder ends one a second), so a test
 * can spoil one chunk and keep the others; --no-close leaves the file as a killed recorder
 * would: no footer, no trailer. --gpus is the header's GPUs (BS_META_GPUS: "BUS MODEL" lines).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "records.h"
#include "trace_writer.h"

static int read_full(void *buf, size_t n)
{
	return fread(buf, 1, n, stdin) == n ? 0 : -1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "families", required_argument, NULL, 'f' },
		{ "gpus", required_argument, NULL, 'g' },
		{ "start", required_argument, NULL, 's' },
		{ "end", required_argument, NULL, 'e' },
		{ "flush-every", required_argument, NULL, 'F' },
		{ "no-close", no_argument, NULL, 'n' },
		{},
	};
	struct trace_meta meta = {
		.hostname = "synthetic",
		.kernel = "6.18",
		.cmdline = "bst_write (tests)",
		.families = "proc,cuda,gpu,nvtx",
		.target = "synthetic",
		.tool_version = "test",
		.start = { .mono_ns = 1000, .realtime_ns = 1700000000000000000ull },
	};
	struct trace_clocks end = { 0 };
	union {
		struct bs_hdr h;
		__u8 b[65536];
	} rec;
	struct trace_writer *w;
	int c, err = 0, no_close = 0;
	__u64 n = 0, flush_every = 0;

	while ((c = getopt_long(argc, argv, "f:g:s:e:F:n", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			meta.families = optarg;
			break;
		case 'g':
			meta.gpus = optarg;
			break;
		case 's':
			meta.start.mono_ns = strtoull(optarg, NULL, 0);
			break;
		case 'e':
			end.mono_ns = strtoull(optarg, NULL, 0);
			break;
		case 'F':
			flush_every = strtoull(optarg, NULL, 0);
			break;
		case 'n':
			no_close = 1;
			break;
		default:
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr,
			"usage: bst_write [--families L] [--gpus TEXT] [--start NS] [--end NS] "
			"[--flush-every N] [--no-close] OUT < records\n");
		return 2;
	}
	w = trace_writer__open(argv[optind], &meta, TRACE_WRITER_FORCE, &err);
	if (!w) {
		fprintf(stderr, "bst_write: %s: %s\n", argv[optind], strerror(-err));
		return 1;
	}
	while (read_full(&rec.h, sizeof(rec.h)) == 0) {
		if (rec.h.size < sizeof(rec.h) || rec.h.size % 8) {
			fprintf(stderr, "bst_write: record %llu: bad size %u\n",
				(unsigned long long)n, rec.h.size);
			trace_writer__free(w);
			return 1;
		}
		if (read_full(rec.b + sizeof(rec.h), rec.h.size - sizeof(rec.h))) {
			fprintf(stderr, "bst_write: record %llu: cut short\n",
				(unsigned long long)n);
			trace_writer__free(w);
			return 1;
		}
		err = trace_writer__append(w, &rec.h);
		if (err) {
			fprintf(stderr, "bst_write: append: %s\n", strerror(-err));
			trace_writer__free(w);
			return 1;
		}
		n++;
		if (flush_every && n % flush_every == 0)
			err = trace_writer__flush(w);
		if (err) {
			fprintf(stderr, "bst_write: flush: %s\n", strerror(-err));
			trace_writer__free(w);
			return 1;
		}
	}
	if (no_close) {
		err = trace_writer__flush(w);
		trace_writer__free(w);
	} else {
		if (!end.mono_ns)
			end.mono_ns = meta.start.mono_ns;
		err = trace_writer__close(w, &end);
	}
	if (err) {
		fprintf(stderr, "bst_write: %s: %s\n", argv[optind], strerror(-err));
		return 1;
	}
	return 0;
}
