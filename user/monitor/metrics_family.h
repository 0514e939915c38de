/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A family's metrics in `bpfsight monitor` (struct family.metrics): it folds the records it
 * knows into counters of its own, kept per series owner or for the whole node, and writes
 * them in Prometheus's text format. The monitor (metrics.c) owns the owners: the processes
 * with series of their own (at most --top, the busiest), and pid="other" for the rest; it
 * names them and drops them after the exit grace. Every hook runs with the monitor's lock
 * held (records on the recording's thread, render on the HTTP server's).
 */
#ifndef BPFSIGHT_METRICS_FAMILY_H
#define BPFSIGHT_METRICS_FAMILY_H

#include <stdio.h>
#include <linux/types.h>
#include "metrics.h"
#include "records.h"
#include "hmap.h"

struct family;
struct record_opts;

/* One owner of series, as render sees it: a process (P non-NULL) or every other process. */
struct metrics_owner {
	const struct metrics_proc *p;
	struct metrics_series *s;
};

struct metrics_family {
	/* Bytes of its counters in each owner's series, zeroed when the series begins. */
	size_t series_size;
	/* Free what one series' counters hold (maps), not the counters themselves. Optional. */
	void (*series_free)(void *counters);
	/* Its node-wide state for a monitor recording with options O. Optional. */
	int (*open)(const struct record_opts *o, void **st);
	void (*free)(void *st);
	/* One record of the stream (any family's, as a trace file would get it). */
	void (*record)(struct metrics *m, void *st, const struct bs_hdr *rec);
	/* Its metrics: the owners OW[0..N), the last one pid="other". */
	void (*render)(FILE *f, void *st, const struct metrics_owner *ow, size_t n);
};

/*
 * F's counters in the series PID's events go to, counting EVENTS as its activity (which
 * processes own series): its own series, or "other" when --top processes own theirs. NULL
 * when out of memory.
 */
void *metrics__series(struct metrics *m, const struct family *f, __u32 pid, __u64 events);
/* F's counters in PID's own series, owned or not (state it keeps whoever owns series). */
void *metrics__proc_series(struct metrics *m, const struct family *f, __u32 pid);
/* F's counters of owner O, NULL when it has none yet. */
void *metrics_owner__series(const struct metrics_owner *o, const struct family *f);

/* ---- what families' metrics share ---------------------------------------------------- */

#define M_MAX_BOUNDS 24 /* finite histogram bounds; one more bucket holds the rest (+Inf) */

/* Upper bounds of a histogram's buckets. */
struct m_bounds {
	__u64 ns[M_MAX_BOUNDS];
	__u32 n;
};

/* Calls per bucket (not cumulative: the renderer sums), bucket i = (bound[i-1], bound[i]]. */
struct m_hist {
	__u64 bucket[M_MAX_BOUNDS + 1];
	__u64 count, sum_ns;
};

struct m_count {
	__u64 count, total_ns;
};

/* FLOOR first (when not 0), then 1-2.5-5 per decade from 1 us to 10 s above it. */
void m_bounds__init(struct m_bounds *b, __u64 floor_ns);
/* N calls of DUR each, SUM in all, into H. */
void m_hist__add(struct m_hist *h, const struct m_bounds *b, __u64 dur, __u64 n, __u64 sum);
/* The element K of the map *H of ELEM bytes, the map made on first use; NULL without memory. */
void *m_map__at(struct hmap **h, size_t elem, struct hkey k);
/*
 * A cumulative snapshot (COUNT, TOTAL) of KEY in LAST: the increment since the previous one.
 * A snapshot below the previous one is a new thread with a recycled id (counts from 0).
 */
struct m_count m_count__delta(struct hmap *last, struct hkey key, __u64 count, __u64 total);

/* "# HELP NAME HELP" and "# TYPE NAME TYPE". */
void metrics__head(FILE *f, const char *name, const char *type, const char *help);
/*
 * An owner's labels: pid="123",comm="python3",job_name="python3 train.py",role="main" (escaped;
 * job and role when known), or pid="other",comm="".
 */
void metrics__owner_labels(FILE *f, const struct metrics_owner *o);
/* NAME{LABELS,le=...} for each bucket, then _sum and _count; durations in seconds. */
void metrics__hist_lines(FILE *f, const char *name, const char *labels, const struct m_hist *h,
			 const struct m_bounds *b);
/* A label's value escaped as the format wants (backslash, quote, newline), at most MAX bytes. */
void metrics__label(FILE *f, const char *s, size_t max);

#endif /* BPFSIGHT_METRICS_FAMILY_H */
