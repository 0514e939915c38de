// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The toy family's metrics: ticks per owner, and their values times --toy-scale. */
#include <errno.h>
#include <stdlib.h>
#include "metrics_family.h"
#include "record_ctx.h"
#include "toy.h"

/* Metrics: ticks per owner (series), and their values times --toy-scale for the node. */
struct toy_series {
	__u64 ticks;
};

static int toy_metrics_open(const struct record_opts *o, void **st)
{
	const struct toy_opts *opts = record_opts__family(o, &family_toy);

	*st = calloc(1, sizeof(struct toy_sum));
	if (*st)
		((struct toy_sum *)*st)->n = opts->scale; /* n: the scale, total: the sum */
	return *st ? 0 : -ENOMEM;
}

static void toy_metrics_record(struct metrics *m, void *st, const struct bs_hdr *rec)
{
	struct toy_sum *s = st;
	struct toy_series *ser;

	if (rec->type != TOY_REC)
		return;
	s->total += s->n * ((const struct toy_tick *)rec)->value;
	if ((ser = metrics__series(m, &family_toy, rec->pid, 1)))
		ser->ticks++;
}

static void toy_metrics_render(FILE *f, void *st, const struct metrics_owner *ow, size_t n)
{
	const struct toy_series *ser;

	metrics__head(f, "bpfsight_toy_ticks_total", "counter", "Toy ticks.");
	for (size_t i = 0; i < n; i++) {
		if (!(ser = metrics_owner__series(&ow[i], &family_toy)))
			continue;
		fputs("bpfsight_toy_ticks_total{", f);
		metrics__owner_labels(f, &ow[i]);
		fprintf(f, "} %llu\n", (unsigned long long)ser->ticks);
	}
	metrics__head(f, "bpfsight_toy_scaled_total", "counter", "Toy values times --toy-scale.");
	fprintf(f, "bpfsight_toy_scaled_total %llu\n",
		(unsigned long long)((struct toy_sum *)st)->total);
}

const struct metrics_family toy_metrics = {
	.series_size = sizeof(struct toy_series),
	.open = toy_metrics_open,
	.free = free,
	.record = toy_metrics_record,
	.render = toy_metrics_render,
};
