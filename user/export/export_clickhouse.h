/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * export --format clickhouse: every event of a trace as a row of ClickHouse's bpfsight.events
 * table (docs/CLICKHOUSE.md has its DDL), in its TabSeparated format: the body of
 * `INSERT INTO bpfsight.events (CH_EVENT_COLUMNS) FORMAT TabSeparated`. `bpfsight ship`
 * renders a file so into its spool and sends it in batches.
 */
#ifndef BPFSIGHT_EXPORT_CLICKHOUSE_H
#define BPFSIGHT_EXPORT_CLICKHOUSE_H

#include <linux/types.h>

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
};

extern struct ch_labels export_clickhouse_labels;
/* The rows the last export of this format wrote. */
extern __u64 export_clickhouse_rows;

#endif /* BPFSIGHT_EXPORT_CLICKHOUSE_H */
