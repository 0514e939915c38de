// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * top's NOW column (top -p): what each thread is in now, for how long, and where in the job's
 * code, as py-spy top names a thread's function. The recording reads the targets' threads each
 * refresh as the recording's edges read them (recording__now: THREAD_SNAPs flagged
 * BS_SNAP_NOW, with their stacks); a thread blocked in a read for an hour writes no event,
 * and this is what shows it: "read: wait_for_input (job.py:9) 1.0h".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "snap_records.h"
#include "stack_call.h"
#include "syscall_names.h"
#include "thread_state.h"
#include "top_priv.h"
#include "trace_model.h"

/* A snapshot older than this (two refreshes missed) says nothing of now. */
#define NOW_STALE_NS 3000000000ull
#define NOW_LABELS   4096 /* distinct labels kept; past it a thread's says only its state */

const struct top_column top_now_column = {
	"now",
	"NOW",
	"top -p: what the thread is in now (its system call, the GIL, running) and for how long, "
	"at which function and line of the job's own code",
	TOP_LONGEST,
	0,
	46,
};

const char *top__intern(struct top *t, const char *label)
{
	char *copy;

	for (size_t i = 0; i < t->nlabels; i++)
		if (!strcmp(t->labels[i], label))
			return t->labels[i];
	if (t->nlabels == NOW_LABELS ||
	    array__grow((void **)&t->labels, t->nlabels, &t->labels_cap, sizeof(*t->labels)) ||
	    !(copy = strdup(label)))
		return NULL;
	return t->labels[t->nlabels++] = copy;
}

/* "read", "futex in ncclAllReduce", "GIL", "running": short, the duration follows. */
static const char *what(const struct bs_thread_snap *s, char *buf, size_t len)
{
	const char *sc = s->syscall >= 0 ? syscall_name((__u32)s->syscall) : NULL;

	if (s->flags & (BS_SNAP_RUNNING | BS_SNAP_EXITING) || !s->state || !sc)
		return thread_state__text(s->state, s->syscall, s->flags, buf, len);
	if (s->flags & BS_SNAP_GIL_WAIT)
		return "GIL";
	return sc;
}

void top_now__snap(struct top *t, const struct bs_hdr *h)
{
	const struct bs_thread_snap *s = (const void *)h;
	const struct trace_stack *st;
	char state[64], call[96], where[320], label[512];
	struct top_thread *th;

	if (h->type != BS_REC_THREAD_SNAP || h->size < sizeof(*s) || !(s->flags & BS_SNAP_NOW) ||
	    t->now_col < 0 || !(th = top__thread(t, h->pid, h->tid)))
		return;
	st = s->stack_id ? trace_model__stack(t->model, s->stack_id) : NULL;
	snprintf(label, sizeof(label), "%s", what(s, state, sizeof(state)));
	if (st && stack_call__in(st, t->model, call, sizeof(call)))
		snprintf(label + strlen(label), sizeof(label) - strlen(label), " in %s", call);
	if (st) { /* "`fn` (file:line)" as py-spy top writes it: fn (file:line) */
		const char *w = stack_call__where(st, t->model, where, sizeof(where));
		size_t n = strlen(label);

		for (snprintf(label + n, sizeof(label) - n, ": "), n += 2;
		     *w && n + 1 < sizeof(label); w++)
			if (*w != '`')
				label[n++] = *w;
		label[n] = 0;
	}
	th->now_label = top__intern(t, label);
	th->now_ns = s->off_cpu_ns;
	th->now_at = h->ts;
	t->shown |= 1u << t->now_col;
}

void top_now__cell(const struct top *t, const struct top_thread *th, __u64 now, double *val,
		   const char **label)
{
	if (!th->now_label || (now > th->now_at && now - th->now_at > NOW_STALE_NS) ||
	    (th->flags & TOP_ROW_EXITED))
		return;
	*val = (double)th->now_ns; /* as read (this refresh's): not guessed on to the cut */
	*label = th->now_label;
}

void top_now__free(struct top *t)
{
	for (size_t i = 0; i < t->nlabels; i++)
		free(t->labels[i]);
	free(t->labels);
}
