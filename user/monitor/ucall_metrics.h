/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The metrics of a uprobe API family (cuda, nccl): a latency histogram per process and API
 * function of the calls the application made (depth 0). A family gives its definition and
 * wraps open; the rest is shared: monitor's ready-made struct metrics_family for call records
 * (struct bs_ucall) named by an API table (ucall_api.h).
 */
#ifndef BPFSIGHT_UCALL_METRICS_H
#define BPFSIGHT_UCALL_METRICS_H

#include "metrics_family.h"
#include "ucall_api.h"

struct ucall_metrics_def {
	const struct family *family;
	__u16 type; /* its call record, struct bs_ucall */
	const struct ucall_table *table;
	const char *name, *help; /* the histogram's */
};

/* Per series: {fn, 0} -> m_hist. */
struct ucall_series {
	struct hmap *calls;
};

int ucall_metrics__open(const struct ucall_metrics_def *def, void **st);
void ucall_metrics__free(void *st);
void ucall_metrics__series_free(void *counters);
void ucall_metrics__record(struct metrics *m, void *st, const struct bs_hdr *h);
void ucall_metrics__render(FILE *f, void *st, const struct metrics_owner *ow, size_t n);

/* The hooks of struct metrics_family, all but open. */
#define UCALL_METRICS_HOOKS                                                                        \
	.series_size = sizeof(struct ucall_series), .series_free = ucall_metrics__series_free,     \
	.free = ucall_metrics__free, .record = ucall_metrics__record,                              \
	.render = ucall_metrics__render

#endif /* BPFSIGHT_UCALL_METRICS_H */
