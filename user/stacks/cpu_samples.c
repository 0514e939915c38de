// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* CPU samples counted per (stack, kernel or user) (cpu_samples.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cpu_samples.h"
#include "family.h"
#include "hmap.h"

struct cpu_samples {
	struct hmap *counts; /* (stack id, kernel) -> __u64 */
};

struct cpu_samples *cpu_samples__new(void)
{
	struct cpu_samples *c = calloc(1, sizeof(*c));

	if (c && !(c->counts = hmap__new(sizeof(__u64)))) {
		free(c);
		c = NULL;
	}
	return c;
}

void cpu_samples__free(struct cpu_samples *c)
{
	if (!c)
		return;
	hmap__free(c->counts);
	free(c);
}

int cpu_samples__add_n(struct cpu_samples *c, __u32 stack_id, int kernel, __u64 n)
{
	__u64 *v = hmap__get(c->counts, (struct hkey){ stack_id, !!kernel }, 1);

	if (!v)
		return -ENOMEM;
	*v += n;
	return 0;
}

int cpu_samples__is_sample(const struct bs_hdr *rec, const struct event *ev)
{
	const struct rec_decoder *d = ev ? family__decoder(rec->type) : NULL;

	return d && d->style && d->style->sample;
}

int cpu_samples__add(struct cpu_samples *c, const struct bs_hdr *rec, const struct event *ev)
{
	if (!cpu_samples__is_sample(rec, ev))
		return 0;
	return cpu_samples__add_n(c, ev->stack_id, ev->stack_in_kernel, 1);
}

int cpu_samples__next(const struct cpu_samples *c, size_t *it, __u32 *stack_id, int *kernel,
		      __u64 *count)
{
	struct hkey key;
	__u64 *n = hmap__next(c->counts, it, &key);

	if (!n)
		return 0;
	*stack_id = (__u32)key.a;
	*kernel = (int)key.b;
	*count = *n;
	return 1;
}

__u64 cpu_samples__period_ns(const char *options)
{
	const char *o = options ? strstr(options, "sample_rate=") : NULL;
	unsigned long hz = o ? strtoul(o + 12, NULL, 10) : 0;

	return 1000000000ull / (hz ? hz : 99);
}
