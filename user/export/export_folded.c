// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * export --format folded: the CPU samples as folded stacks, one line per distinct stack,
 * root first: "main;run;burn 1234" (Brendan Gregg's flamegraph.pl, inferno, speedscope).
 * A sample taken in kernel code ends with a "[kernel]" frame; a sample without a user stack
 * is "[no user stack]". Memory grows with distinct stacks, never with samples.
 * --format folded-offcpu: the same lines for the off-CPU intervals that carry a stack
 * (--stacks=sched), each stack's figure their off-CPU time in microseconds (an off-CPU
 * flame graph, as offcputime | flamegraph.pl draws).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "cpu_samples.h"
#include "export_samples.h"
#include "stack_format.h"
#include "trace_model.h"

/* Append TEXT to the line in *BUF (LEN used, CAP allocated): ';' separates frames. */
static int put(char **buf, size_t *len, size_t *cap, const char *text)
{
	size_t n = strlen(text);
	char *nb;

	if (*len + n + 1 > *cap) {
		nb = realloc(*buf, (*len + n + 1) * 2);
		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = (*len + n + 1) * 2;
	}
	for (size_t i = 0; i < n; i++)
		(*buf)[(*len)++] = text[i] == ';' ? ':' : text[i] == '\n' ? ' ' : text[i];
	(*buf)[*len] = 0;
	return 0;
}

char *export_folded__line(const struct trace_stack *s, int kernel, const struct trace_model *m)
{
	size_t len = 0, cap = 0;
	char *line = NULL, buf[512];
	int err = 0;

	if (!s || !s->nframes)
		err = put(&line, &len, &cap, "[no user stack]");
	if (s && (s->flags & BS_STACK_TRUNCATED))
		err = err ?: put(&line, &len, &cap, "[truncated]");
	for (int i = s ? (int)s->nframes - 1 : -1; i >= 0 && !err; i--) {
		const struct bs_frame *fr = &s->frames[i];

		if (len)
			err = put(&line, &len, &cap, "\x01"); /* a separator, made ';' below */
		err = err ?: put(&line, &len, &cap, stack_frame__func(fr, m, buf, sizeof(buf)));
		if (!err && fr->kind == BS_FRAME_PYTHON) {
			snprintf(buf, sizeof(buf), " (%s:%u)", stack_frame__file(fr, m), fr->line);
			err = put(&line, &len, &cap, buf);
		}
	}
	if (!err && kernel)
		err = put(&line, &len, &cap, "\x01[kernel]");
	if (err) {
		free(line);
		return NULL;
	}
	for (size_t i = 0; i < len; i++)
		if (line[i] == '\x01')
			line[i] = ';';
	return line;
}

struct folded_line {
	char *text;
	__u64 n;
};

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text, ((const struct folded_line *)b)->text);
}

/* Stacks that read the same (return addresses differ, frames do not) are one line, sorted. */
static int folded_finish(void *vst, const struct trace_model *m, const struct trace_status *status)
{
	struct samples_export *st = vst;
	struct folded_line *lines = NULL;
	size_t it = 0, n = 0, cap = 0, i, j, written = 0;
	__u32 stack_id;
	int err = 0, kernel;
	__u64 cnt;

	while (!err && cpu_samples__next(st->counts, &it, &stack_id, &kernel, &cnt)) {
		if (array__grow((void **)&lines, n, &cap, sizeof(*lines))) {
			err = -ENOMEM;
			break;
		}
		lines[n].text = export_folded__line(trace_model__stack(m, stack_id), kernel, m);
		lines[n].n = cnt;
		err = lines[n++].text ? 0 : -ENOMEM;
	}
	if (!err && n)
		qsort(lines, n, sizeof(*lines), line_cmp);
	for (i = 0; !err && i < n; i = j) {
		__u64 total = 0;

		for (j = i; j < n && !strcmp(lines[j].text, lines[i].text); j++)
			total += lines[j].n;
		if (total / st->unit) {
			fprintf(st->f, "%s %llu\n", lines[i].text,
				(unsigned long long)(total / st->unit));
			written++;
		}
	}
	if (!err && !written)
		err = -ENODATA; /* an empty file would read as a profile of nothing */
	for (i = 0; lines && i < n; i++)
		free(lines[i].text);
	free(lines);
	return samples_export__close(st, err);
}

const struct exporter export_folded = {
	.format = "folded",
	.desc = "CPU samples as folded stacks (flamegraph.pl, inferno, speedscope)",
	.suffix = ".folded",
	.open = samples_export__open,
	.record = samples_export__record,
	.finish = folded_finish,
	.abort = samples_export__abort,
	.needs = "CPU samples (record with -t cpu)",
};

static void *offcpu_open(const char *out, const struct trace_meta *meta,
			 const struct export_opts *opts, int *err)
{
	struct samples_export *st = samples_export__open(out, meta, opts, err);

	if (st)
		st->unit = 1000;
	return st;
}

/* An off-CPU interval with a stack (its event kind, as dump names it): its time there. */
static int offcpu_record(void *vst, const struct bs_hdr *rec, const struct event *ev,
			 const struct trace_model *m)
{
	struct samples_export *st = vst;

	if (!ev || !ev->stack || strcmp(ev->kind, "offcpu"))
		return 0;
	return cpu_samples__add_n(st->counts, ev->stack->id, 0, ev->dur);
}

const struct exporter export_folded_offcpu = {
	.format = "folded-offcpu",
	.desc = "off-CPU time (us) by blocking stack, folded (--stacks=sched; flame graphs)",
	.suffix = ".offcpu.folded",
	.open = offcpu_open,
	.record = offcpu_record,
	.finish = folded_finish,
	.abort = samples_export__abort,
	.needs = "off-CPU intervals with a stack (record with -t sched --stacks=sched)",
};
