/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Subcommands: each lives in its own cmd_*.c and returns the process exit status. */
#ifndef BPFSIGHT_COMMANDS_H
#define BPFSIGHT_COMMANDS_H

#include <getopt.h>
#include <stdio.h>
#include <linux/types.h>
#include "trace_walk.h" /* EXIT_READ_*: the exit statuses of the reading commands */

int cmd_record(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_monitor(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_shim(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_stacks(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_ship(int argc, char **argv);
int cmd_complete(int argc, char **argv);

/* Each command's getopt_long table (cmd_*.c). */
extern const struct option info_options[], dump_options[], stats_options[], export_options[],
	shim_options[], report_options[], stacks_options[], merge_options[], convert_options[],
	ship_options[];

/* main.c's dispatch table, NULL-terminated; a command with no help is hidden from usage. */
struct bpfsight_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const struct option *opts;
	const char *help;
	/* The table made at run time instead (record, monitor: the families' options). */
	const struct option *(*opts_fn)(void);
};
extern const struct bpfsight_cmd bpfsight_cmds[];

/* "a, b, c" lists of what an option accepts, for errors, --help and completion. */
void dump__list_kinds(char *buf, size_t len);	  /* cmd_dump.c: dump --kind */
void export__list_formats(char *buf, size_t len); /* cmd_export.c: export --format */
struct exporter;				  /* export.h */
struct export_opts;				  /* export.h */
/*
 * FILE through EX into OUT (created, removed again on failure), as export does, quietly: 0 (a
 * file with corrupt chunks too: what was readable), -EBUSY (a recorder is writing FILE now: OUT
 * removed), or a negative errno said on stderr. *EVENTS: the events decoded.
 */
int export__render(const struct exporter *ex, const char *file, const char *out,
		   const struct export_opts *opts, __u64 *events);

/* After getopt: argv's one FILE (info, dump, stats, export, report); NULL when there is none or
 * more than one, said on stderr with CMD's usage. */
const char *cmd__trace_arg(const char *cmd, int argc, char **argv, void (*usage)(FILE *f));
/*
 * May CMD write OUT? Not one of the NIN input files IN, not a link or other non-regular file,
 * not there unless FORCE. 0, or 1 with the reason on stderr.
 */
int cmd__check_output(const char *cmd, const char *out, const char *const *in, __u32 nin,
		      int force);
/* ARGV joined by spaces ("record -t nccl -- CMD"), for a file header; NULL without memory. */
char *cmd__join_args(int argc, char **argv);

struct event;	    /* event.h */
struct trace_model; /* trace_model.h */
/* dump's NDJSON line for one event (shared with tests/fuzz/fuzz_decode.c); M names its stack. */
void dump_event(FILE *out, const struct event *ev, const struct trace_model *m);

#endif /* BPFSIGHT_COMMANDS_H */
