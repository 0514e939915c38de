/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `stats --from`'s verdict: the families' rules (verdict.h) fed the server's answers, never
 * the events pulled back (docs/CLICKHOUSE.md, "The verdict").
 */
#ifndef BPFSIGHT_VERDICT_FROM_H
#define BPFSIGHT_VERDICT_FROM_H

#include <stdio.h>

struct ch_server;
struct verdict;
struct verdict_from;

/*
 * The verdict on the rows WHERE selects (JOB: the job's, for its files' own rows; FILES their
 * files' order, stats_from__files's, or NULL) of server S (URL, to say where), printed to OUT
 * as stats prints a file's: 0, or -errno (S's error says the server's), in WIDTH columns (0:
 * no limit).
 */
int verdict_from__print(struct ch_server *s, const char *url, const char *where, const char *job,
			const char *files, int width, FILE *out);

/* The same verdict, judged and kept (report --from's page): NULL with *ERR set. */
struct verdict_from *verdict_from__judge(struct ch_server *s, const char *url, const char *where,
					 const char *job, const char *files, int *err);
const struct verdict *verdict_from__verdict(const struct verdict_from *vf);
/* 1 when the rows VF judged have events of KIND (struct ch_report.needs). */
int verdict_from__has_kind(const struct verdict_from *vf, const char *kind);
void verdict_from__free(struct verdict_from *vf);

#endif /* BPFSIGHT_VERDICT_FROM_H */
