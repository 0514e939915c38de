/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An export format: fed every decoded event of a trace in file order, it streams them to
 * OUT. Memory must stay bounded by what is interned (names, threads), never by events.
 * `bpfsight export --format` offers the formats of this folder and those a family owns
 * (struct family.exporters: a format only one family's records fill).
 */
#ifndef BPFSIGHT_EXPORT_H
#define BPFSIGHT_EXPORT_H

#include "event.h"
#include "records.h"
#include "trace_meta.h"
#include "trace_model.h"
#include "trace_reader.h"

/*
 * What a command tells a format beside the trace, given to its open (a format reads what it
 * uses): export's --job and --rank, ship's labels. NULL: none given.
 */
struct export_opts {
	/*
	 * clickhouse: the rows' job, the file they come from and its content id, its rank (-1:
	 * unknown). A merged file's rows take their rank, host and file from its RANK records.
	 */
	const char *job, *file, *file_id;
	__s32 rank;
};

struct exporter {
	const char *format; /* "perfetto", "chrome", "sqlite" */
	const char *desc;
	const char *suffix; /* replaces FILE's .bst when -o is not given: ".pftrace" */
	/*
	 * Create OUT (it does not exist yet, or --force removed it), with OPTS (may be NULL).
	 * NULL + *err on failure.
	 */
	void *(*open)(const char *out, const struct trace_meta *meta,
		      const struct export_opts *opts, int *err);
	/*
	 * Every record, in file order, after the model has seen it. EV is its decoded event
	 * when the decoder returned 1, else NULL (metadata records: strings, aggregates).
	 */
	int (*record)(void *st, const struct bs_hdr *rec, const struct event *ev,
		      const struct trace_model *m);
	/* Write what remains, close OUT. STATUS is the reader's final status. */
	int (*finish)(void *st, const struct trace_model *m, const struct trace_status *status);
	/* Free after a failure (OUT is left for the caller to remove). NULL is fine. */
	void (*abort)(void *st);
	/*
	 * What a trace must hold for this export ("CPU samples: record with -t cpu"): its finish
	 * returns -ENODATA when it held none, and export says this instead of an empty file.
	 * NULL: an export of nothing is still a valid file (an empty timeline).
	 */
	const char *needs;
	/*
	 * A merged file (bpfsight merge: many ranks) is exported as a file per rank into a
	 * directory (export_split.h), as the format holds one process's trace (Kineto's).
	 */
	__u8 per_rank;
};

/* OUT created for an export: a new file, never through a symlink, mode 0600. fd or -errno. */
int export__create(const char *out);

/*
 * The formats every trace has, NULL-terminated (export_formats.c, their one list): each a
 * `const struct exporter export_NAME` of its file export_NAME.c.
 */
extern const struct exporter *const export_formats[];

#endif /* BPFSIGHT_EXPORT_H */
