/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * stats' --group-by KEY[:N] and --sort COLUMN, checked against the reports: a key no report
 * asked takes, or a column no report printed has, is an error that names what would do.
 */
#ifndef BPFSIGHT_STATS_ASKS_H
#define BPFSIGHT_STATS_ASKS_H

#include <stddef.h>
#include "report.h"

/* "stack:5" -> KEY "stack", *N 5; "shape" -> "shape", 0. -EINVAL (said) when malformed. */
int stats_asks__parse_group(const char *arg, char *key, size_t len, unsigned *n);
/* Does R take --group-by KEY (with N given when its key says ":N")? */
int stats_asks__takes(const struct report *r, const char *key, unsigned n);
/* "torch_op_sum (shape, stack:N)": the reports of REPS[N] that take a --group-by. */
void stats_asks__list_groups(const struct report *const *reps, int n, char *buf, size_t len);

/*
 * -r NAME as nsys names reports: its older names (cudaapisum, gpukernsum, osrtsum, nvtxsum,
 * nvtx_pushpop_sum...) are bpfsight's (cuda_api_sum, ...); any other NAME as it is.
 */
const char *stats_asks__nsys_report(const char *name);
/* For an unknown NAME that is one of nsys's reports: what to use instead (", ..."), else "". */
const char *stats_asks__nsys_only(const char *name);

#endif /* BPFSIGHT_STATS_ASKS_H */
