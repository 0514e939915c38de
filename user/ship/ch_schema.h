/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * bpfsight's tables in ClickHouse (docs/CLICKHOUSE.md): bpfsight.events, a row per event
 * (export_clickhouse.h's columns, then the time and day ClickHouse derives from ts), and
 * bpfsight.files, the ledger of the files shipped, keyed by job and content id. SQL that
 * 18.16 (Debian 12's server) and current releases both run.
 */
#ifndef BPFSIGHT_CH_SCHEMA_H
#define BPFSIGHT_CH_SCHEMA_H

#include "ch_http.h"

#define CH_DB "bpfsight"

/* The first release whose events table is made LowCardinality and coded (ch_schema.c). */
#define CH_COMPACT_MAJOR 20
#define CH_COMPACT_MINOR 3

/* The statement that makes the events table on a server of release V (IF NOT EXISTS). */
const char *ch_schema__events(const struct ch_version *v);

/*
 * S's release asked first (ch_version__ask: a server older than CH_OLDEST refused, -EPROTO),
 * then the statements run: 0 or ch_server__run's error (said in S->error).
 */
int ch_schema__create(struct ch_server *s);

#endif /* BPFSIGHT_CH_SCHEMA_H */
