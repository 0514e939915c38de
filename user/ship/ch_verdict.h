/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the verdict (verdict.h) finds in a pass over every record that every file's rows
 * answer, as SQL over the rows the server holds (`stats --from`'s verdict): the rows' span,
 * the threads' names and lives, the events per kind, the events lost. A family's rules' own
 * inputs are the family's (struct family.sql's inputs, ch_reports.h). Each an answer of
 * stats' shape; never the events pulled back: one row per thread, kind or file.
 */
#ifndef BPFSIGHT_CH_VERDICT_H
#define BPFSIGHT_CH_VERDICT_H

#include "ch_reports.h"

/* The files' window: start, end (0: none), first and last records' times, wall-clock ns;
 * the families they recorded (comma-separated). */
extern const struct ch_report ch_verdict_span;
/* Each thread's names (pid, tid with the rank namespace; process, thread: NULL for none). */
extern const struct ch_report ch_verdict_names;
/* Each forked or exited thread's fork and exit times (0: not seen). */
extern const struct ch_report ch_verdict_lives;
/* The events per kind. */
extern const struct ch_report ch_verdict_kinds;
/* The events lost while recording: family, cause, count (stats' warning above its reports). */
extern const struct ch_report ch_verdict_losses;
/* One of those (or the files' order) by its name, NULL: none. */
const struct ch_report *ch_verdict__own(const char *name);
/* The I-th of them, NULL past the last. */
const struct ch_report *ch_verdict__own_at(size_t i);

#endif /* BPFSIGHT_CH_VERDICT_H */
