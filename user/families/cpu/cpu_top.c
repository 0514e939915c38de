// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cpu family in `bpfsight top`: no column of its own, its samples are the function view's
 * (top__sample), each worth a period of on-CPU time at --sample-rate.
 */
#include <stdlib.h>
#include "cpu.h"
#include "record_ctx.h"
#include "top_family.h"

static int cpu_top_open(const struct record_opts *o, void **st)
{
	const struct cpu_opts *c = record_opts__family(o, &family_cpu);
	__u64 *period = malloc(sizeof(*period));

	if (!period)
		return -1;
	*period = 1000000000ull / (c && c->hz ? c->hz : 1);
	*st = period;
	return 0;
}

static void cpu_top_record(struct top *t, void *st, const struct bs_hdr *h)
{
	const struct bs_cpu_sample *s = (const void *)h;

	if (h->type != BS_REC_CPU_SAMPLE || h->size < sizeof(*s))
		return;
	top__sample(t, s->stack_id, !!(s->flags & BS_CPU_KERNEL), *(__u64 *)st);
}

const struct top_family cpu_top = {
	.open = cpu_top_open,
	.free = free,
	.record = cpu_top_record,
};
