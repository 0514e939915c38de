// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The steps of a trace, chosen per process among the families' sources; see steps.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "family_stats.h"
#include "array.h"
#include "family.h"
#include "msg.h"
#include "steps.h"

/* The sources a walk runs: the default ones, then the one --steps named. */
#define STEPS_MAX_RUNS 8

struct steps_run {
	const struct family_steps *src;
	void *st;
};

struct steps {
	struct steps_run run[STEPS_MAX_RUNS];
	int nrun, cur; /* cur: the run whose add hook is emitting */
	const char *named;
	struct step_span *v; /* every source's steps; after finish, those chosen, by pid, start */
	size_t n, cap;
	const struct step_span **order; /* the chosen ones, in the trace's order */
	__u64 seq;
	int err;
};

/* Every source of the registry in turn: *F its family's index, *I its index there. */
static const struct family_steps *next_source(int *f, int *i)
{
	for (; families[*f]; (*f)++, *i = 0) {
		const struct family_steps *fs = family__stats(families[*f])->steps;

		if (fs && fs[*i].kind)
			return &fs[(*i)++];
	}
	return NULL;
}

/* The source ASK names ("nvtx:NAME", "cudaProfilerApi"); *ARG its value, NULL without. */
static const struct family_steps *source_of(const char *ask, const char **arg)
{
	const struct family_steps *fs;
	int f = 0, i = 0;

	while ((fs = next_source(&f, &i))) {
		size_t n = strlen(fs->kind);

		if (strncmp(ask, fs->kind, n) || (ask[n] && ask[n] != ':'))
			continue;
		*arg = ask[n] ? ask + n + 1 : NULL;
		return fs;
	}
	return NULL;
}

void steps__list(char *buf, size_t len)
{
	const struct family_steps *fs;
	size_t used = 0;

	buf[0] = 0;
	/* The default sources first: the order they are tried in. */
	for (int pass = 0; pass < 2; pass++) {
		int f = 0, i = 0;

		while (used < len && (fs = next_source(&f, &i)))
			if (((fs->flags & STEPS_DEFAULT) != 0) == (pass == 0))
				used += snprintf(buf + used, len - used, "%s%s%s%s",
						 used ? ", " : "", fs->kind, fs->arg ? ":" : "",
						 fs->arg ? fs->arg : "");
	}
}

int steps__check(const char *ask, const char *opt)
{
	const struct family_steps *fs;
	const char *arg = NULL;
	char list[256];

	if (!ask)
		return 0;
	fs = source_of(ask, &arg);
	steps__list(list, sizeof(list));
	if (!fs) {
		pr_err("%s=%s: no such source of steps (sources: %s)\n", opt, ask, list);
		return -EINVAL;
	}
	if (fs->arg && (!arg || !*arg)) {
		pr_err("%s=%s: %s:%s needs its %s: %s\n", opt, ask, fs->kind, fs->arg, fs->arg,
		       fs->desc);
		return -EINVAL;
	}
	if (!fs->arg && arg) {
		pr_err("%s=%s: %s takes no value (sources: %s)\n", opt, ask, fs->kind, list);
		return -EINVAL;
	}
	return 0;
}

static int add_run(struct steps *s, const struct family_steps *src, const char *arg)
{
	struct steps_run *r = &s->run[s->nrun];

	if (s->nrun == STEPS_MAX_RUNS)
		return 0; /* more default sources than this: the first ones decide */
	r->src = src;
	if (src->new && !(r->st = src->new (arg)))
		return -ENOMEM;
	s->nrun++;
	return 0;
}

struct steps *steps__new(const char *ask)
{
	struct steps *s = calloc(1, sizeof(*s));
	const struct family_steps *fs, *named = NULL;
	const char *arg = NULL;
	int f = 0, i = 0;

	if (!s)
		return NULL;
	if (ask && (named = source_of(ask, &arg)) && !(named->flags & STEPS_DEFAULT))
		s->named = ask;
	while ((fs = next_source(&f, &i)))
		if ((fs->flags & STEPS_DEFAULT) && add_run(s, fs, NULL))
			goto fail;
	if (s->named && add_run(s, named, arg))
		goto fail;
	return s;
fail:
	steps__free(s);
	return NULL;
}

static int emit(void *arg, const struct step_span *sp)
{
	struct steps *s = arg;

	if (array__grow((void **)&s->v, s->n, &s->cap, sizeof(*s->v)))
		return -ENOMEM;
	s->v[s->n] = *sp;
	s->v[s->n].src = s->run[s->cur].src;
	s->v[s->n].seq = s->seq++;
	s->n++;
	return 0;
}

void steps__add(struct steps *s, const struct bs_hdr *rec, const struct trace_model *m)
{
	for (s->cur = 0; s->cur < s->nrun && !s->err; s->cur++)
		s->err = s->run[s->cur].src->add(s->run[s->cur].st, rec, m, emit, s);
}

/* The run of SRC: the order of preference. */
static int rank_of(const struct steps *s, const struct family_steps *src)
{
	int k = 0;

	while (k < s->nrun && s->run[k].src != src)
		k++;
	return k;
}

#define CMP(x, y) ((x) < (y) ? -1 : (x) > (y))

/* By process, then the sources in order of preference, then start (then the trace's order). */
static int by_pid_source(const void *x, const void *y, void *arg)
{
	const struct step_span *a = x, *b = y;
	int ra, rb;

	if (a->pid != b->pid)
		return CMP(a->pid, b->pid);
	ra = rank_of(arg, a->src);
	rb = rank_of(arg, b->src);
	if (ra != rb)
		return CMP(ra, rb);
	if (a->ts != b->ts)
		return CMP(a->ts, b->ts);
	return CMP(a->seq, b->seq);
}

static int by_seq(const void *x, const void *y)
{
	const struct step_span *a = *(const struct step_span *const *)x;
	const struct step_span *b = *(const struct step_span *const *)y;

	return CMP(a->seq, b->seq);
}

int steps__finish(struct steps *s)
{
	size_t kept = 0, i, from;

	if (s->err)
		return s->err;
	if (s->n)
		qsort_r(s->v, s->n, sizeof(*s->v), by_pid_source, s);
	/* Per process, the first source's steps: the others' go. */
	for (i = 0; i < s->n; i = from) {
		__u64 num = 0;

		for (from = i; from < s->n && s->v[from].pid == s->v[i].pid; from++) {
			if (s->v[from].src != s->v[i].src)
				continue;
			s->v[kept] = s->v[from];
			if (!(s->v[kept].src->flags & STEPS_NUMBERED))
				s->v[kept].step = ++num;
			kept++;
		}
	}
	s->n = kept;
	s->order = malloc((s->n + 1) * sizeof(*s->order));
	if (!s->order)
		return s->err = -ENOMEM;
	for (i = 0; i < s->n; i++)
		s->order[i] = &s->v[i];
	if (s->n)
		qsort(s->order, s->n, sizeof(*s->order), by_seq);
	return 0;
}

const struct step_span *steps__of(const struct steps *s, __u32 pid, size_t *n)
{
	size_t lo = 0, hi = s && s->order ? s->n : 0, end;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo; s && s->order && end < s->n && s->v[end].pid == pid; end++)
		;
	*n = end - lo;
	return *n ? &s->v[lo] : NULL;
}

const struct step_span *const *steps__all(const struct steps *s, size_t *n)
{
	*n = s && s->order ? s->n : 0;
	return *n ? s->order : NULL;
}

long steps__find(const struct step_span *v, size_t n, __u64 ts)
{
	size_t lo = 0, hi = n;

	/* The first step that starts after TS: the one before it is the candidate. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].ts <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && ts < v[lo - 1].end ? (long)lo - 1 : -1;
}

const char *steps__named(const struct steps *s)
{
	return s ? s->named : NULL;
}

void steps__free(struct steps *s)
{
	if (!s)
		return;
	for (int k = 0; k < s->nrun; k++)
		if (s->run[k].src->free)
			s->run[k].src->free(s->run[k].st);
	free(s->v);
	free(s->order);
	free(s);
}
