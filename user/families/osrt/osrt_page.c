// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The osrt family on the report's page: threads inside a recorded system call. */
#include <errno.h>
#include <stdlib.h>
#include "osrt.h"
#include "page.h"

struct osrt_page {
	struct time_bins bins; /* the first member: the timeline's series */
	int calls;	       /* the lanes' kind */
};

static int osrt_page_open(const struct page *p, void **st)
{
	struct osrt_page *o = calloc(1, sizeof(*o));

	if (!o)
		return -ENOMEM;
	page__bins_init(p, &o->bins);
	o->calls = page__lane_kind(p, "system calls", 0);
	*st = o;
	return 0;
}

static int osrt_page_record(const struct page *p, void *st, const struct bs_hdr *rec,
			    const struct trace_model *m)
{
	struct osrt_page *o = st;
	__u64 dur = ((const struct bs_syscall *)rec)->dur;

	if (rec->type != BS_REC_SYSCALL)
		return 0;
	return time_bins__add(&o->bins, rec->ts, dur)
		       ?: page__lane(p, o->calls, rec->pid, rec->tid, rec->ts, dur);
}

static void osrt_page_timelines(const struct page *p, void *st, FILE *f)
{
	struct page_series s = { .bins = st, .total = page__total(st) };

	if (!time_bins__used(st)) {
		page__no_data(f, "tl-syscall", "System calls",
			      "no system call recorded (osrt family)");
		return;
	}
	snprintf(s.label, sizeof(s.label), "in system calls");
	page__chart(p, f, "tl-syscall", "System calls",
		    "threads inside a recorded system call (calls of at least --osrt-threshold)",
		    &s, 1, 0, "");
}

static void osrt_page_free(void *st)
{
	if (st)
		time_bins__free(st);
	free(st);
}

const struct page_family osrt_page = {
	.open = osrt_page_open,
	.record = osrt_page_record,
	.timelines = osrt_page_timelines,
	.free = osrt_page_free,
};
