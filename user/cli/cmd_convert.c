// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfsight convert FILE -o OUT: the same records in this bpfsight's file format (older files
 * re-encoded with the column codec), the header's recording metadata kept.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "commands.h"
#include "trace_format.h"
#include "trace_reader.h"
#include "trace_writer.h"
#include "msg.h"

static void convert_usage(FILE *f)
{
	fprintf(f,
		"Usage: bpfsight convert -o OUT [--force] FILE\n"
		"\n"
		"Write FILE's records, in their order, to OUT in this bpfsight's trace format (format\n"
		"%u: records in columns per record type, older files' record types renumbered as\n"
		"it numbers them); the header's recording metadata (host,\n"
		"command, start clocks...) and the end clocks are kept, the chunks are cut anew.\n"
		"dump, stats and export read the same events from both files.\n"
		"\n"
		"  -o, --output OUT  the file to write (required)\n"
		"      --force       replace OUT if it exists\n"
		"  -h, --help        this help\n"
		"\n"
		"Exit status: 0 done, 1 failed (nothing is left at OUT), 3 written but corrupt chunks\n"
		"of FILE were skipped.\n",
		BS_FILE_VERSION);
}

/* Also printed by `bpfsight __complete options convert`: completion and the docs test read it. */
const struct option convert_options[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "force", no_argument, NULL, 'F' },
	{ "help", no_argument, NULL, 'h' },
	{},
};

/* Every record of R to W. 0, or -errno said on stderr. */
static int copy_records(struct trace_reader *r, struct trace_writer *w, const char *out)
{
	const struct bs_hdr *h;
	int err;

	while (trace_reader__next(r, &h) == 1) {
		err = trace_writer__append(w, h);
		if (err) {
			pr_err("%s: %s\n", out, strerror(-err));
			return err;
		}
	}
	return 0;
}

static int convert(const char *in, const char *out, int force)
{
	const struct trace_status *st;
	struct trace_writer *w;
	struct trace_reader *r;
	char msg[256];
	int err;

	r = trace_reader__open(in, msg, sizeof(msg), &err);
	if (!r) {
		pr_err("%s: %s\n", in, msg);
		return EXIT_READ_FAIL;
	}
	w = trace_writer__open(out, trace_reader__meta(r),
			       TRACE_WRITER_FROM_FILE | (force ? TRACE_WRITER_FORCE : 0), &err);
	if (!w) {
		pr_err("cannot create %s: %s\n", out, strerror(-err));
		trace_reader__free(r);
		return EXIT_READ_FAIL;
	}
	err = copy_records(r, w, out);
	st = trace_reader__status(r);
	if (!err && trace_writer__dropped(w))
		err = -EIO;
	if (err) {
		trace_writer__free(w);
		unlink(out);
		trace_reader__free(r);
		return EXIT_READ_FAIL;
	}
	/* Without a footer in FILE its end is unknown: OUT's then says when it was written. */
	err = trace_writer__close(w, st->has_end ? &st->end : NULL);
	if (err) {
		pr_err("%s: %s\n", out, strerror(-err));
		unlink(out);
		trace_reader__free(r);
		return EXIT_READ_FAIL;
	}
	if (st->truncated)
		pr_warn("%s was not closed cleanly (its recorder was "
			"killed?): converted what it holds\n",
			in);
	if (st->corrupt_chunks)
		pr_warn("%s: %u corrupt chunks skipped\n", in, st->corrupt_chunks);
	pr_info("wrote %s (%llu records)\n", out, (unsigned long long)st->records);
	err = st->corrupt_chunks ? EXIT_READ_CORRUPT : EXIT_READ_OK;
	trace_reader__free(r);
	return err;
}

int cmd_convert(int argc, char **argv)
{
	const char *out = NULL, *in;
	int c, force = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", convert_options, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'F':
			force = 1;
			break;
		case 'h':
			convert_usage(stdout);
			return EXIT_READ_OK;
		default:
			convert_usage(stderr);
			return EXIT_READ_FAIL;
		}
	}
	in = cmd__trace_arg("convert", argc, argv, convert_usage);
	if (!in)
		return EXIT_READ_FAIL;
	if (!out) {
		pr_err("where to? give -o OUT\n");
		convert_usage(stderr);
		return EXIT_READ_FAIL;
	}
	if (cmd__check_output("convert", out, &in, 1, force))
		return EXIT_READ_FAIL;
	return convert(in, out, force);
}
