// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bpfsight: dispatch to a subcommand (bpftool's cmd_select). Nothing else lives here. */
#include <stdio.h>
#include <string.h>
#include "bpfsight_version.h"
#include "commands.h"
#include "msg.h"
#include "record_options.h"

const struct bpfsight_cmd bpfsight_cmds[] = {
	{ "record", cmd_record, NULL, "trace a command, running processes (-p) or the system (-a)",
	  record_long_options },
	{ "profile", cmd_profile, NULL,
	  "record, reading the command line as nsys profile does (its -t names and defaults)",
	  record_long_options },
	{ "monitor", cmd_monitor, NULL,
	  "serve Prometheus metrics (GIL, CUDA, NCCL, syscalls) of the system or -p",
	  monitor_long_options },
	{ "top", cmd_top, NULL,
	  "live view of processes and threads: CPU, GIL waits, CUDA calls, GPU, syscalls",
	  top_long_options },
	{ "info", cmd_info, info_options,
	  "what a trace file holds: host, targets, events, losses" },
	{ "dump", cmd_dump, dump_options, "every event as NDJSON" },
	{ "stats", cmd_stats, stats_options, "summary reports (osrt_sum, sched_sum, ...)" },
	{ "export", cmd_export, export_options,
	  "convert to Perfetto, Chrome JSON (Kineto) or SQLite" },
	{ "shim", cmd_shim, shim_options,
	  "install the cupti-shim and print a job's environment for it" },
	{ "report", cmd_report, report_options,
	  "one self-contained HTML page: summary, timelines, reports" },
	{ "stacks", cmd_stacks, stacks_options,
	  "every thread's stack of a running process now (Python + native), not stopping it" },
	{ "merge", cmd_merge, merge_options,
	  "many ranks' traces on one clock, in one file (aligned on NCCL collectives)" },
	{ "ship", cmd_ship, ship_options,
	  "send traces to a ClickHouse server over HTTP (spooled, each file once)" },
	{ "convert", cmd_convert, convert_options,
	  "rewrite a trace in this bpfsight's file format (older files: smaller)" },
	/* Hidden: what the shell completions ask (commands, options, families, reports). */
	{ "__complete", cmd_complete, NULL, NULL },
	{ NULL, NULL, NULL, NULL },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: bpfsight COMMAND [ARGS]   (bpfsight COMMAND --help for details)\n\n");
	for (const struct bpfsight_cmd *c = bpfsight_cmds; c->name; c++)
		if (c->help)
			fprintf(f, "  %-8s %s\n", c->name, c->help);
	fprintf(f, "\nExample: sudo bpfsight record -o run.bst -- python3 train.py\n"
		   "         bpfsight stats run.bst\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 1;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("bpfsight %s\n", BPFSIGHT_VERSION);
		return 0;
	}
	for (const struct bpfsight_cmd *c = bpfsight_cmds; c->name; c++)
		if (!strcmp(argv[1], c->name)) {
			msg__set_cmd(c->name);
			return c->fn(argc - 1, argv + 1);
		}
	pr_err("unknown command '%s'\n", argv[1]);
	fputc('\n', stderr);
	usage(stderr);
	return 1;
}
