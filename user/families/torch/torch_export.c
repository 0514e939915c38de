// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The torch family in the exports (export_model.h). Its ops are slices on their threads; in
 * the profiler's view as torch.profiler (Kineto) writes them: "X" of cat "cpu_op"
 * ("user_annotation" for record_function scopes), with dump's args plus Kineto's "External id",
 * "Sequence number", "Fwd thread id", with --torch-shapes "Input Dims" and "Concrete Inputs"
 * (and bpfsight's "flops": torch.profiler counts them in Python, its trace has none), with
 * --stacks=torch "Call stack". The op's cuda calls nest inside it on the same thread, and
 * their flows lead to its kernels (the gpu family's), so HTA, chrome://tracing and Perfetto go
 * op -> launch -> kernel. Steps are drawn by their style.
 *
 * The External id is made from what identifies the op in the file (its thread and start,
 * gpu_flow_id's hash), so any reader of the trace gets the same one. GPU work carries the id
 * of the innermost op open at its launching call (ex_op_at: this family's op_at), as Kineto's
 * kernels do: the ops read so far are kept per thread for WINDOW_NS of trace time, in the
 * profiler's view only. An op's record is written when it ends, after the calls inside it: a
 * launch's own event is drawn before its op is known and carries no External id (its kernels,
 * read later, do); a GPU record read before its op's neither (docs/TORCH.md).
 *
 * Tables (nsys has none for PyTorch's ops):
 *   BPFSIGHT_TORCH_OPS    one row per op: start, end, thread, name (-> StringIds), scope (dump's
 *                         text), sequence number and forward thread (NULL without one), torch's
 *                         thread id, depth, input shapes and concrete inputs (NULL without
 *                         --torch-shapes), callchainId (its stack with --stacks=torch:
 *                         BPFSIGHT_CALLCHAINS)
 *   BPFSIGHT_TORCH_STEPS  one row per training step: start, end, thread, step, scope name
 * Kernels join an op by time on their launching thread (CUPTI_ACTIVITY_KIND_KERNEL's
 * globalTid and its launching call's start), as torch_op_kernels does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "export_model.h"
#include "gpu_decode.h"
#include "hmap.h"
#include "torch.h"
#include "torch_flops.h"
#include "torch_input.h"

static const struct ex_column ops_cols[] = {
	EXC_INT_NN("start"),
	EXC_INT_NN("end"),
	EXC_INT_NN("globalTid"),
	EXC_INT_NN("nameId"),
	EXC_TEXT_NN("scope"),
	EXC_INT("seq"),
	EXC_INT("fwdThread"),
	EXC_INT_NN("torchThread"),
	EXC_INT_NN("depth"),
	EXC_TEXT("shapes"),
	EXC_TEXT("concrete"),
	EXC_INT("callchainId"),
	{ 0 },
};
static const struct ex_index ops_idx[] = {
	{ "start", "start" },
	{ "globalTid", "globalTid" },
	{ 0 },
};
static const struct ex_table torch_ops = { "BPFSIGHT_TORCH_OPS", ops_cols, .indexes = ops_idx };

static const struct ex_column steps_cols[] = {
	EXC_INT_NN("start"), EXC_INT_NN("end"),		EXC_INT_NN("globalTid"),
	EXC_INT_NN("step"),  EXC_INT_NN("scopeNameId"), { 0 },
};
static const struct ex_table torch_steps = { "BPFSIGHT_TORCH_STEPS", steps_cols };

static const struct ex_table *const torch_tables[] = { &torch_ops, &torch_steps, NULL };

#define WINDOW_NS (10 * 1000000000ull) /* as the launch join keeps calls (JOIN_KEEP_NS) */

struct span {
	__u64 start, end;
};

/* One thread's ops in the order they ended (their records' order), the oldest at HEAD. */
struct window {
	struct span *v;
	size_t head, n, cap;
};

struct torch_windows {
	struct hmap *threads; /* {pid, tid} -> struct window * */
};

static int torch_open(struct ex_sink *s, void **st)
{
	struct torch_windows *t;

	if (!ex_wants(s, EX_PROFILER))
		return 0;
	t = calloc(1, sizeof(*t));

	if (!t || !(t->threads = hmap__new(sizeof(struct window *)))) {
		free(t);
		return -ENOMEM;
	}
	*st = t;
	return 0;
}

static void torch_free(void *st)
{
	struct torch_windows *t = st;
	struct window **w;
	size_t it = 0;

	if (!t)
		return;
	while ((w = hmap__next(t->threads, &it, NULL))) {
		free((*w)->v);
		free(*w);
	}
	hmap__free(t->threads);
	free(t);
}

/* Keep OP of its thread: what ended WINDOW_NS before it goes. */
static int window_add(struct window *w, struct span op)
{
	while (w->head < w->n && w->v[w->head].end + WINDOW_NS < op.end)
		w->head++;
	if (w->n == w->cap) {
		if (w->head) { /* slide down what is kept */
			memmove(w->v, w->v + w->head, (w->n - w->head) * sizeof(*w->v));
			w->n -= w->head;
			w->head = 0;
		}
		if (array__grow((void **)&w->v, w->n, &w->cap, sizeof(*w->v)))
			return -ENOMEM;
	}
	w->v[w->n++] = op;
	return 0;
}

static int torch_observe(struct ex_sink *s, void *st, const struct bs_hdr *rec)
{
	const struct bs_torch_op *r = (const void *)rec;
	struct torch_windows *t = st;
	struct window **w;

	if (!t || !torch_op__valid(rec))
		return 0;
	w = hmap__get(t->threads, (struct hkey){ rec->pid, rec->tid }, 1);
	if (!w || (!*w && !(*w = calloc(1, sizeof(**w)))))
		return -ENOMEM;
	return window_add(*w, (struct span){ rec->ts, rec->ts + r->dur });
}

/*
 * The innermost op open at TS: ops end in order, so the first one kept that ends at TS or
 * later and began before it is the innermost (an op around it ends after it).
 */
static __u64 torch_op_at(void *st, __u32 pid, __u32 tid, __u64 ts)
{
	struct torch_windows *t = st;
	struct window **w = t ? hmap__get(t->threads, (struct hkey){ pid, tid }, 0) : NULL;
	size_t lo, hi;

	if (!w)
		return 0;
	lo = (*w)->head;
	hi = (*w)->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((*w)->v[mid].end < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < (*w)->n; lo++)
		if ((*w)->v[lo].start <= ts)
			return gpu_flow_id(pid, tid, (*w)->v[lo].start);
	return 0;
}

/* Kineto's "Input Dims" is a JSON array: the shapes' text when it is one of numbers. */
static int json_dims(const char *s)
{
	return s && s[0] == '[' && strspn(s, "[]0123456789, ") == strlen(s);
}

/*
 * Kineto's "Concrete Inputs", a JSON array of strings: the text when it is one, of strings
 * without escapes (what the shim writes: numbers, lists of them, True, False).
 */
static int json_strings(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n < 2 || s[0] != '[' || s[n - 1] != ']')
		return 0;
	for (const char *p = s + 1; p < s + n - 1;) {
		const char *q;

		p += strspn(p, ", ");
		if (p >= s + n - 1)
			break;
		if (*p != '"' || !(q = strchr(p + 1, '"')) || q >= s + n - 1)
			return 0;
		for (const char *k = p + 1; k < q; k++)
			if (*k == '\\' || (unsigned char)*k < 0x20)
				return 0;
		p = q + 1;
	}
	return 1;
}

/* An op in the profiler's view: Kineto's category, its keys. */
static int torch_op_event(struct ex_sink *s, const struct bs_hdr *rec, const struct event *ev)
{
	const struct bs_torch_op *r = (const void *)rec;
	const char *shapes = r->shapes_id ? trace_model__string(s->model, r->shapes_id) : NULL;
	const char *concrete =
		r->concrete_id ? trace_model__string(s->model, r->concrete_id) : NULL;
	struct ex_value extra[5];
	struct ex_profiler prof = {
		.cat = r->scope == BS_TORCH_SCOPE_USER_SCOPE ? "user_annotation" : "cpu_op",
		.args = ev,
		.extra = extra,
		.op_id = gpu_flow_id(rec->pid, rec->tid, rec->ts),
	};
	__u64 flops = torch_flops__of(ev->name, shapes, concrete);
	__u32 n = 0;

	if (r->seq >= 0) {
		extra[n++] = (struct ex_value){ "Sequence number", EX_INT, .i = r->seq };
		extra[n++] = (struct ex_value){ "Fwd thread id", EX_UINT, .u = r->fwd_tid };
	}
	if (json_dims(shapes))
		extra[n++] = (struct ex_value){ "Input Dims", EX_JSON, .s = shapes };
	if (json_strings(concrete))
		extra[n++] = (struct ex_value){ "Concrete Inputs", EX_JSON, .s = concrete };
	if (flops)
		extra[n++] = (struct ex_value){ "flops", EX_UINT, .u = flops };
	prof.nextra = n;
	return ex_event(
		s, &(struct ex_event){ .rec = rec, .ev = ev, .shape = EX_SLICE, .prof = &prof });
}

static int torch_rows(struct ex_sink *s, const struct bs_hdr *rec, const struct event *ev)
{
	const struct bs_torch_op *r = (const void *)rec;
	const struct bs_torch_step *p = (const void *)rec;
	__s64 gtid = ex_gtid(rec->pid, rec->tid);

	if (torch_op__valid(rec))
		return ex_row(s, &torch_ops, EX_ROW_ADD,
			      (struct ex_value[]){ EX_V_INT(rec->ts), EX_V_INT(rec->ts + r->dur),
						   EX_V_INT(gtid), EX_V_STRING(ev->name),
						   EX_V_TEXT(torch_scope_name(r->scope)),
						   ex_v_arg(ev, "seq"), ex_v_arg(ev, "fwd_thread"),
						   EX_V_UINT(r->torch_tid), EX_V_INT(r->depth),
						   ex_v_arg(ev, "shapes"), ex_v_arg(ev, "concrete"),
						   EX_V_STACK(ev->stack) },
			      NULL);
	if (rec->type == BS_REC_TORCH_STEP)
		return ex_row(s, &torch_steps, EX_ROW_ADD,
			      (struct ex_value[]){ EX_V_INT(rec->ts), EX_V_INT(rec->ts + p->dur),
						   EX_V_INT(gtid), EX_V_UINT(p->step),
						   EX_V_STRING(event__arg(ev, "scope")->str) },
			      NULL);
	return 0;
}

static int torch_record(struct ex_sink *s, void *st, const struct bs_hdr *rec,
			const struct event *ev)
{
	int err;

	if (!ev)
		return 0;
	err = ex_wants(s, EX_TABLES) ? torch_rows(s, rec, ev) : 0;
	if (err || !ex_wants(s, EX_PROFILER) || !torch_op__valid(rec))
		return err; /* steps, and the ops of bpfsight's own view: by their style */
	err = torch_op_event(s, rec, ev);
	return err ? err : 1;
}

/* The rows (EX_ROWS): what the input-bound rule reads of a stack (torch_input_from.c). */
static const struct ex_rows torch_ex_rows = {
	.stack = torch_input__stack_keys,
};

const struct family_export torch_export = {
	.tables = torch_tables,
	.open = torch_open,
	.free = torch_free,
	.observe = torch_observe,
	.record = torch_record,
	.op_at = torch_op_at,
	.rows = &torch_ex_rows,
};
