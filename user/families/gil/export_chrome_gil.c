// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The GIL contention counter of the Chrome export: per python process whose threads waited, a
 * "ph":"C" series "GIL contention" {"waiting threads": N}, N the average number of its threads
 * waiting for the GIL in each CHROME_GIL_BIN_NS (gil_contention.h), a value where it changes
 * and 0 after the last. Written at the end of traceEvents (bins fill in any order; viewers sort
 * events by ts). The waits themselves are "X" events of cat "gil" on their threads (their
 * style). Memory: the contention bins, 8 bytes per 10 ms per python process that waited.
 */
#include <errno.h>
#include <stdlib.h>
#include "export_chrome.h"
#include "gil.h"
#include "gil_contention.h"

#define CHROME_GIL_BIN_NS 10000000ull /* 10 ms, the Perfetto export's bins */

struct chrome_gil {
	struct gil_contention *waits; /* GIL waiting time per python process and bin */
	__u64 bins_origin;	      /* start of the counters' bin 0 */
};

static int gil_open(struct chrome *c, const struct trace_meta *meta, void **st)
{
	struct chrome_gil *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	*st = g;
	g->waits = gil_contention__new(CHROME_GIL_BIN_NS);
	return g->waits ? 0 : -ENOMEM;
}

static void gil_free(void *st)
{
	struct chrome_gil *g = st;

	gil_contention__free(g->waits);
	free(g);
}

static int gil_observe(struct chrome *c, void *st, const struct bs_hdr *rec,
		       const struct trace_model *m)
{
	struct chrome_gil *g = st;

	if (rec->type != BS_REC_GIL_WAIT)
		return 0;
	if (!g->bins_origin)
		g->bins_origin = c->start_mono ? c->start_mono : rec->ts;
	return gil_contention__add(g->waits, rec, g->bins_origin);
}

static int gil_counters(struct chrome *c, void *st)
{
	struct chrome_gil *g = st;
	const struct time_bins *b;
	struct time_bins_iter bi;
	size_t it = 0;
	__u32 pid;
	__u64 ts;
	double v;

	while ((b = gil_contention__next(g->waits, &it, &pid))) {
		time_bins__iter_init(&bi, b);
		while (time_bins__step(b, &bi, 0, &ts, &v)) {
			chrome_begin(c, 'C', "gil", GIL_CONTENTION_NAME, pid, 0);
			fputs(",\"ts\":", c->f);
			chrome_us(c->f, ts);
			fprintf(c->f, ",\"args\":{\"waiting threads\":%.9g}}", v);
		}
	}
	return 0; /* a failed write is the hub's to report, after the other hooks' */
}

const struct chrome_family gil_chrome = {
	.open = gil_open,
	.free = gil_free,
	.observe = gil_observe,
	.finish = gil_counters,
};
