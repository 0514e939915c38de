// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Decode side of the proc pseudo-family: metadata snapshots, lifecycle, loss markers. */
#include <stdio.h>
#include "proc.h"

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
	return 1;
}

static int decode_comm(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_comm *c = (const void *)rec;

	event__arg_strn(ev, "comm", c->comm, sizeof(c->comm));
	ev->name = ev->args[ev->nargs - 1].str;
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

const struct rec_decoder proc_decoders[] = {
	/* Strings and symbol names: the model keeps them; new-code records are kept for `info`. */
	{ BS_REC_STRING, sizeof(struct bs_string), "string", family__decode_meta },
	{ BS_REC_PROCESS, sizeof(struct bs_process), "process", decode_process, &lifecycle_style },
	{ BS_REC_THREAD, sizeof(struct bs_thread), "thread", decode_thread, &lifecycle_style },
	{ BS_REC_LOSS, sizeof(struct bs_loss), "loss", decode_loss, &loss_style },
	{ BS_REC_FORK, sizeof(struct bs_fork), "fork", decode_fork, &lifecycle_style },
	{ BS_REC_EXEC, sizeof(struct bs_exec), "exec", decode_exec, &lifecycle_style },
	{ BS_REC_EXIT, sizeof(struct bs_exit), "exit", decode_exit, &lifecycle_style },
	{ BS_REC_COMM, sizeof(struct bs_comm), "comm", decode_comm, &lifecycle_style },
	{ BS_REC_SYMBOL, sizeof(struct bs_symbol), "symbol", family__decode_meta },
	{ BS_REC_STACK, sizeof(struct bs_stack), "stack", family__decode_meta },
	{ BS_REC_STACK_REF, sizeof(struct bs_stack_ref), "stack_ref", family__decode_meta },
	{ BS_REC_MAP_EXEC, sizeof(struct bs_map_exec), "new_code", family__decode_meta },
	{ 0 },
};

const struct report *const proc_reports[] = { NULL };
