/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * export --format clickhouse: every event of a trace as a row of ClickHouse's bpfsight.events
 * table (docs/CLICKHOUSE.md has its DDL), in its TabSeparated format: the body of
 * `INSERT INTO bpfsight.events (CH_EVENT_COLUMNS) FORMAT TabSeparated`. The export model's
 * EX_ROWS view: the families' part of the rows (struct ex_rows) is theirs; the rows' labels
 * (job, file, content id, rank) come with the open call (struct export_opts). `bpfsight ship`
 * renders a file so into its spool and sends it in batches.
 */
#ifndef BPFSIGHT_EXPORT_CLICKHOUSE_H
#define BPFSIGHT_EXPORT_CLICKHOUSE_H

/* The columns each row has, in its order. */
#define CH_EVENT_COLUMNS "job, host, rank, file, file_id, seq, ts, dur, pid, tid, kind, name, args"

#endif /* BPFSIGHT_EXPORT_CLICKHOUSE_H */
