// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The nvtx family's ranges in the Chrome export, as Kineto writes them: push/pop ranges are
 * "ph":"X" of cat "user_annotation" on their thread; start/end ranges (any concurrency, across
 * threads) an async pair, "ph":"b" on the starting thread and "ph":"e" on the ending one ("id2"
 * local to the process: the range id). Marks and names are instants by their styles.
 */
#include <errno.h>
#include "export_chrome.h"
#include "nvtx.h"

static int nvtx_draw(struct chrome *c, void *st, const struct bs_hdr *rec, const struct event *ev,
		     const struct trace_model *m)
{
	const struct bs_nvtx_range *r = (const void *)rec;

	if (rec->type != BS_REC_NVTX_RANGE)
		return 0;
	if (r->flags & BS_NVTX_PUSHPOP) {
		chrome_complete(c, "user_annotation", ev->name, ev->pid, ev->tid, ev->ts, ev->dur);
		chrome_plain_args(c, ev);
		fputc('}', c->f);
		return 1;
	}
	if (chrome_thread(c, rec->pid, r->end_tid))
		return -ENOMEM;
	chrome_begin(c, 'b', "user_annotation", ev->name, ev->pid, ev->tid);
	fprintf(c->f, ",\"id2\":{\"local\":\"0x%llx\"},\"ts\":", (unsigned long long)r->range_id);
	chrome_us(c->f, ev->ts);
	chrome_plain_args(c, ev);
	fputc('}', c->f);
	chrome_begin(c, 'e', "user_annotation", ev->name, ev->pid, r->end_tid);
	fprintf(c->f, ",\"id2\":{\"local\":\"0x%llx\"},\"ts\":", (unsigned long long)r->range_id);
	chrome_us(c->f, ev->ts + ev->dur);
	fputc('}', c->f);
	return 1;
}

const struct chrome_family nvtx_chrome = {
	.draw = nvtx_draw,
};
