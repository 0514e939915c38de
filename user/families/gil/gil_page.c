// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gil family on the report's page: GIL contention per process over time, and with
 * --stacks=gil a flame graph of what held the GIL while others waited.
 */
#include <errno.h>
#include <stdlib.h>
#include "array.h"
#include "flamegraph.h"
#include "gil.h"
#include "gil_contention.h"
#include "page.h"

struct gil_page {
	struct gil_contention *contention;
	char (*names)[96];	    /* each process's name, in gil_contention__next's order */
	struct flamegraph *holders; /* the holders' code, by the waits it caused (us) */
	int waits;		    /* the lanes' kind */
};

static void gil_page_free(void *st)
{
	struct gil_page *g = st;

	if (!g)
		return;
	gil_contention__free(g->contention);
	free(g->names);
	flamegraph__free(g->holders);
	free(g);
}

static int gil_page_open(const struct page *p, void **st)
{
	struct gil_page *g = calloc(1, sizeof(*g));

	if (g) {
		g->contention = gil_contention__new(REPORT_BIN_NS);
		g->holders = flamegraph__new("us of GIL waits");
	}
	if (!g || !g->contention || !g->holders) {
		gil_page_free(g);
		return -ENOMEM;
	}
	g->waits = page__lane_kind(p, "GIL waits", 1);
	*st = g;
	return 0;
}

static int gil_page_record(const struct page *p, void *st, const struct bs_hdr *rec,
			   const struct trace_model *m)
{
	struct gil_page *g = st;
	const struct trace_stack *s;
	__u64 ns;

	if (gil_contention__add(g->contention, rec, p->origin))
		return -ENOMEM;
	if (rec->type == BS_REC_GIL_WAIT && rec->size >= sizeof(struct bs_gil_wait) &&
	    page__lane(p, g->waits, rec->pid, rec->tid, rec->ts,
		       ((const struct bs_gil_wait *)rec)->dur))
		return -ENOMEM;
	/* --stacks=gil: the holders' code, as wide as the waiting it caused (gil_stacks'). */
	ns = gil_holder_ns(rec);
	s = ns ? trace_model__event_stack(m, rec) : NULL;
	if (!s)
		return 0;
	return flamegraph__add(g->holders, s, 0, ns / 1000 ?: 1, m);
}

static int gil_page_named(const struct page *p, void *st, const struct trace_model *m)
{
	struct gil_page *g = st;
	size_t it = 0, n = 0;
	__u32 pid;

	while (gil_contention__next(g->contention, &it, &pid))
		n++;
	g->names = calloc(n ? n : 1, sizeof(*g->names));
	for (it = 0, n = 0; g->names && gil_contention__next(g->contention, &it, &pid); n++)
		snprintf(g->names[n], sizeof(g->names[n]), "%s",
			 trace_model__process_name(m, pid) ?: "");
	return 0;
}

/* The processes that waited most, by total wait. */
static void gil_page_timelines(const struct page *p, void *st, FILE *f)
{
	struct gil_page *g = st;
	struct page_series *s = NULL;
	const struct time_bins *b;
	size_t it = 0, n = 0, cap = 0;
	__u32 pid;

	while ((b = gil_contention__next(g->contention, &it, &pid))) {
		if (array__grow((void **)&s, n, &cap, sizeof(*s)))
			break;
		if (g->names && g->names[n][0])
			snprintf(s[n].label, sizeof(s[n].label), "pid %u (%s)", pid, g->names[n]);
		else
			snprintf(s[n].label, sizeof(s[n].label), "pid %u", pid);
		s[n].bins = b;
		s[n++].total = page__total(b);
	}
	if (n)
		page__chart(p, f, "tl-gil", "GIL contention",
			    "per process: threads waiting for the GIL (waits of at least the "
			    "recording's threshold)",
			    s, n, 0, "");
	else
		page__no_data(f, "tl-gil", "GIL contention", "no GIL wait recorded (gil family)");
	free(s);
}

static void gil_page_sections(const struct page *p, void *st, FILE *f)
{
	struct gil_page *g = st;

	if (!flamegraph__samples(g->holders))
		return;
	fprintf(f, "<section id=\"gil-flame\"><h2>GIL waits by the holder's code</h2>\n"
		   "<div>");
	flamegraph__svg(g->holders, f,
			"What held the GIL while others waited (the holders' Python frames)", 0);
	fprintf(f, "</div></section>\n");
}

const struct page_family gil_page = {
	.open = gil_page_open,
	.record = gil_page_record,
	.named = gil_page_named,
	.timelines = gil_page_timelines,
	.sections = gil_page_sections,
	.free = gil_page_free,
};
