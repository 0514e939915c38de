// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gil family's metrics: per process, the time its threads waited for the GIL and how
 * often, from the per-thread cumulative GIL_AGG snapshots (every wait, short ones too).
 */
#include <errno.h>
#include <stdlib.h>
#include "gil.h"
#include "metrics_family.h"
#include "hmap.h"

struct gil_series {
	__u64 wait_ns, waits;
	__u32 python; /* a process the gil family measures: its series show from 0 */
};

static int gil_metrics_open(const struct record_opts *o, void **st)
{
	/* {pid << 32 | tid, 0} -> m_count: each thread's last in-kernel total */
	*st = hmap__new(sizeof(struct m_count));
	return *st ? 0 : -ENOMEM;
}

static void gil_metrics_free(void *st)
{
	hmap__free(st);
}

static void gil_metrics_record(struct metrics *m, void *st, const struct bs_hdr *h)
{
	struct hkey key = { (__u64)h->pid << 32 | h->tid, 0 };
	struct gil_series *s;

	switch (h->type) {
	case BS_REC_GIL_AGG: {
		const struct bs_gil_agg *r = (const void *)h;
		struct m_count d = m_count__delta(st, key, r->v.wait_count, r->v.wait_total_ns);

		if (!d.count && !d.total_ns)
			return;
		if ((s = metrics__series(m, &family_gil, h->pid, d.count))) {
			s->waits += d.count;
			s->wait_ns += d.total_ns;
		}
		break;
	}
	case BS_REC_EXIT:
		/* gil wrote the thread's final totals before its exit record: forget them. */
		hmap__del(st, key);
		break;
	case BS_REC_GIL_PROC: /* series from 0 before the first wait: increase() sees it all */
		if ((s = metrics__proc_series(m, &family_gil, h->pid)))
			s->python = ((const struct bs_gil_proc *)h)->method != BS_GIL_METHOD_NONE;
		metrics__series(m, &family_gil, h->pid,
				0); /* its own series now, if there is room */
		break;
	}
}

/* No zeros for every process: only for those with a GIL (or that waited). */
static const struct gil_series *shown(const struct metrics_owner *o)
{
	const struct gil_series *s = metrics_owner__series(o, &family_gil);

	return s && ((o->p && s->python) || s->waits || s->wait_ns) ? s : NULL;
}

static void gil_metrics_render(FILE *f, void *st, const struct metrics_owner *ow, size_t n)
{
	const struct gil_series *s;

	metrics__head(f, "bpfsight_gil_wait_seconds_total", "counter",
		      "Time threads spent waiting for the GIL, summed over the process's threads.");
	for (size_t i = 0; i < n; i++) {
		if (!(s = shown(&ow[i])))
			continue;
		fputs("bpfsight_gil_wait_seconds_total{", f);
		metrics__owner_labels(f, &ow[i]);
		fprintf(f, "} %.9f\n", s->wait_ns / 1e9);
	}
	metrics__head(f, "bpfsight_gil_waits_total", "counter",
		      "Waits for the GIL (contended takes).");
	for (size_t i = 0; i < n; i++) {
		if (!(s = shown(&ow[i])))
			continue;
		fputs("bpfsight_gil_waits_total{", f);
		metrics__owner_labels(f, &ow[i]);
		fprintf(f, "} %llu\n", (unsigned long long)s->waits);
	}
}

const struct metrics_family gil_metrics = {
	.series_size = sizeof(struct gil_series),
	.open = gil_metrics_open,
	.free = gil_metrics_free,
	.record = gil_metrics_record,
	.render = gil_metrics_render,
};
