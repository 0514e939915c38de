// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * export --format svg: a flame graph of the CPU samples, as py-spy record writes one: a
 * static SVG (no script), a tooltip per frame. Memory grows with distinct stacks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "cpu_samples.h"
#include "export.h"
#include "flamegraph.h"

struct svg {
	FILE *f;
	struct cpu_samples *counts;
	char title[128];
};

static void *svg_open(const char *out, const struct trace_meta *meta, int *err)
{
	struct svg *st = calloc(1, sizeof(*st));
	int fd;

	if (!st || !(st->counts = cpu_samples__new())) {
		free(st);
		*err = -ENOMEM;
		return NULL;
	}
	snprintf(st->title, sizeof(st->title), "CPU samples: %s",
		 meta->target && *meta->target ? meta->target : "recording");
	fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	st->f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!st->f) {
		*err = -errno;
		if (fd >= 0)
			close(fd);
		cpu_samples__free(st->counts);
		free(st);
		return NULL;
	}
	return st;
}

static int svg_record(void *vst, const struct bs_hdr *rec, const struct event *ev,
		      const struct trace_model *m)
{
	struct svg *st = vst;

	return ev ? cpu_samples__add(st->counts, rec) : 0;
}

static int svg_finish(void *vst, const struct trace_model *m, const struct trace_status *status)
{
	struct svg *st = vst;
	struct flamegraph *g = flamegraph__new();
	size_t it = 0;
	__u32 stack_id;
	int kernel, err = g ? 0 : -ENOMEM;
	__u64 n;

	while (!err && cpu_samples__next(st->counts, &it, &stack_id, &kernel, &n))
		err = flamegraph__add(g, trace_model__stack(m, stack_id), kernel, n, m);
	if (!err)
		err = flamegraph__svg(g, st->f, st->title, 1);
	if (fclose(st->f) && !err)
		err = -errno;
	flamegraph__free(g);
	cpu_samples__free(st->counts);
	free(st);
	return err;
}

static void svg_abort(void *vst)
{
	struct svg *st = vst;

	if (!st)
		return;
	fclose(st->f);
	cpu_samples__free(st->counts);
	free(st);
}

const struct exporter export_svg = {
	.format = "svg",
	.desc = "a flame graph of the CPU samples (SVG, as py-spy record writes)",
	.open = svg_open,
	.record = svg_record,
	.finish = svg_finish,
	.abort = svg_abort,
};
