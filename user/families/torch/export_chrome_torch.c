// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The torch family's ops in the Chrome export as torch.profiler (Kineto) writes them: "ph":"X"
 * on the op's thread, cat "cpu_op" ("user_annotation" for record_function scopes and steps),
 * with dump's args plus Kineto's "External id", "Sequence number", "Fwd thread id", with
 * --torch-shapes "Input Dims" and "Concrete Inputs" (and bpfsight's "flops": torch.profiler
 * counts them in Python, its trace has none), with --stacks=torch "Call stack". The op's cuda calls nest inside it on the same thread, and
 * their "ac2g" flows lead to its kernels (export_chrome_gpu.c), so HTA, chrome://tracing and
 * Perfetto go op -> launch -> kernel.
 *
 * The External id is made from what identifies the op in the file (its thread and start,
 * gpu_flow_id's hash), so any reader of the trace gets the same one. GPU work carries the id
 * of the innermost op open at its launching call (export_chrome_gpu.c asks external_id), as
 * Kineto's kernels do: the ops read so far are kept per thread for WINDOW_NS of trace time.
 * An op's record is written when it ends, after the calls inside it: a launch's own event is
 * drawn before its op is known and carries no External id (its kernels, read later, do);
 * a GPU record read before its op's neither (docs/TORCH.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "export_chrome.h"
#include "gpu_decode.h"
#include "hmap.h"
#include "torch.h"
#include "torch_flops.h"

#define WINDOW_NS (10 * 1000000000ull) /* as the launch join keeps calls (JOIN_KEEP_NS) */

struct span {
	__u64 start, end;
};

/* One thread's ops in the order they ended (their records' order), the oldest at HEAD. */
struct window {
	struct span *v;
	size_t head, n, cap;
};

struct torch_chrome {
	struct hmap *threads; /* {pid, tid} -> struct window * */
};

static int torch_open(struct chrome *c, const struct trace_meta *meta, void **st)
{
	struct torch_chrome *t = calloc(1, sizeof(*t));

	if (!t || !(t->threads = hmap__new(sizeof(struct window *)))) {
		free(t);
		return -ENOMEM;
	}
	*st = t;
	return 0;
}

static void torch_free(void *st)
{
	struct torch_chrome *t = st;
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

static int torch_observe(struct chrome *c, void *st, const struct bs_hdr *rec,
			 const struct trace_model *m)
{
	const struct bs_torch_op *r = (const void *)rec;
	struct torch_chrome *t = st;
	struct window **w;

	if (!torch_op__valid(rec))
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
static __u64 torch_external_id(void *st, __u32 pid, __u32 tid, __u64 ts)
{
	struct torch_chrome *t = st;
	struct window **w = hmap__get(t->threads, (struct hkey){ pid, tid }, 0);
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

static int draw_op(struct chrome *c, const struct bs_hdr *rec, const struct event *ev,
		   const struct trace_model *m)
{
	const struct bs_torch_op *r = (const void *)rec;
	const char *shapes = r->shapes_id ? trace_model__string(m, r->shapes_id) : NULL;
	const char *concrete = r->concrete_id ? trace_model__string(m, r->concrete_id) : NULL;
	int nonempty, err;
	__u64 flops;

	flops = torch_flops__of(ev->name, shapes, concrete);
	chrome_complete(c, r->scope == BS_TORCH_SCOPE_USER_SCOPE ? "user_annotation" : "cpu_op",
			ev->name, ev->pid, ev->tid, ev->ts, ev->dur);
	nonempty = chrome_args_open(c, ev);
	if (nonempty < 0)
		return nonempty;
	fprintf(c->f, "%s\"External id\":%llu", nonempty ? "," : "",
		(unsigned long long)gpu_flow_id(rec->pid, rec->tid, rec->ts));
	if (r->seq >= 0)
		fprintf(c->f, ",\"Sequence number\":%lld,\"Fwd thread id\":%llu", (long long)r->seq,
			(unsigned long long)r->fwd_tid);
	if (json_dims(shapes))
		fprintf(c->f, ",\"Input Dims\":%s", shapes);
	if (json_strings(concrete))
		fprintf(c->f, ",\"Concrete Inputs\":%s", concrete);
	if (flops)
		fprintf(c->f, ",\"flops\":%llu", (unsigned long long)flops);
	err = chrome_stack_args(c, ev, m, 1); /* --stacks=torch: Kineto's "Call stack" */
	fputs("}}", c->f);
	return err ? err : 1;
}

static int torch_draw(struct chrome *c, void *st, const struct bs_hdr *rec, const struct event *ev,
		      const struct trace_model *m)
{
	if (!torch_op__valid(rec))
		return 0; /* steps: by their style */
	return draw_op(c, rec, ev, m);
}

const struct chrome_family torch_chrome = {
	.open = torch_open,
	.free = torch_free,
	.observe = torch_observe,
	.draw = torch_draw,
	.external_id = torch_external_id,
};
