// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The hang trigger's snapshot as events (snap_records.h): each process of the job and each of
 * its threads where they were when the trigger fired, with the thread's stack, its state in
 * the words of `bpfsight stacks` (thread_state.h) and how long it had been off its CPU.
 */
#include <stddef.h>
#include <stdio.h>
#include "proc.h"
#include "syscall_names.h"
#include "thread_state.h"

int proc__decode_proc_snap(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_proc_snap *p = (const void *)rec;
	char v[16];

	ev->name = trace_model__process_name(m, rec->pid);
	if (!ev->name)
		ev->name = "process";
	if (p->env_rank >= 0)
		event__arg_s64(ev, "rank", p->env_rank);
	if (p->env_local_rank >= 0)
		event__arg_s64(ev, "local_rank", p->env_local_rank);
	if (p->env_world >= 0)
		event__arg_s64(ev, "world_size", p->env_world);
	event__arg_u64(ev, "threads", p->nthreads);
	if (p->edge & BS_SNAP_EDGES)
		event__arg_str(ev, "edge", p->edge & BS_SNAP_AT_START ? "start" : "end");
	if (p->python_minor) {
		snprintf(v, sizeof(v), "3.%u", p->python_minor);
		event__arg_strn(ev, "python", v, sizeof(v));
	}
	event__arg_u64(ev, "took_ns", p->took_ns);
	if (p->error_id)
		event__arg_str(ev, "error", trace_model__string(m, p->error_id));
	return 1;
}

int proc__decode_thread_snap(const struct bs_hdr *rec, const struct trace_model *m,
			     struct event *ev)
{
	const struct bs_thread_snap *t = (const void *)rec;
	const char *sc = t->syscall >= 0 ? syscall_name((__u32)t->syscall) : NULL;

	ev->name = thread_state__text(t->state, t->syscall, t->flags, ev->namebuf,
				      sizeof(ev->namebuf));
	if (sc)
		event__arg_str(ev, "syscall", sc);
	else if (t->syscall >= 0)
		event__arg_s64(ev, "syscall_nr", t->syscall);
	if (t->off_cpu_ns)
		event__arg_u64(ev, "off_cpu_ns", t->off_cpu_ns);
	event__arg_bool(ev, "idle", thread_state__idle(t->state, t->flags));
	event__arg_bool(ev, "gil", !!(t->flags & BS_SNAP_GIL));
	if (t->flags & BS_SNAP_GIL_WAIT)
		event__arg_bool(ev, "gil_wait", 1);
	event__arg_u64(ev, "cpu_ns", t->cpu_ns);
	if (t->flags & BS_SNAP_SAMPLED)
		event__arg_str(ev, "read", "sample");
	/* A recording's edge, not a hang trigger's moment. */
	if (t->flags & BS_SNAP_EDGES)
		event__arg_str(ev, "edge", t->flags & BS_SNAP_AT_START ? "start" : "end");
	if (t->error_id)
		event__arg_str(ev, "error", trace_model__string(m, t->error_id));
	ev->stack = trace_model__stack(m, t->stack_id);
	return 1;
}

/* An instant on its thread: where it was when the job stalled. */
const struct export_style proc_snap_style = { .cat = "hang", .ph = 'i' };
