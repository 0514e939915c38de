// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bpfsight stats FILE [-r REPORT[,REPORT]] [--format table|json|csv] */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "commands.h"
#include "stats.h"

static void stats_usage(FILE *f)
{
	char names[512];

	stats__list_reports(names, sizeof(names));
	fprintf(f,
		"Usage: bpfsight stats [-r REPORT[,REPORT]] [--format table|json|csv] FILE\n"
		"\n"
		"Summary tables of a trace, in one pass (nsys stats-like).\n"
		"\n"
		"  -r, --report LIST   reports to print (default: those of the recorded families)\n"
		"                      reports: %s\n"
		"  -f, --format FMT    table (default), json ({\"reports\": {NAME: [rows]}}), csv\n"
		"  -h, --help          this help\n",
		names);
}

/* Also printed by `bpfsight __complete options stats`: completion and the docs test read it. */
const struct option stats_options[] = {
	{ "report", required_argument, NULL, 'r' },
	{ "format", required_argument, NULL, 'f' },
	{ "help", no_argument, NULL, 'h' },
	{},
};

int cmd_stats(int argc, char **argv)
{
	enum stats_format fmt = STATS_FORMAT_TABLE;
	char *reports = NULL, *tmp;
	const char *file;
	int c, status;

	optind = 1;
	while ((c = getopt_long(argc, argv, "r:f:h", stats_options, NULL)) != -1) {
		switch (c) {
		case 'r':
			/* -r may repeat: the lists add up. */
			if (reports) {
				if (asprintf(&tmp, "%s,%s", reports, optarg) < 0)
					tmp = NULL;
				free(reports);
				reports = tmp;
			} else {
				reports = strdup(optarg);
			}
			if (!reports) {
				fprintf(stderr, "bpfsight stats: out of memory\n");
				return EXIT_READ_FAIL;
			}
			break;
		case 'f':
			if (stats__parse_format(optarg, &fmt)) {
				fprintf(stderr,
					"bpfsight stats: unknown format '%s' (table, json, csv)\n",
					optarg);
				free(reports);
				return EXIT_READ_FAIL;
			}
			break;
		case 'h':
			stats_usage(stdout);
			free(reports);
			return EXIT_READ_OK;
		default:
			stats_usage(stderr);
			free(reports);
			return EXIT_READ_FAIL;
		}
	}
	file = cmd__trace_arg("stats", argc, argv, stats_usage);
	status = file ? stats__run(file, reports, fmt, stdout) : EXIT_READ_FAIL;
	free(reports);
	return status;
}
