// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * export --format svg: a flame graph of the CPU samples, as py-spy record and inferno write
 * one: an SVG with a tooltip per frame and an inline script to zoom and search
 * (flamegraph.h). Memory grows with distinct stacks.
 */
#include <errno.h>
#include "cpu_samples.h"
#include "export_samples.h"
#include "flamegraph.h"

static int svg_finish(void *vst, const struct trace_model *m, const struct trace_status *status)
{
	struct samples_export *st = vst;
	struct flamegraph *g = flamegraph__new("samples");
	size_t it = 0;
	__u32 stack_id;
	int kernel, err = g ? 0 : -ENOMEM;
	__u64 n, nsamples = 0;

	while (!err && cpu_samples__next(st->counts, &it, &stack_id, &kernel, &n)) {
		err = flamegraph__add(g, trace_model__stack(m, stack_id), kernel, n, m);
		nsamples += n;
	}
	if (!err && !nsamples)
		err = -ENODATA; /* an empty graph would read as a profile of nothing */
	if (!err)
		err = flamegraph__svg(g, st->f, st->title, 1);
	flamegraph__free(g);
	return samples_export__close(st, err);
}

const struct exporter export_svg = {
	.format = "svg",
	.desc = "a flame graph of the CPU samples (SVG: click to zoom, search)",
	.suffix = ".svg",
	.open = samples_export__open,
	.record = samples_export__record,
	.finish = svg_finish,
	.abort = samples_export__abort,
	.needs = "CPU samples (record with -t cpu)",
};
