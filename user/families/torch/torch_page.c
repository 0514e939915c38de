// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The torch family on the report's page: its ops in the busy threads' lanes, and the steps'
 * time and spread (the steps service's, steps.h, which the page draws in its row "steps").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "human.h"
#include "page.h"
#include "stats_math.h"
#include "steps.h"
#include "torch.h"

struct torch_page {
	struct samples steps; /* each step's wall time, ns */
	int ops;	      /* its lanes' kind */
	int torch;	      /* some steps are torch's: torch_step_sum has rows */
};

static int torch_page_open(const struct page *p, void **st)
{
	struct torch_page *t = calloc(1, sizeof(*t));
	const struct step_span *const *v;
	size_t n;

	if (!t)
		return -ENOMEM;
	t->ops = page__lane_kind(p, "torch ops", 1);
	*st = t;
	v = steps__all(p->steps, &n);
	for (size_t i = 0; i < n; i++) {
		t->torch |= !!(v[i]->src->flags & STEPS_DEFAULT);
		if (samples__add(&t->steps, (double)(v[i]->end - v[i]->ts), 1))
			return -ENOMEM;
	}
	return 0;
}

static int torch_page_record(const struct page *p, void *st, const struct bs_hdr *rec,
			     const struct trace_model *m)
{
	struct torch_page *t = st;
	const struct bs_torch_op *op = (const void *)rec;

	/* The outermost ops of a thread: what it was doing (their children are within). */
	if (rec->type == BS_REC_TORCH_OP && rec->size >= sizeof(*op) && !op->depth)
		return page__lane(p, t->ops, rec->pid, rec->tid, rec->ts, op->dur);
	return 0;
}

/* The median step and the spread of the middle 80% (p10 to p90), as torch_step_sum has them. */
static void torch_page_figures(const struct page *p, void *st, FILE *f)
{
	struct torch_page *t = st;
	char label[64], value[32], exact[160], a[32], b[32], c[32];
	const char *href = t->torch ? "#r-torch_step_sum" : NULL;
	double p10, p90;

	if (!t->steps.count)
		return;
	snprintf(label, sizeof(label), "step time, median of %llu",
		 (unsigned long long)t->steps.count);
	p10 = samples__percentile(&t->steps, 10);
	p90 = samples__percentile(&t->steps, 90);
	snprintf(exact, sizeof(exact), "mean %s, stddev %s",
		 human__ns(samples__mean(&t->steps), a, sizeof(a)),
		 human__ns(samples__stddev(&t->steps), b, sizeof(b)));
	page__figure(f, label, human__ns(samples__median(&t->steps), c, sizeof(c)), exact, href);
	snprintf(value, sizeof(value), "%s", human__ns(p10, a, sizeof(a)));
	snprintf(value + strlen(value), sizeof(value) - strlen(value), " – %s",
		 human__ns(p90, b, sizeof(b)));
	snprintf(exact, sizeof(exact), "p10 %.0f ns, p90 %.0f ns", p10, p90);
	page__figure(f, "step time spread (p10 – p90)", value, exact, href);
}

static void torch_page_free(void *st)
{
	struct torch_page *t = st;

	if (!t)
		return;
	samples__free(&t->steps);
	free(t);
}

const struct page_family torch_page = {
	.open = torch_page_open,
	.record = torch_page_record,
	.figures = torch_page_figures,
	.free = torch_page_free,
};
