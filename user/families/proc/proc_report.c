// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Decode side of the proc pseudo-family: metadata snapshots, lifecycle, loss markers. */
#include <stddef.h>
#include <stdio.h>
#include "proc.h"
#include "rank_waits.h"
#include "proc_edges.h"

static int decode_process(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_process *p = (const void *)rec;

	event__arg_u64(ev, "ppid", p->ppid);
	event__arg_strn(ev, "comm", p->comm, sizeof(p->comm));
	ev->name = ev->args[ev->nargs - 1].str;
	event__arg_str(ev, "cmdline", p->cmdline_id ? trace_model__string(m, p->cmdline_id) : "");
	event__arg_str(ev, "exe", p->exe_id ? trace_model__string(m, p->exe_id) : "");
	event__arg_u64(ev, "uid", p->uid);
	event__arg_u64(ev, "start_ns", p->start_ns);
	return 1;
}

static int decode_thread(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_thread *t = (const void *)rec;

	event__arg_strn(ev, "name", t->name, sizeof(t->name));
	ev->name = ev->args[ev->nargs - 1].str;
	return 1;
}

static int decode_loss(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_loss *l = (const void *)rec;
	const struct family *owner;

	ev->name = loss_cause__find(l->cause, &owner);
	if (!ev->name) {
		/* A newer recorder's cause: keep its number visible rather than "unknown". */
		snprintf(ev->namebuf, sizeof(ev->namebuf), "cause_%u", l->cause);
		ev->name = ev->namebuf;
	}
	event__arg_u64(ev, "count", l->count);
	event__arg_u64(ev, "cause", l->cause);
	/* Whose events: "all" for the whole file's, or a file that did not say. */
	event__arg_str(ev, "family", loss__family_name(l));
	return 1;
}

static int decode_fork(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_fork *f = (const void *)rec;

	ev->name = f->child_tid == f->child_pid ? "fork" : "clone_thread";
	event__arg_u64(ev, "child_pid", f->child_pid);
	event__arg_u64(ev, "child_tid", f->child_tid);
	event__arg_strn(ev, "comm", f->comm, sizeof(f->comm));
	return 1;
}

static int decode_exec(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_exec *x = (const void *)rec;

	event__arg_strn(ev, "comm", x->comm, sizeof(x->comm));
	ev->name = ev->args[ev->nargs - 1].str;
	event__arg_u64(ev, "old_tid", x->old_tid);
	return 1;
}

static int decode_exit(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_exit *x = (const void *)rec;

	/* task->exit_code is a wait status: (code << 8) | signal, 0x80 = core dumped. */
	event__arg_u64(ev, "exit_code", (x->exit_code >> 8) & 0xff);
	event__arg_u64(ev, "signal", x->exit_code & 0x7f);
	event__arg_u64(ev, "group_dead", x->group_dead);
	if (rec->size >= sizeof(struct bs_exit_cpu))
		event__arg_u64(ev, "cpu_ns", ((const struct bs_exit_cpu *)rec)->cpu_ns);
	return 1;
}

static int decode_comm(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_comm *c = (const void *)rec;

	event__arg_strn(ev, "comm", c->comm, sizeof(c->comm));
	ev->name = ev->args[ev->nargs - 1].str;
	return 1;
}

static int decode_thread_name(const struct bs_hdr *rec, const struct trace_model *m,
			      struct event *ev)
{
	const struct bs_thread_name *t = (const void *)rec;
	const char *name = trace_model__string(m, t->name_id);

	ev->name = name ? name : "";
	event__arg_str(ev, "name", ev->name);
	event__arg_str(ev, "source", t->source == BS_THREAD_NAME_PYTHON ? "python" : "other");
	return 1;
}

/* Kineto's category of process events; the loss markers' own. */
static const struct export_style lifecycle_style = { .cat = "process", .ph = 'i' };
static const struct export_style loss_style = {
	.cat = "loss",
	.ph = 'i',
	.track = "bpfsight: loss markers",
	.desc = "Where the recorder noticed lost events; count and cause in the arguments.",
};

/* A stack's id and the names of its frames (bpfsight merge). */
static void rebase_stack(struct bs_hdr *rec, const struct rec_rebase *rb)
{
	struct bs_stack *st = (void *)rec;
	struct bs_frame *f = (void *)(st + 1);

	st->id = rb->stack(rb, st->id);
	for (__u32 i = 0; i < st->nframes && (char *)(f + i + 1) <= (char *)rec + rec->size; i++) {
		f[i].func_id = rb->string(rb, f[i].func_id);
		f[i].file_id = rb->string(rb, f[i].file_id);
	}
}

#define OFF(t, f) offsetof(struct t, f)

const struct rec_decoder proc_decoders[] = {
	/* Strings and symbol names: the model keeps them; new-code records are kept for `info`. */
	{ BS_REC_STRING, sizeof(struct bs_string), "string", family__decode_meta,
	  .string_offs = { OFF(bs_string, id) } },
	{ BS_REC_PROCESS, sizeof(struct bs_process), "process", decode_process, &lifecycle_style,
	  .clock_offs = { OFF(bs_process, start_ns) }, .task_offs = { OFF(bs_process, ppid) },
	  .string_offs = { OFF(bs_process, cmdline_id), OFF(bs_process, exe_id) } },
	{ BS_REC_THREAD, sizeof(struct bs_thread), "thread", decode_thread, &lifecycle_style },
	{ BS_REC_LOSS, sizeof(struct bs_loss), "loss", decode_loss, &loss_style },
	{ BS_REC_FORK, sizeof(struct bs_fork), "fork", decode_fork, &lifecycle_style,
	  .task_offs = { OFF(bs_fork, child_pid), OFF(bs_fork, child_tid) } },
	{ BS_REC_EXEC, sizeof(struct bs_exec), "exec", decode_exec, &lifecycle_style,
	  .task_offs = { OFF(bs_exec, old_tid) } },
	{ BS_REC_EXIT, sizeof(struct bs_exit), "exit", decode_exit, &lifecycle_style },
	{ BS_REC_COMM, sizeof(struct bs_comm), "comm", decode_comm, &lifecycle_style },
	{ BS_REC_THREAD_NAME, sizeof(struct bs_thread_name), "thread_name", decode_thread_name,
	  &lifecycle_style, .string_offs = { OFF(bs_thread_name, name_id) } },
	{ BS_REC_SYMBOL, sizeof(struct bs_symbol), "symbol", family__decode_meta,
	  .string_offs = { OFF(bs_symbol, name_id) } },
	{ BS_REC_STACK, sizeof(struct bs_stack), "stack", family__decode_meta,
	  .rebase = rebase_stack },
	{ BS_REC_STACK_REF, sizeof(struct bs_stack_ref), "stack_ref", family__decode_meta,
	  .stack_off = OFF(bs_stack_ref, stack_id) },
	{ BS_REC_MAP_EXEC, sizeof(struct bs_map_exec), "new_code", family__decode_meta },
	{ BS_REC_THREAD_NS, sizeof(struct bs_thread_ns), "thread_ns", family__decode_meta },
	/* bpfsight merge's: the model keeps them (trace_model__rank). */
	{ BS_REC_RANK, sizeof(struct bs_rank), "rank", family__decode_meta,
	  .string_offs = { OFF(bs_rank, host_id), OFF(bs_rank, path_id), OFF(bs_rank, boot_id) } },
	{ BS_REC_SYNC_BASE, sizeof(struct bs_sync_base), "sync_base", family__decode_meta },
	/* The hang trigger's snapshot of the job's threads: the model keeps it too. */
	{ BS_REC_PROC_SNAP, sizeof(struct bs_proc_snap), "process_state", proc__decode_proc_snap,
	  &proc_snap_style, .string_offs = { OFF(bs_proc_snap, error_id) } },
	{ BS_REC_THREAD_SNAP, sizeof(struct bs_thread_snap), "thread_state",
	  proc__decode_thread_snap, &proc_snap_style, .stack_off = OFF(bs_thread_snap, stack_id),
	  .string_offs = { OFF(bs_thread_snap, error_id) } },
	/* The recorder's, at its stop: the model keeps it (info's "unwind tables:"). */
	{ BS_REC_UNWIND_USAGE, BS_UNWIND_USAGE_V1, "unwind_usage", family__decode_meta },
	/* The stack service's: a python whose frames are not read (the python_unread report). */
	{ BS_REC_PY_UNREAD, sizeof(struct bs_py_unread), "python_unread", family__decode_meta,
	  .string_offs = { OFF(bs_py_unread, object_id), OFF(bs_py_unread, why_id) } },
	{ 0 },
};

extern const struct report ranks_report;  /* ranks_report.c */
extern const struct report ledger_report; /* ledger_report.c */

const struct report *const proc_reports[] = { &ranks_report,	  &open_at_edges_report,
					      &rank_waits_report, &ledger_report,
					      &py_unread_report,  NULL };
