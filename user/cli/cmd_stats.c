// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bpfsight stats FILE [-r REPORT[,REPORT]] [--format table|json|csv] [view and filters] */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "commands.h"
#include "export.h"
#include "getopt_error.h"
#include "human.h"
#include "stats.h"
#include "steps.h"
#include "stats_from.h"
#include "msg.h"

#define TABLE_TOP 15 /* rows per report in table mode unless --top says */
#define MAX_IDS	  256

static void stats_usage(FILE *f)
{
	char names[STATS_REPORT_LIST_MAX], sources[256];

	stats__list_reports(names, sizeof(names));
	steps__list(sources, sizeof(sources));
	fprintf(f,
		"Usage: bpfsight stats [OPTIONS] FILE\n"
		"       bpfsight stats --from clickhouse://HOST:PORT/JOB [-r LIST] [-f FMT]\n"
		"                      [--host NAME] [--rank N] [--file PATH] [-v]\n"
		"\n"
		"Summary tables of a trace, in one pass (nsys stats-like). Without -r: a verdict\n"
		"first (where the threads' time went, each claim with the report that shows it),\n"
		"then those reports, then the rest.\n"
		"\n"
		"  -r, --report LIST   reports to print (default: those of the recorded families)\n"
		"                      reports: %s\n"
		"  -f, --format FMT    table (default), json ({\"reports\": {NAME: [rows]}}), csv\n"
		"  -o, --output FILE   write to FILE (a new file) instead of stdout\n"
		"      --units UNITS   table mode's numbers: human (default: 5.35 ms, 1.2 MiB) or\n"
		"                      ns (exact: ns and bytes, as json and csv always are)\n"
		"      --top N         at most N rows per report (table: 15; json, csv: all); 0: all\n"
		"      --wide          table mode: whole names and paths, every column, any width\n"
		"                      (else: $COLUMNS, or the terminal's width; no limit in a pipe)\n"
		"      --pid LIST      only these processes (comma-separated pids)\n"
		"      --tid LIST      only these threads (comma-separated tids)\n"
		"      --comm LIST     only processes of these names (comm, as ps shows it)\n"
		"      --python        cpu_sum: Python frames only (py-spy's view)\n"
		"      --group-by KEY  rows by KEY too, in the reports that take it: torch_op_sum's\n"
		"                      shape (input shapes) and stack:N (the first N Python frames)\n"
		"      --sort COLUMN   rows by COLUMN (a key --format json prints): numbers\n"
		"                      descending, text ascending\n"
		"      --peak-tflops N|GPU\n"
		"                      gemm_step_sum's MFU against N TFLOP/s, or GPU's peak for\n"
		"                      each GEMM's types (h100-sxm, h100-pcie, h200, a100, l4)\n"
		"      --steps SOURCE  the per-step reports' steps where a process has no torch\n"
		"                      steps: SOURCE's, one of\n"
		"                      %s\n"
		"      --from URL      the reports computed as SQL in a ClickHouse server over the\n"
		"                      rows `bpfsight ship` sent there: cuda_api_sum, nccl_sum,\n"
		"                      nccl_stragglers, osrt_sum, sched_sum, gil_sum,\n"
		"                      gil_blocked_by, ranks, nccl_rank_sum, rank_waits;\n"
		"                      without -r the verdict first, judged from the\n"
		"                      server's answers (docs/CLICKHOUSE.md)\n"
		"      --host NAME     --from: only NAME's rows\n"
		"      --rank N        --from: only rank N's rows\n"
		"      --file PATH     --from: only the rows of the file shipped as PATH\n"
		"  -v, --verbose       --from: say which ClickHouse release the server runs\n"
		"  -h, --help          this help\n",
		names, sources);
}

enum {
	OPT_UNITS = 0x100,
	OPT_TOP,
	OPT_WIDE,
	OPT_PID,
	OPT_TID,
	OPT_COMM,
	OPT_PYTHON,
	OPT_GROUP_BY,
	OPT_SORT,
	OPT_PEAK,
	OPT_STEPS,
	OPT_FROM,
	OPT_HOST,
	OPT_RANK,
	OPT_FILE,
};

/* Also printed by `bpfsight __complete options stats`: completion and the docs test read it. */
const struct option stats_options[] = {
	{ "report", required_argument, NULL, 'r' },
	{ "format", required_argument, NULL, 'f' },
	{ "output", required_argument, NULL, 'o' },
	{ "units", required_argument, NULL, OPT_UNITS },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "wide", no_argument, NULL, OPT_WIDE },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "tid", required_argument, NULL, OPT_TID },
	{ "comm", required_argument, NULL, OPT_COMM },
	{ "python", no_argument, NULL, OPT_PYTHON },
	{ "group-by", required_argument, NULL, OPT_GROUP_BY },
	{ "sort", required_argument, NULL, OPT_SORT },
	{ "peak-tflops", required_argument, NULL, OPT_PEAK },
	{ "steps", required_argument, NULL, OPT_STEPS },
	{ "from", required_argument, NULL, OPT_FROM },
	{ "host", required_argument, NULL, OPT_HOST },
	{ "rank", required_argument, NULL, OPT_RANK },
	{ "file", required_argument, NULL, OPT_FILE },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{},
};

struct stats_args {
	struct stats_opts o;
	char *reports;
	__u32 pids[MAX_IDS], tids[MAX_IDS];
	const char *comms[MAX_IDS]; /* copies */
	int top_given;
	const char *output; /* -o: NULL for stdout */
	struct stats_from from;
};

/* -r may repeat: the lists add up. */
static int add_reports(struct stats_args *a, const char *list)
{
	char *tmp;

	if (a->reports) {
		if (asprintf(&tmp, "%s,%s", a->reports, list) < 0)
			tmp = NULL;
		free(a->reports);
		a->reports = tmp;
	} else {
		a->reports = strdup(list);
	}
	return a->reports ? 0 : -ENOMEM;
}

/* "12,34" into IDS (after the N there are): 0, or 1 after saying what is wrong. */
static int add_ids(const char *opt, const char *list, __u32 *ids, int *n)
{
	const char *p = list;
	unsigned long v;
	char *end;

	do {
		v = strtoul(p, &end, 10);
		if (end == p || (*end && *end != ',') || !v || v > 0xffffffffUL) {
			pr_err("--%s %s: give ids, comma-separated "
			       "(e.g. --%s 1234,1240)\n",
			       opt, list, opt);
			return 1;
		}
		if (*n == MAX_IDS) {
			pr_err("--%s: at most %d\n", opt, MAX_IDS);
			return 1;
		}
		ids[(*n)++] = (__u32)v;
		p = *end ? end + 1 : end;
	} while (*p);
	return 0;
}

static int add_comms(struct stats_args *a, const char *list)
{
	char *copy = strdup(list), *tok, *save = NULL;
	int err = copy ? 0 : -ENOMEM;

	for (tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && a->o.ncomms < MAX_IDS;
	     tok = strtok_r(NULL, ",", &save)) {
		a->comms[a->o.ncomms] = strdup(tok);
		if (!a->comms[a->o.ncomms]) {
			err = -ENOMEM;
			break;
		}
		a->o.ncomms++;
	}
	free(copy);
	return err;
}

static int parse_top(const char *s, int *top)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || *end || v < 0 || v > 1000000000) {
		pr_err("--top %s: give a number of rows (0: all)\n", s);
		return 1;
	}
	*top = (int)v;
	return 0;
}

/* One option: 0, 1 after saying what is wrong, 2 for --help, -1 out of memory. */
static int parse_one(struct stats_args *a, int c, int argc, char **argv)
{
	switch (c) {
	case 'r':
		return add_reports(a, optarg) ? -1 : 0;
	case 'o':
		a->output = optarg;
		return 0;
	case 'f':
		if (!stats__parse_format(optarg, &a->o.fmt))
			return 0;
		pr_err("unknown format '%s' (table, json, csv)\n", optarg);
		return 1;
	case OPT_UNITS:
		if (!strcmp(optarg, "ns") || !strcmp(optarg, "human")) {
			a->o.view.raw = !strcmp(optarg, "ns");
			return 0;
		}
		pr_err("--units %s: human or ns\n", optarg);
		return 1;
	case OPT_TOP:
		a->top_given = 1;
		return parse_top(optarg, &a->o.top);
	case OPT_WIDE:
		a->o.view.wide = 1;
		return 0;
	case OPT_PID:
		return add_ids("pid", optarg, a->pids, &a->o.npids);
	case OPT_TID:
		return add_ids("tid", optarg, a->tids, &a->o.ntids);
	case OPT_COMM:
		return add_comms(a, optarg) ? -1 : 0;
	case OPT_PYTHON:
		a->o.python = 1;
		return 0;
	case OPT_GROUP_BY:
		a->o.group_by = optarg;
		return 0;
	case OPT_SORT:
		a->o.sort = optarg;
		return 0;
	case OPT_PEAK:
		a->o.peak = optarg;
		return 0;
	case OPT_STEPS:
		a->o.steps = optarg;
		return steps__check(optarg, "--steps") ? 1 : 0;
	case OPT_FROM:
		a->from.url = optarg;
		return 0;
	case OPT_HOST:
		a->from.host = optarg;
		return 0;
	case OPT_FILE:
		a->from.file = optarg;
		return 0;
	case OPT_RANK: {
		char *end;

		errno = 0;
		a->from.rank = (int)strtol(optarg, &end, 10);
		if (errno || end == optarg || *end || a->from.rank < -1) {
			pr_err("--rank %s: a rank, 0 and up (-1: the rows of no known rank)\n",
			       optarg);
			return 1;
		}
		return 0;
	}
	case 'v':
		a->from.verbose = 1;
		return 0;
	case 'h':
		return 2;
	default:
		getopt_error__print("stats", argc, argv, "r:f:o:hv", stats_options);
		return 1;
	}
}

/* The reports to -o's file (a new one, never through a symlink) or stdout. */
static int run_to(const char *file, struct stats_args *a)
{
	int fd, status;
	FILE *out;

	if (!a->output)
		return stats__run_opts(file, &a->o, stdout);
	fd = export__create(a->output);
	if (fd < 0) {
		pr_err("-o %s: %s%s\n", a->output, strerror(-fd),
		       fd == -EEXIST ? " (choose another name, or remove it)" : "");
		return EXIT_READ_FAIL;
	}
	out = fdopen(fd, "w");
	if (!out) {
		close(fd);
		return EXIT_READ_FAIL;
	}
	a->o.view.width = 0; /* a file: no terminal width */
	status = stats__run_opts(file, &a->o, out);
	if (fclose(out) && status == EXIT_READ_OK) {
		pr_err("-o %s: %s\n", a->output, strerror(errno));
		status = EXIT_READ_FAIL;
	}
	return status;
}

/* --from: the reports of a ClickHouse server's rows, to stdout or -o's file. */
static int run_from(struct stats_args *a, int argc)
{
	int fd, status;
	FILE *out = stdout;

	if (optind < argc) {
		pr_err("--from reads the server: no FILE (%s)\n", "remove it, or --from");
		return EXIT_READ_FAIL;
	}
	if (a->o.python) {
		/* the server computes cpu_sum's rows of every frame: never the other view silently */
		pr_err("--python: cpu_sum's Python frames only are not computed in ClickHouse yet "
		       "(docs/CLICKHOUSE.md); stats FILE --python\n");
		return EXIT_READ_FAIL;
	}
	if (a->o.group_by) {
		/* mem_peak's stack:N, torch_op_sum's keys: the server's rows are not grouped so */
		pr_err("--group-by: the reports computed in ClickHouse have no grouping yet "
		       "(docs/CLICKHOUSE.md); stats FILE --group-by\n");
		return EXIT_READ_FAIL;
	}
	if (a->o.peak || a->o.steps) {
		/* the MFU rule's peak is the recorded GPU's there, its steps torch's: never
		 * another number silently */
		pr_err("%s: the MFU from a server is against the recorded GPU's peak over torch's "
		       "steps only (docs/CLICKHOUSE.md); stats FILE %s\n",
		       a->o.peak ? "--peak-tflops" : "--steps",
		       a->o.peak ? "--peak-tflops" : "--steps");
		return EXIT_READ_FAIL;
	}
	a->from.reports = a->reports;
	a->from.fmt = a->o.fmt;
	/* the verdict wraps as stats FILE's: the terminal's width, none in a file or a pipe */
	a->from.width = a->output || a->o.view.wide ? 0 : human__term_width(STDOUT_FILENO);
	if (a->output) {
		fd = export__create(a->output);
		out = fd < 0 ? NULL : fdopen(fd, "w");
		if (!out) {
			pr_err("-o %s: %s\n", a->output, strerror(fd < 0 ? -fd : errno));
			return EXIT_READ_FAIL;
		}
	}
	status = stats_from__run(&a->from, out);
	if (out != stdout && fclose(out) && !status)
		status = EXIT_READ_FAIL;
	return status;
}

int cmd_stats(int argc, char **argv)
{
	struct stats_args *a = calloc(1, sizeof(*a));
	int c, status = EXIT_READ_FAIL, ret = 0;
	const char *file;

	if (!a)
		return EXIT_READ_FAIL;
	a->from.rank = -2;
	optind = 1;
	opterr = 0;
	while (!ret && (c = getopt_long(argc, argv, "r:f:o:hv", stats_options, NULL)) != -1)
		ret = parse_one(a, c, argc, argv);
	if (ret < 0)
		pr_err("out of memory\n");
	if (ret == 2) {
		stats_usage(stdout);
		status = EXIT_READ_OK;
	}
	if (ret)
		goto out;
	if (!a->from.url && a->from.verbose) {
		pr_err("-v says the server's release: with --from\n");
		goto out;
	}
	if (!a->from.url) {
		file = cmd__trace_arg("stats", argc, argv, stats_usage);
		if (!file)
			goto out;
	}
	a->o.reports = a->reports;
	a->o.pids = a->pids;
	a->o.tids = a->tids;
	a->o.comms = a->comms;
	a->o.people = 1;
	if (a->from.url) {
		status = run_from(a, argc);
		goto out;
	}
	/* Table mode shows the first rows unless told; JSON and CSV all of them. */
	a->o.view.top = a->top_given ? a->o.top : TABLE_TOP;
	if (a->o.fmt != STATS_FORMAT_TABLE && !a->top_given)
		a->o.top = 0;
	a->o.view.width = human__term_width(STDOUT_FILENO);
	status = run_to(file, a);
out:
	free(a->reports);
	for (c = 0; c < a->o.ncomms; c++)
		free((char *)a->comms[c]);
	free(a);
	return status;
}
