// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The cpu family on the report's page: a flame graph of the CPU samples. */
#include <errno.h>
#include <stdlib.h>
#include "cpu.h"
#include "cpu_samples.h"
#include "flamegraph.h"
#include "page.h"

struct cpu_page {
	struct cpu_samples *samples; /* counted per stack while walking */
	struct flamegraph *flame;    /* then drawn from them, while the trace's names are known */
};

static void cpu_page_free(void *st)
{
	struct cpu_page *c = st;

	if (!c)
		return;
	cpu_samples__free(c->samples);
	flamegraph__free(c->flame);
	free(c);
}

static int cpu_page_open(const struct page *p, void **st)
{
	struct cpu_page *c = calloc(1, sizeof(*c));

	if (c) {
		c->samples = cpu_samples__new();
		c->flame = flamegraph__new("samples");
	}
	if (!c || !c->samples || !c->flame) {
		cpu_page_free(c);
		return -ENOMEM;
	}
	*st = c;
	return 0;
}

static int cpu_page_record(const struct page *p, void *st, const struct bs_hdr *rec,
			   const struct trace_model *m)
{
	const struct bs_cpu_sample *s = (const void *)rec;

	if (rec->type != BS_REC_CPU_SAMPLE)
		return 0;
	return cpu_samples__add_n(((struct cpu_page *)st)->samples, s->stack_id,
				  s->flags & BS_CPU_KERNEL, 1);
}

static int cpu_page_named(const struct page *p, void *st, const struct trace_model *m)
{
	struct cpu_page *c = st;
	size_t it = 0;
	__u32 stack_id;
	int kernel;
	__u64 n;

	while (cpu_samples__next(c->samples, &it, &stack_id, &kernel, &n))
		if (flamegraph__add(c->flame, trace_model__stack(m, stack_id), kernel, n, m))
			break;
	return 0;
}

static void cpu_page_sections(const struct page *p, void *st, FILE *f)
{
	struct cpu_page *c = st;

	if (!flamegraph__samples(c->flame))
		return;
	fprintf(f, "<section id=\"flame\"><h2>CPU samples</h2>\n<div>");
	flamegraph__svg(c->flame, f, "CPU samples (flame graph)", 0);
	fprintf(f, "</div></section>\n");
}

const struct page_family cpu_page = {
	.open = cpu_page_open,
	.record = cpu_page_record,
	.named = cpu_page_named,
	.sections = cpu_page_sections,
	.free = cpu_page_free,
};
