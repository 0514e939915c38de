/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One spooled file to the server (ship_spool.h), so that however often it is tried, and
 * wherever a try was cut, the server ends with each of its rows once: the ledger
 * (bpfsight.files) says whether it was shipped; else the rows the server already holds of it
 * (a prefix: each batch is one insert, one block, written whole or not at all) are skipped,
 * the rest sent in batches, then its ledger row written. Between the ledger's answer and its
 * row, the file is claimed in the server (ship_claim.h): two ships of it from two spools or
 * hosts never send its rows at once.
 */
#ifndef BPFSIGHT_SHIP_SEND_H
#define BPFSIGHT_SHIP_SEND_H

#include <linux/types.h>
#include "ch_http.h"
#include "ship_claim.h"

/*
 * Rows per insert, at most: under the server's max_insert_block_size (1048576), one block
 * (BPFSIGHT_SHIP_BATCH_ROWS sets fewer).
 */
#define SHIP_BATCH_ROWS 262144
/* Bytes per insert, about (a batch ends at the row that passes it). */
#define SHIP_BATCH_BYTES (16u << 20)

struct ship_result {
	__u64 rows;  /* the file's */
	__u64 held;  /* of them, those the server held before this try */
	__u64 sent;  /* sent by this try */
	int already; /* the ledger had it: nothing sent */
};

/* Does the ledger hold JOB's file ID? 1, 0, or ch_server__run's errors. */
int ship_send__shipped(struct ch_server *s, const char *job, const char *id);

/*
 * PATH, the rows of JOB's file of content id ID, their columns COLS (the renderer's,
 * export_clickhouse.h), BATCH_ROWS a batch, under CLAIM (ship_claim.h; NULL: none, a file
 * only this ship can have): 0, -EALREADY another claimant holds it (S->error says whom,
 * nothing sent), or ch_server__run's errors.
 */
int ship_send__file(struct ch_server *s, const char *path, const char *cols, const char *job,
		    const char *id, __u64 batch_rows, struct ship_claim *claim,
		    struct ship_result *res);

#endif /* BPFSIGHT_SHIP_SEND_H */
