/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * monitor's metrics as intervals that do not overlap (monitor --ship, docs/CLICKHOUSE.md):
 * the Prometheus exposition (metrics__render's) read at each interval's end, each counter
 * (and a histogram's or summary's cumulative series) as its increment since the last interval
 * taken, each gauge as read; written as rows of bpfsight.events, kind monitor_interval
 * (export_clickhouse.h's columns). An interval not taken (the spool full) leaves the counters'
 * base where it was: its increments go to the next interval, whose span covers both.
 */
#ifndef BPFSIGHT_MONITOR_INTERVALS_H
#define BPFSIGHT_MONITOR_INTERVALS_H

#include <stdio.h>
#include <linux/types.h>

#define MONITOR_INTERVAL_KIND "monitor_interval"

struct monitor_series; /* a counter's name{labels} and value */

struct monitor_intervals {
	struct monitor_series *base; /* the counters as the last interval taken read them */
	size_t nbase;
	struct monitor_series *next; /* as the last interval written read them */
	size_t nnext;
	__u64 start_ns; /* the wall clock (CLOCK_REALTIME ns): the rows' clock */
	const char *job, *host;
};

/*
 * The interval from MI->start_ns to END_NS of the exposition TEXT, as rows of file FILE_ID
 * into F: how many, or -ENOMEM. Nothing changes until monitor_intervals__take.
 */
long monitor_intervals__write(struct monitor_intervals *mi, const char *text, __u64 end_ns,
			      const char *file_id, FILE *f);
/* The interval written last is taken (spooled): the next starts at its end, from its values. */
void monitor_intervals__take(struct monitor_intervals *mi, __u64 end_ns);
void monitor_intervals__free(struct monitor_intervals *mi);

#endif /* BPFSIGHT_MONITOR_INTERVALS_H */
