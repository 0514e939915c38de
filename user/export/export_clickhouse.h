/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * export --format clickhouse: every event of a trace as a row of ClickHouse's bpfsight.events
 * table (docs/CLICKHOUSE.md has its DDL), in its TabSeparated format: the body of
 * `INSERT INTO bpfsight.events (CH_EVENT_COLUMNS) FORMAT TabSeparated`. `bpfsight ship`
 * renders a file so into its spool and sends it in batches.
 */
#ifndef BPFSIGHT_EXPORT_CLICKHOUSE_H
#define BPFSIGHT_EXPORT_CLICKHOUSE_H

#include <stdio.h>
#include <linux/types.h>

struct bs_hdr;

struct json;
struct trace_model;
struct trace_stack;

/* The columns each row has, in its order. */
#define CH_EVENT_COLUMNS "job, host, rank, file, file_id, seq, ts, dur, pid, tid, kind, name, args"

/*
 * The labels of the next export's rows, set by the command before the exporter's open: the
 * job, the file the rows come from and its content id, its rank (-1: unknown). A merged file's
 * rows take their rank, host and file from its RANK records instead.
 */
struct ch_labels {
	const char *job;
	const char *file;
	const char *file_id;
	__s32 rank;
	/*
	 * What a stack's row says beside its text and frames, where the server's reports need it
	 * and SQL cannot derive it from them (rank_waits': the call the stack is in, its line in
	 * the job's code; gil_stacks': the frame it is summed under; the verdict's rules', of any
	 * stack, KERNEL: the row of a CPU sample taken in the kernel): keys added to J's open
	 * object. NULL: none. A hook, so that the renderer names no report.
	 */
	void (*stack_args)(const struct trace_stack *s, int kernel, const struct trace_model *m,
			   struct json *j);
	/* The same of process PID, on its threads' names' rows (`thread_names`). */
	void (*process_args)(const struct trace_model *m, __u32 pid, struct json *j);
	/*
	 * Rows past the events' (the families' struct verdict_ch_rows, one state a file): made by
	 * ROWS_NEW at open; ROWS_RECORD sees every record, ROW the row it makes (its seq, its
	 * args' members so far in ARGS, where `,"key":value` ones may be added; NULL: none);
	 * ROWS_END emits the file's own rows through EMIT before its window row. NULL: none.
	 */
	void *(*rows_new)(void);
	int (*rows_record)(void *st, const struct bs_hdr *rec, const struct trace_model *m,
			   __u64 row, FILE *args);
	int (*rows_end)(void *st, const struct trace_model *m, __u64 shift,
			int (*emit)(void *arg, __u32 pid, const char *kind, const char *name,
				    const char *args),
			void *arg);
	void (*rows_free)(void *st);
};

extern struct ch_labels export_clickhouse_labels;
/* The rows the last export of this format wrote. */
extern __u64 export_clickhouse_rows;

#endif /* BPFSIGHT_EXPORT_CLICKHOUSE_H */
