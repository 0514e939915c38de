/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ship's spool: a folder of rendered files waiting for the server (JOB.CONTENT_ID.tsv, rows
 * of bpfsight.events as export --format clickhouse writes them), bounded in bytes. A file
 * leaves it once the server holds all its rows and its ledger row; one that could not be sent
 * stays for the next `bpfsight ship`, so a server down or slow loses nothing.
 */
#ifndef BPFSIGHT_SHIP_SPOOL_H
#define BPFSIGHT_SHIP_SPOOL_H

#include <stddef.h>
#include <linux/types.h>

struct ship_spool {
	char dir[4096];
	__u64 max_bytes;
};

/* DIR made (0700) if missing; 0 or said on stderr and a negative errno. */
int ship_spool__open(struct ship_spool *sp, const char *dir, __u64 max_bytes);
/* The bytes the spool holds now. */
__u64 ship_spool__bytes(const struct ship_spool *sp, __u32 *files);
/* The path of JOB's file CONTENT_ID in the spool (SUFFIX ".tsv" or ".part") into BUF. */
void ship_spool__path(const struct ship_spool *sp, const char *job, const char *id,
		      const char *suffix, char *buf, size_t len);
/* The spooled files, oldest first, into *NAMES (malloc'd each and the array): their count. */
int ship_spool__list(const struct ship_spool *sp, char ***names);
void ship_spool__free_list(char **names, int n);
/* A listed NAME (JOB.CONTENT_ID.tsv) cut in place into its job and id: 0 or -EINVAL. */
int ship_spool__entry(char *name, const char **job, const char **id);

#endif /* BPFSIGHT_SHIP_SPOOL_H */
