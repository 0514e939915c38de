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
struct table;

/*
 * The verdict on the rows WHERE selects (JOB: the job's, for its files' own rows; FILES their
 * files' order, stats_from__files's, or NULL) of server S (URL, to say where), judged and kept
 * (stats --from prints it, and its reports from the answers it asked for; report --from's
 * page): NULL with *ERR set (-errno; S's error says the server's).
 */
struct verdict_from *verdict_from__judge(struct ch_server *s, const char *url, const char *where,
					 const char *job, const char *files, int *err);
const struct verdict *verdict_from__verdict(const struct verdict_from *vf);
/* The events per kind of the rows VF judged (ch_verdict_kinds' answer). */
const struct table *verdict_from__kinds(const struct verdict_from *vf);
/* 1 when KINDS (ch_verdict_kinds' answer; NULL: none) has events of any kind of NEEDS,
 * comma-separated (struct ch_report.needs). */
int verdict_from__kinds_have(const struct table *kinds, const char *needs);
void verdict_from__free(struct verdict_from *vf);

#endif /* BPFSIGHT_VERDICT_FROM_H */
