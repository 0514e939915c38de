// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfsight's tables in ClickHouse (ch_schema.h). events is ordered for the fleet's questions,
 * which name a job and a kind first, then group by host, rank and thread over time; one
 * partition a day, so retention drops whole days (a TTL on servers from 19.6, docs).
 * files is a ReplacingMergeTree: a row written twice (a ship killed between its last insert
 * and its answer) merges away, and ship asks it before sending anything. claims holds the
 * ships sending a file now, one partition each (ship_claim.h).
 */
#include <stddef.h>
#include "ch_schema.h"
#include "ch_version.h"

const char *const ch_schema[] = {
	"CREATE DATABASE IF NOT EXISTS " CH_DB,
	"CREATE TABLE IF NOT EXISTS " CH_DB ".events ("
	"job String, host String, rank Int32, file String, file_id String, seq UInt64, "
	"ts Int64, dur UInt64, pid UInt32, tid UInt32, kind String, name String, args String, "
	"time DateTime DEFAULT toDateTime(intDiv(ts, 1000000000)), "
	"day Date DEFAULT toDate(time)"
	") ENGINE = MergeTree() PARTITION BY day ORDER BY (job, kind, host, rank, pid, tid, ts)",
	"CREATE TABLE IF NOT EXISTS " CH_DB ".files ("
	"job String, file_id String, host String, file String, rows UInt64, "
	"shipped DateTime DEFAULT now()"
	") ENGINE = ReplacingMergeTree() ORDER BY (job, file_id)",
	/* a claim a partition: its part's block number orders it (ship_claim.h) */
	"CREATE TABLE IF NOT EXISTS " CH_DB ".claims ("
	"job String, file_id String, claim_id String, claimant String, host String, "
	"spool String, pid UInt32, at DateTime DEFAULT now()"
	") ENGINE = MergeTree() PARTITION BY claim_id ORDER BY (job, file_id)",
	NULL,
};

int ch_schema__create(struct ch_server *s)
{
	int err = ch_version__ask(s);

	for (const char *const *q = ch_schema; *q && !err; q++)
		err = ch_server__run(s, *q, NULL, 0, NULL);
	return err;
}
