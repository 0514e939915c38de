// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfsight's tables in ClickHouse (ch_schema.h). events is ordered for the fleet's questions,
 * which name a job and a kind first, then group by host, rank and thread over time; one
 * partition a day, so retention drops whole days (a TTL on servers from 19.6, docs).
 * files is a ReplacingMergeTree: a row written twice (a ship killed between its last insert
 * and its answer) merges away, and ship asks it before sending anything. claims holds the
 * ships sending a file now, one partition each (ship_claim.h).
 *
 * events' columns are stored as the server's release allows, chosen as the table is made:
 * from CH_COMPACT (19.x brought LowCardinality and column codecs; 20.3, an LTS, is the first
 * release this takes them on) the labels a file repeats on every row are LowCardinality, the
 * times and seq delta-coded (rows are ordered by thread and time), the durations T64-coded,
 * the text ZSTD-compressed: 55% fewer bytes on disk for the real traces, the reports' time the
 * same (bench/RESULTS.md, "ClickHouse: the table's columns by release"). The values, and what
 * SQL reads of them, are the same either way.
 */
#include <stddef.h>
#include "ch_schema.h"
#include "ch_version.h"

#define CH_EVENTS_TAIL                                                                             \
	"time DateTime DEFAULT toDateTime(intDiv(ts, 1000000000)), "                               \
	"day Date DEFAULT toDate(time)"                                                            \
	") ENGINE = MergeTree() PARTITION BY day ORDER BY (job, kind, host, rank, pid, tid, ts)"

/* Plain types: 18.16 takes LowCardinality only with a setting, and no codec. */
static const char ch_events_plain[] =
	"CREATE TABLE IF NOT EXISTS " CH_DB ".events ("
	"job String, host String, rank Int32, file String, file_id String, seq UInt64, "
	"ts Int64, dur UInt64, pid UInt32, tid UInt32, kind String, name String, args String, " CH_EVENTS_TAIL;

static const char ch_events_compact[] =
	"CREATE TABLE IF NOT EXISTS " CH_DB ".events ("
	"job LowCardinality(String), host LowCardinality(String), rank Int32, "
	"file LowCardinality(String), file_id LowCardinality(String), "
	"seq UInt64 CODEC(Delta, ZSTD(1)), ts Int64 CODEC(Delta, ZSTD(1)), "
	"dur UInt64 CODEC(T64, ZSTD(1)), pid UInt32, tid UInt32, kind LowCardinality(String), "
	"name String CODEC(ZSTD(1)), args String CODEC(ZSTD(1)), " CH_EVENTS_TAIL;

static const char *const ch_tables[] = {
	"CREATE DATABASE IF NOT EXISTS " CH_DB,
	NULL, /* events: ch_schema__events */
	"CREATE TABLE IF NOT EXISTS " CH_DB ".files ("
	"job String, file_id String, host String, file String, rows UInt64, "
	"shipped DateTime DEFAULT now()"
	") ENGINE = ReplacingMergeTree() ORDER BY (job, file_id)",
	/* a claim a partition: its part's block number orders it (ship_claim.h) */
	"CREATE TABLE IF NOT EXISTS " CH_DB ".claims ("
	"job String, file_id String, claim_id String, claimant String, host String, "
	"spool String, pid UInt32, at DateTime DEFAULT now()"
	") ENGINE = MergeTree() PARTITION BY claim_id ORDER BY (job, file_id)",
};

const char *ch_schema__events(const struct ch_version *v)
{
	return ch_version__at_least(v, CH_COMPACT_MAJOR, CH_COMPACT_MINOR) ? ch_events_compact
									   : ch_events_plain;
}

int ch_schema__create(struct ch_server *s)
{
	int err = ch_version__ask(s);

	for (size_t i = 0; !err && i < sizeof(ch_tables) / sizeof(ch_tables[0]); i++)
		err = ch_server__run(s,
				     ch_tables[i] ? ch_tables[i] : ch_schema__events(&s->version),
				     NULL, 0, NULL);
	return err;
}
