// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The proc family in the Chrome export: its events are instants of their kinds' styles; a loss
 * marker also gets a cumulative counter per cause beside it ("ph":"C" "events lost"), so the
 * UI draws loss over time.
 */
#include <errno.h>
#include <stdlib.h>
#include "export_chrome.h"
#include "proc.h"

struct chrome_proc {
	__u64 lost[BS_LOSS_MAX + 1]; /* cumulative per cause (loss_cause__slot) */
};

static int proc_open(struct chrome *c, const struct trace_meta *meta, void **st)
{
	*st = calloc(1, sizeof(struct chrome_proc));
	return *st ? 0 : -ENOMEM;
}

static void loss_counter(struct chrome *c, struct chrome_proc *p, const struct bs_hdr *rec,
			 const struct event *ev)
{
	const struct bs_loss *l = (const void *)rec;
	__u32 slot;

	if (rec->size < sizeof(*l))
		return;
	slot = loss_cause__slot(l->cause);
	p->lost[slot] += l->count;
	chrome_begin(c, 'C', "loss", "events lost", ev->pid, ev->tid);
	fputs(",\"ts\":", c->f);
	chrome_us(c->f, ev->ts);
	fputs(",\"args\":{", c->f);
	chrome_str(c->f, ev->name);
	fprintf(c->f, ":%llu}}", (unsigned long long)p->lost[slot]);
}

static int proc_draw(struct chrome *c, void *st, const struct bs_hdr *rec, const struct event *ev,
		     const struct trace_model *m)
{
	int err;

	if (rec->type != BS_REC_LOSS)
		return 0;
	err = chrome_event(c, rec, ev, NULL);
	if (err)
		return err;
	loss_counter(c, st, rec, ev);
	return 1;
}

const struct chrome_family proc_chrome = {
	.open = proc_open,
	.free = free,
	.draw = proc_draw,
};
