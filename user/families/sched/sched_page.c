// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The sched family on the report's page: traced threads off the CPU, blocked or preempted. */
#include <errno.h>
#include <stdlib.h>
#include "page.h"
#include "sched.h"

struct sched_page {
	struct time_bins blocked, preempted;
};

static int sched_page_open(const struct page *p, void **st)
{
	struct sched_page *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	page__bins_init(p, &s->blocked);
	page__bins_init(p, &s->preempted);
	*st = s;
	return 0;
}

static int sched_page_record(const struct page *p, void *st, const struct bs_hdr *rec,
			     const struct trace_model *m)
{
	struct sched_page *s = st;
	const struct bs_offcpu *o = (const void *)rec;

	if (rec->type != BS_REC_OFFCPU)
		return 0;
	return time_bins__add(o->state ? &s->blocked : &s->preempted, rec->ts, o->dur);
}

static void sched_page_timelines(const struct page *p, void *st, FILE *f)
{
	struct sched_page *sp = st;
	struct page_series s[2];

	if (!time_bins__used(&sp->blocked) && !time_bins__used(&sp->preempted)) {
		page__no_data(f, "tl-offcpu", "Off-CPU",
			      "no off-CPU interval recorded (sched family)");
		return;
	}
	snprintf(s[0].label, sizeof(s[0].label), "blocked (slept)");
	s[0].bins = &sp->blocked;
	s[0].total = page__total(&sp->blocked);
	snprintf(s[1].label, sizeof(s[1].label), "preempted (runnable)");
	s[1].bins = &sp->preempted;
	s[1].total = page__total(&sp->preempted);
	page__chart(p, f, "tl-offcpu", "Off-CPU", "traced threads off the CPU, by state", s, 2, 0,
		    "");
}

static void sched_page_free(void *st)
{
	struct sched_page *s = st;

	if (!s)
		return;
	time_bins__free(&s->blocked);
	time_bins__free(&s->preempted);
	free(s);
}

const struct page_family sched_page = {
	.open = sched_page_open,
	.record = sched_page_record,
	.timelines = sched_page_timelines,
	.free = sched_page_free,
};
