/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The options of `record`, `monitor` and `top`: one table (record_options.c) for the three,
 * each option marked with the commands that take it, the families' own options (struct
 * family.options) listed in it. One parser, one wording of every mistake, one --help
 * printer, one getopt_long table per command for completion and the docs test.
 */
#ifndef BPFSIGHT_RECORD_OPTIONS_H
#define BPFSIGHT_RECORD_OPTIONS_H

#include <getopt.h>
#include <stdio.h>
#include "record_ctx.h"

#define RECORD_CMD_RECORD  0x1
#define RECORD_CMD_MONITOR 0x2
#define RECORD_CMD_TOP	   0x4 /* `top` records as monitor does (its defaults, its family options) */

/* What a command line says: the recording's options and the command's own. */
struct record_args {
	const char *cmd; /* "record", "monitor" or "top": every message's prefix */
	__u32 cmd_bit;	 /* RECORD_CMD_* */
	struct record_opts o;
	char *trace;	  /* -t's lists, joined (-t repeats add up); chosen after every option */
	int stacks_given; /* --stacks was given */
	__u64 implied;	  /* families an option of theirs implies (FAMILY_OPT_IMPLIES) */
	int done;	  /* --help or --features answered: exit 0 */
	int help;	  /* --help: the command prints its usage */
	/* monitor's own */
	const char *listen;
	__u32 top_n;
	__u64 grace_ns;
	int bpf_stats;
	const char *job_env;	/* --job-label-env: the variable that names a process's job */
	int follow;		/* --follow: -p's job is followed across its restarts */
	const char *ship_url;	/* --ship: each interval's values to ClickHouse (NULL: none) */
	const char *ship_spool; /* --ship-spool (NULL: the cache's, as ship's) */
	__u64 ship_interval_ns; /* --ship-interval */
	__u64 ship_spool_max;	/* --ship-spool-max */
	int ship_opts;		/* a --ship-* option was given: refused without --ship */
	/* top's own */
	__u64 interval_ns;
	__u32 iterations; /* frames, then stop; 0 = no limit */
	int batch;
	const char *sort;
	int functions; /* --functions: start in the function view */
	int ledger;    /* --ledger: start in the ledger view */
};

/* CMD's defaults, the families' options at theirs (record_opts__family). 0 or -ENOMEM. */
int record_args__init(struct record_args *a, const char *cmd);
/*
 * What each command does first: init for CMD (CMDLINE: the trace header's command line),
 * parse ARGV. -1 to go on; else the exit status: 0 after --help (USAGE on stdout) or
 * --features, 1 after saying what is wrong (USAGE on stderr for an option CMD lacks).
 */
int record_args__start(struct record_args *a, const char *cmd, const char *cmdline, int argc,
		       char **argv, void (*usage)(FILE *f));
void record_args__free(struct record_args *a);
/*
 * Parse ARGV's options (record stops at its CMD: optind says where). 0; 1 after saying what
 * is wrong, in one line (a value, or an option the command does not take: with the one
 * meant, getopt_error.h). --help and --features are answered here (A->done).
 */
int record_args__parse(struct record_args *a, int argc, char **argv);
/*
 * What both commands check once every option is read: -a with -p, the flight recorder's
 * options, the families (-t, the defaults), --stacks, --capture-range and --inject against
 * them. 0, or 1 after saying what is wrong.
 */
int record_args__check(struct record_args *a);
/* CMD's short options for getopt ("+o:ft:..."), for a reader of its command line. */
void record_args__short_options(const char *cmd, char *buf, size_t len);
/* The options' part of CMD's --help. */
void record_args__print_options(FILE *f, const char *cmd);
/* CMD's getopt_long table ("record", "monitor", "top"), made once. */
const struct option *record_args__long_options(const char *cmd);
const struct option *record_long_options(void);
const struct option *monitor_long_options(void);
const struct option *top_long_options(void);

#endif /* BPFSIGHT_RECORD_OPTIONS_H */
