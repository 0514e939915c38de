// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The labels of ClickHouse rows: ch_labels.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ch_labels.h"
#include "content_id.h"
#include "family.h"
#include "family_stats.h"
#include "frame_sum.h"
#include "json.h"
#include "msg.h"
#include "stack_call.h"
#include "trace_model.h"
#include "verdict.h"

int ch_labels__option(struct ch_labels *l, int job, const char *arg)
{
	char *end;
	long v;

	if (job) {
		/* the job is a URL's path in `--from clickhouse://HOST:PORT/JOB` */
		if (!*arg || strpbrk(arg, "/?#%\t\n\\'")) {
			pr_err("bad job name '%s': no '/', '?', '#', '%%', quotes or blanks\n",
			       arg);
			return -EINVAL;
		}
		l->job = arg;
		return 0;
	}
	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < -1 || v > INT_MAX) {
		pr_err("bad rank '%s': a number, 0 and up (-1: unknown)\n", arg);
		return -EINVAL;
	}
	l->rank = (__s32)v;
	return 0;
}

/* FR's place in S, 1-based; 0 for none. */
static unsigned frame_index(const struct trace_stack *s, const struct bs_frame *fr)
{
	return fr && s ? (unsigned)(fr - s->frames) + 1 : 0;
}

/*
 * What the server's reports read of a stack beside its frames, as its `stack` row's args:
 * what the families' verdict rules read of any stack (struct family_verdict.stack_args);
 * of a user stack, rank_waits groups by the call it is in (stack_call__in, cut where the
 * report cuts it: 63 bytes) and its line in the job's own code (frame_sum__own_site);
 * gil_stacks and offcpu_stacks sum it under the frames frame_sum does: that line (`site`)
 * and the library's line beside it (`via`), their 1-based places in its frames, left out
 * when none. The hang's and the edges' rules say a thread's line as stack_call__where does:
 * `where`, when it is not `own` (a stack in the interpreter's library only).
 */
static void ch_stack_args(const struct trace_stack *s, int kernel, const struct trace_model *m,
			  struct json *j)
{
	const struct bs_frame *via, *own = frame_sum__own_site(s, m, &via);
	char call[64], at[256] = "", where[320];

	for_each_family(it) {
		const struct family_verdict *fv = family__stats(it.f)->verdict;

		if (fv && fv->stack_args && s)
			fv->stack_args(s, m, j);
	}
	if (kernel)
		return;
	if (s && stack_call__in(s, m, call, sizeof(call)))
		json__kv_str(j, "call", call);
	if (own)
		json__kv_str(j, "own", stack_call__frame(own, m, at, sizeof(at)));
	if (strcmp(stack_call__where(s, m, where, sizeof(where)), at))
		json__kv_str(j, "where", where);
	if (frame_index(s, own))
		json__kv_u64(j, "site", frame_index(s, own));
	if (frame_index(s, via))
		json__kv_u64(j, "via", frame_index(s, via));
}

/* What the families' verdict rules read of a process (struct family_verdict.process_args). */
static void ch_process_args(const struct trace_model *m, __u32 pid, struct json *j)
{
	for_each_family(it) {
		const struct family_verdict *fv = family__stats(it.f)->verdict;

		if (fv && fv->process_args)
			fv->process_args(m, pid, j);
	}
}

/*
 * The families' rows past the events' (struct family_verdict.ch_rows), one state each for the
 * file being rendered, in registry order.
 */
struct ch_rows_all {
	const struct verdict_ch_rows *hook[32];
	void *st[32];
	size_t n;
};

static void ch_rows_free(void *vst)
{
	struct ch_rows_all *a = vst;

	for (size_t i = 0; a && i < a->n; i++)
		a->hook[i]->free(a->st[i]);
	free(a);
}

static void *ch_rows_new(void)
{
	struct ch_rows_all *a = calloc(1, sizeof(*a));

	for_each_family(it) {
		const struct family_verdict *fv = family__stats(it.f)->verdict;

		if (!a || !fv || !fv->ch_rows || a->n == sizeof(a->st) / sizeof(a->st[0]))
			continue;
		a->hook[a->n] = fv->ch_rows;
		if (!(a->st[a->n++] = fv->ch_rows->new ())) {
			a->n--;
			ch_rows_free(a);
			return NULL;
		}
	}
	return a;
}

static int ch_rows_record(void *vst, const struct bs_hdr *rec, const struct trace_model *m,
			  __u64 row, FILE *args)
{
	struct ch_rows_all *a = vst;
	int err = 0;

	for (size_t i = 0; i < a->n && !err; i++)
		err = a->hook[i]->record(a->st[i], rec, m, row, args);
	return err;
}

static int ch_rows_end(void *vst, const struct trace_model *m, __u64 shift,
		       int (*emit)(void *arg, __u32 pid, const char *kind, const char *name,
				   const char *args),
		       void *arg)
{
	struct ch_rows_all *a = vst;
	int err = 0;

	for (size_t i = 0; i < a->n && !err; i++)
		err = a->hook[i]->end(a->st[i], m, shift, emit, arg);
	return err;
}

int ch_labels__for_file(struct ch_labels *l, const char *file)
{
	static char id[CONTENT_ID_LEN], job[256];
	const char *base = strrchr(file, '/');
	size_t n;
	int err;

	err = content_id__file(file, id);
	if (err) {
		pr_err("cannot read %s: %s\n", file, strerror(-err));
		return err;
	}
	l->file = file;
	l->file_id = id;
	l->stack_args = ch_stack_args;
	l->process_args = ch_process_args;
	l->rows_new = ch_rows_new;
	l->rows_record = ch_rows_record;
	l->rows_end = ch_rows_end;
	l->rows_free = ch_rows_free;
	if (l->job && l->job != job)
		return 0;
	base = base ? base + 1 : file;
	n = strlen(base);
	if (n > 4 && !strcmp(base + n - 4, ".bst"))
		n -= 4;
	snprintf(job, sizeof(job), "%.*s", (int)n, base);
	l->job = job;
	return ch_labels__option(l, 1, job);
}
