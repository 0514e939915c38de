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
 * files' order, stats_from__files's, or NULL) of server S (URL, to say where), judged and kept
 * (stats --from prints it, and its reports from the answers it asked for; report --from's
 * page): NULL with *ERR set (-errno; S's error says the server's).
 */
struct verdict_from *verdict_from__judge(struct ch_server *s, const char *url, const char *where,
					 const char *job, const char *files, int *err);
const struct verdict *verdict_from__verdict(const struct verdict_from *vf);
/* 1 when the rows VF judged have events of any of KINDS, comma-separated (struct
 * ch_report.needs). */
int verdict_from__has_kind(const struct verdict_from *vf, const char *kinds);
void verdict_from__free(struct verdict_from *vf);

#endif /* BPFSIGHT_VERDICT_FROM_H */
