// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfsight merge FILE... -o OUT: the ranks of a job on one clock, in one file (user/merge/),
 * then how each file was aligned, as a table or JSON on stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "commands.h"
#include "json.h"
#include "merge.h"
#include "records.h"
#include "trace_ranks.h"
#include "msg.h"

static void merge_usage(FILE *f)
{
	fprintf(f,
		"Usage: bpfsight merge [-o OUT] [--force] [--reference FILE] [--wall-clock-only]\n"
		"                      [--format table|json] FILE...\n"
		"\n"
		"Put the recordings of a job's ranks (one file per rank or per host) on one clock, in\n"
		"one file: first by the files' wall clocks, then by their collectives, NCCL's and\n"
		"gloo's (the k-th collective of a communicator ends at once on every rank): an offset\n"
		"and a drift per file, stragglers left out. Each file's processes keep their pids in\n"
		"a namespace of their own; each rank's process is named \"rank R @ HOST\". Then\n"
		"`bpfsight stats -r nccl_stragglers OUT` says who made the others wait.\n"
		"\n"
		"  -o, --output OUT      the merged file (default: merged.bst)\n"
		"      --force           replace OUT if it exists\n"
		"  -r, --reference FILE  the file whose clock OUT keeps (default: rank 0's)\n"
		"      --wall-clock-only align by the wall clocks only (no collectives)\n"
		"  -f, --format FMT      how each file was aligned: table (default) or json\n"
		"  -h, --help            this help\n"
		"\n"
		"At most %d files. Exit status: 0 done, 1 failed (nothing is left at OUT), 3 written\n"
		"but corrupt chunks of a FILE were skipped.\n",
		BS_RANK_NS_MAX);
}

/* Also printed by `bpfsight __complete options merge`: completion and the docs test read it. */
const struct option merge_options[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "force", no_argument, NULL, 'F' },
	{ "reference", required_argument, NULL, 'r' },
	{ "wall-clock-only", no_argument, NULL, 'W' },
	{ "format", required_argument, NULL, 'f' },
	{ "help", no_argument, NULL, 'h' },
	{},
};

static void print_json(const struct merge_opts *o, const struct merge_input *in, const __u32 *order)
{
	struct json j;

	json__init(&j, stdout, 1);
	json__begin_object(&j);
	json__kv_str(&j, "output", o->out);
	json__key(&j, "files");
	json__begin_array(&j);
	for (__u32 k = 0; k < o->nfiles; k++) {
		const struct merge_input *x = &in[order[k]];

		json__begin_object(&j);
		json__kv_str(&j, "path", x->path);
		json__kv_u64(&j, "ns", x->ns);
		json__kv_str(&j, "host", x->meta.hostname);
		json__key(&j, "ranks");
		json__begin_array(&j);
		for (__u32 m = 0; m < x->nmembers; m++) {
			json__begin_object(&j);
			json__kv_u64(&j, "pid", x->members[m].pid);
			json__kv_s64(&j, "rank", x->members[m].rank);
			json__kv_s64(&j, "nranks", x->members[m].nranks);
			json__kv_u64(&j, "collectives", x->members[m].count);
			json__kv_s64(&j, "seq_shift", x->members[m].shift);
			json__kv_bool(&j, "inferred", x->members[m].inferred);
			json__end_object(&j);
		}
		json__end_array(&j);
		json__kv_str(&j, "aligned_by", trace_ranks__aligned_by(x->flags));
		json__kv_s64(&j, "offset_ns", x->offset_ns);
		json__kv_double(&j, "offset_err_ns", x->offset_err_ns, 1);
		json__kv_double(&j, "drift_ppb", x->drift_ppb, 1);
		json__kv_double(&j, "drift_err_ppb", x->drift_err_ppb, 1);
		json__kv_u64(&j, "points", x->used);
		json__kv_u64(&j, "outliers", x->outliers);
		json__kv_double(&j, "residual_rms_ns", x->rms_ns, 1);
		json__kv_double(&j, "residual_max_ns", x->max_ns, 1);
		json__kv_bool(&j, "wall_rate", !!(x->flags & BS_RANK_WALL_RATE));
		json__end_object(&j);
	}
	json__end_array(&j);
	json__end_object(&j);
	fputc('\n', stdout);
}

static void print_table(const struct merge_opts *o, const struct merge_input *in,
			const __u32 *order)
{
	printf(" %4s  %5s  %-16s  %13s  %8s  %11s  %6s  %8s  %12s  %12s  %-11s  %s\n", "NS", "Rank",
	       "Host", "Offset (us)", "+- (us)", "Drift (ppm)", "Points", "Outliers",
	       "Resid RMS us", "Resid max us", "Aligned by", "File");
	for (__u32 k = 0; k < o->nfiles; k++) {
		const struct merge_input *x = &in[order[k]];
		__s32 rank = -1, nranks = -1;
		char rbuf[16] = "-";

		for (__u32 m = 0; m < x->nmembers; m++)
			if (x->members[m].nranks > nranks) {
				nranks = x->members[m].nranks;
				rank = x->members[m].rank;
			}
		if (rank >= 0)
			snprintf(rbuf, sizeof(rbuf), "%d", rank);
		printf(" %4u  %5s  %-16.16s  %13.3f  %8.3f  %11.3f  %6u  %8u  %12.3f  %12.3f  %-11s  "
		       "%s\n",
		       x->ns, rbuf, x->meta.hostname ? x->meta.hostname : "?", x->offset_ns / 1e3,
		       x->offset_err_ns / 1e3, x->drift_ppb / 1e3, x->used, x->outliers,
		       x->rms_ns / 1e3, x->max_ns / 1e3, trace_ranks__aligned_by(x->flags),
		       x->path);
	}
}

static int parse(int argc, char **argv, struct merge_opts *o, int *json)
{
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:r:f:h", merge_options, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->out = optarg;
			break;
		case 'F':
			o->force = 1;
			break;
		case 'r':
			o->reference = optarg;
			break;
		case 'W':
			o->wall_only = 1;
			break;
		case 'f':
			if (strcmp(optarg, "table") && strcmp(optarg, "json")) {
				pr_err("unknown format '%s' (table, json)\n", optarg);
				return EXIT_READ_FAIL;
			}
			*json = !strcmp(optarg, "json");
			break;
		case 'h':
			merge_usage(stdout);
			return EXIT_READ_OK;
		default:
			merge_usage(stderr);
			return EXIT_READ_FAIL;
		}
	}
	o->files = (const char *const *)argv + optind;
	o->nfiles = (__u32)(argc - optind);
	if (!o->nfiles) {
		pr_err("which files? give the ranks' traces\n");
		merge_usage(stderr);
		return EXIT_READ_FAIL;
	}
	if (o->nfiles > BS_RANK_NS_MAX) {
		pr_err("%u files: at most %d in one merged file (merge "
		       "each host's, or use the SQLite path of docs/NCCL.md)\n",
		       o->nfiles, BS_RANK_NS_MAX);
		return EXIT_READ_FAIL;
	}
	return -1;
}

int cmd_merge(int argc, char **argv)
{
	struct merge_opts o = { .out = "merged.bst" };
	struct merge_input *in = NULL;
	__u32 *order = NULL, corrupt = 0;
	char *cmdline = NULL;
	int json = 0, ret, err;

	ret = parse(argc, argv, &o, &json);
	if (ret >= 0)
		return ret;
	if (cmd__check_output("merge", o.out, o.files, o.nfiles, o.force))
		return EXIT_READ_FAIL;
	o.cmdline = cmdline = cmd__join_args(argc, argv);
	err = merge__run(&o, &in, &order);
	if (!err) {
		for (__u32 i = 0; i < o.nfiles; i++) {
			if (in[i].corrupt_chunks)
				pr_warn("%s: %u corrupt chunks "
					"skipped\n",
					in[i].path, in[i].corrupt_chunks);
			if (in[i].truncated)
				pr_warn("%s was not closed cleanly "
					"(its recorder was killed?): merged what it holds\n",
					in[i].path);
			if (in[i].unknown_records)
				pr_warn("%s: %llu records of types "
					"this bpfsight does not know: their fields kept as "
					"they were\n",
					in[i].path, (unsigned long long)in[i].unknown_records);
			corrupt += in[i].corrupt_chunks;
		}
		if (json)
			print_json(&o, in, order);
		else
			print_table(&o, in, order);
		pr_info("wrote %s (%u files)\n", o.out, o.nfiles);
	}
	for (__u32 i = 0; in && i < o.nfiles; i++)
		merge_input__free(&in[i]);
	free(in);
	free(order);
	free(cmdline);
	return err ? EXIT_READ_FAIL : corrupt ? EXIT_READ_CORRUPT : EXIT_READ_OK;
}
