// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The sched family on the report's page: traced threads off the CPU, blocked or preempted. */
#include <errno.h>
#include <stdlib.h>
#include "hmap.h"
#include "page.h"
#include "sched.h"

struct sched_page {
	struct time_bins blocked, preempted;
	struct hmap *woke; /* {pid, tid} -> __u64: when the thread's last off-CPU interval ended */
	int oncpu;	   /* the lanes' kind */
};

static int sched_page_open(const struct page *p, void **st)
{
	struct sched_page *s = calloc(1, sizeof(*s));

	if (!s || !(s->woke = hmap__new(sizeof(__u64)))) {
		free(s);
		return -ENOMEM;
	}
	s->oncpu = page__lane_kind(p, "on a CPU", 1);
	page__bins_init(p, &s->blocked);
	page__bins_init(p, &s->preempted);
	*st = s;
	return 0;
}

/* A new thread runs from its fork: its first span on a CPU starts there. */
static int fork_of(struct sched_page *s, const struct bs_fork *f)
{
	__u64 *woke = hmap__get(s->woke, (struct hkey){ f->child_pid, f->child_tid }, 1);

	if (!woke)
		return -ENOMEM;
	*woke = f->h.ts;
	return 0;
}

/* An exiting thread ran from its last wake-up to its exit. */
static int exit_of(const struct page *p, struct sched_page *s, const struct bs_hdr *rec)
{
	__u64 *woke = hmap__get(s->woke, (struct hkey){ rec->pid, rec->tid }, 0);

	if (!woke || !*woke || rec->ts <= *woke)
		return 0;
	return page__lane(p, s->oncpu, rec->pid, rec->tid, *woke, rec->ts - *woke);
}

static int sched_page_record(const struct page *p, void *st, const struct bs_hdr *rec,
			     const struct trace_model *m)
{
	struct sched_page *s = st;
	const struct bs_offcpu *o = (const void *)rec;
	__u64 *woke;
	int err;

	if (rec->type == BS_REC_FORK && rec->size >= sizeof(struct bs_fork))
		return fork_of(s, (const struct bs_fork *)rec);
	if (rec->type == BS_REC_EXIT)
		return exit_of(p, s, rec);
	if (rec->type != BS_REC_OFFCPU)
		return 0;
	err = time_bins__add(o->state ? &s->blocked : &s->preempted, rec->ts, o->dur);
	woke = hmap__get(s->woke, (struct hkey){ rec->pid, rec->tid }, 1);
	if (err || !woke)
		return -ENOMEM;
	/* On a CPU from the end of its last off-CPU interval to the start of this one. */
	if (*woke && rec->ts > *woke)
		err = page__lane(p, s->oncpu, rec->pid, rec->tid, *woke, rec->ts - *woke);
	if (rec->ts + o->dur > *woke)
		*woke = rec->ts + o->dur;
	return err;
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
	hmap__free(s->woke);
	free(s);
}

const struct page_family sched_page = {
	.open = sched_page_open,
	.record = sched_page_record,
	.timelines = sched_page_timelines,
	.free = sched_page_free,
};
