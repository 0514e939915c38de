/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The verdict's first lines from the ledger (ledger.h): the critical unit's largest entries,
 * each with its share and the job's line, worded by a table of rules (verdict_ledger.c: the
 * kind of each entry, the share from which it holds, the rules' claims that explain it). The
 * families' rules stay, under the entry they explain; verdict.c orders them so.
 */
#ifndef BPFSIGHT_VERDICT_LEDGER_H
#define BPFSIGHT_VERDICT_LEDGER_H

#include <stdio.h>
#include "verdict.h"

/* Build the ledger (the `ledger` report's state) and make its critical unit the focus. */
void verdict_ledger__focus(struct verdict *v);
/* The critical unit's entries as claims (after the families' claims). */
void verdict_ledger__claims(struct verdict *v);
/*
 * The critical unit's lines of ledger L (built, named by M), as the verdict words them, one a
 * line into F: " * lock      50.3%  w0..w3 ... waited for ..." (top's view of it). How many.
 */
struct ledger;
struct trace_model;
int verdict_ledger__text(const struct ledger *l, const struct trace_model *m, FILE *f);
/* Whether a rule's claim of kind K explains a ledger entry of kind LK (struct ledger_kind). */
int verdict_ledger__explains(int lk, enum verdict_kind k);
/* Whether the ledger's lines say all a rule's claim of kind K not explaining an entry says. */
int verdict_ledger__supersedes(enum verdict_kind k);
/* Whether a holding claim of kind K says more than an entry of kind LK: it goes first. */
int verdict_ledger__replaces(int lk, enum verdict_kind k);

/* verdict.c: a claim of entry kind LK, its TEXT as it is. */
void verdict__ledger_claim(struct verdict *v, enum verdict_kind kind, int lk, int holds,
			   double share, const char *report, const char *text);
/* verdict.c: thread TID of PID is the critical unit's: verdict__focus answers it. */
void verdict__set_unit(struct verdict *v, __u32 pid, __u32 tid);

#endif /* BPFSIGHT_VERDICT_LEDGER_H */
