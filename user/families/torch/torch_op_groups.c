// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* torch_op_sum's rows, grouped as key_averages() groups them (torch_op_groups.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "frame_sum.h"
#include "hmap.h"
#include "torch.h"
#include "torch_op_groups.h"
#include "torch_ops.h"

/* torch.profiler's _filter_stack_entry: frames of (file part, function part) left out. */
static const char *const filtered[][2] = {
	{ "autograd/__init__", "_make_grads" },
	{ "autograd/__init__", "backward" },
	{ "torch/tensor", "backward" },
	{ "_internal/common_utils", "prof_callable" },
	{ "_internal/common_utils", "prof_func_call" },
	{ "_internal/common_utils", "prof_meth_call" },
};

static int left_out(const char *entry)
{
	for (size_t i = 0; i < sizeof(filtered) / sizeof(filtered[0]); i++)
		if (strstr(entry, filtered[i][0]) && strstr(entry, filtered[i][1]))
			return 1;
	return 0;
}

/* The op whose stack a backward op's tree has: its backward scope's forward op's. */
struct fwd_key_val {
	const struct trace_stack *stack;
	int set;
};

static const struct torch_op_row *backward_of(const struct torch_ops *t,
					      const struct torch_op_row *o)
{
	while (o && o->scope != BS_TORCH_SCOPE_BACKWARD_FUNCTION)
		o = o->parent >= 0 ? &t->ops[o->parent] : NULL;
	return o;
}

/* Each op's stack as torch.profiler gives it: the backward ones their forward op's. */
static int op_stacks(const struct torch_ops *t, const struct trace_stack **out)
{
	struct hmap *fwd = hmap__new(sizeof(struct fwd_key_val));
	struct fwd_key_val *v;

	if (!fwd)
		return -ENOMEM;
	/* the first op of each (process, sequence number, torch thread) outside backward */
	for (size_t i = 0; i < t->nops; i++) {
		const struct torch_op_row *o = &t->ops[i];

		out[i] = o->stack;
		if (o->merged || backward_of(t, o))
			continue;
		v = hmap__get(fwd, (struct hkey){ ((__u64)o->pid << 32) ^ o->torch_tid, o->seq },
			      1);
		if (!v) {
			hmap__free(fwd);
			return -ENOMEM;
		}
		if (!v->set) {
			v->stack = o->stack;
			v->set = 1;
		}
	}
	for (size_t i = 0; i < t->nops; i++) {
		const struct torch_op_row *b = backward_of(t, &t->ops[i]);

		if (!b)
			continue;
		/* no sequence number (AccumulateGrad): torch's forward thread is 0, no op's */
		v = b->seq < 0
			    ? NULL
			    : hmap__get(fwd,
					(struct hkey){ ((__u64)b->pid << 32) ^ b->fwd_tid, b->seq },
					0);
		out[i] = v ? v->stack : NULL;
	}
	hmap__free(fwd);
	return 0;
}

struct keyed {
	const struct torch_op_row *op;
	const char *by;
};

static int keyed_cmp(const void *x, const void *y)
{
	const struct keyed *a = x, *b = y;
	int c;

	if (a->op->pid != b->op->pid)
		return a->op->pid < b->op->pid ? -1 : 1;
	if ((c = strcmp(a->op->name, b->op->name)))
		return c;
	if (a->op->scope != b->op->scope)
		return a->op->scope < b->op->scope ? -1 : 1;
	return strcmp(a->by ? a->by : "", b->by ? b->by : "");
}

static int group_cmp(const void *x, const void *y)
{
	const struct torch_op_group *a = x, *b = y;
	int c;

	if (a->cpu_total != b->cpu_total)
		return a->cpu_total < b->cpu_total ? 1 : -1;
	if ((c = strcmp(a->name, b->name)))
		return c;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return strcmp(a->by ? a->by : "", b->by ? b->by : "");
}

static void add_op(struct torch_op_group *r, const struct torch_op_row *o)
{
	r->count++;
	r->cpu_total += o->dur;
	if (o->dur > r->cpu_max)
		r->cpu_max = o->dur;
	r->cpu_self += o->self_ns;
	r->gpu_self += o->gpu_self_ns;
	r->gpu_total += o->gpu_total_ns;
	r->gpu_ops += o->gpu_ops;
	r->flops += o->flops;
	r->cpu_mem += o->cpu_mem;
	r->self_cpu_mem += o->self_cpu_mem;
	r->cuda_mem += o->cuda_mem;
	r->self_cuda_mem += o->self_cuda_mem;
}

/* The stack texts of every op into K[].by (shared per stack: the hmap keeps each once). */
static int stack_keys(struct torch_op_groups *g, const struct torch_ops *t,
		      const struct trace_model *m, unsigned n, struct keyed *k, size_t nk)
{
	const struct trace_stack **stacks = calloc(t->nops + 1, sizeof(*stacks));
	struct hmap *texts = hmap__new(sizeof(char *));
	size_t cap = 0;
	int err = stacks && texts ? op_stacks(t, stacks) : -ENOMEM;

	for (size_t i = 0; !err && i < nk; i++) {
		const struct trace_stack *s = stacks[k[i].op - t->ops];
		char **text;

		if (!s)
			continue;
		text = hmap__get(texts, (struct hkey){ s->id, 0 }, 1);
		if (!text) {
			err = -ENOMEM;
			break;
		}
		if (!*text) {
			if (!(*text = frame_sum__stack_text(s, m, n, left_out)) ||
			    array__grow((void **)&g->texts, g->ntexts, &cap, sizeof(*g->texts))) {
				free(*text);
				*text = NULL;
				err = -ENOMEM;
				break;
			}
			g->texts[g->ntexts++] = *text;
		}
		k[i].by = *text;
	}
	hmap__free(texts);
	free(stacks);
	return err;
}

int torch_op_groups__make(struct torch_op_groups *g, const struct torch_ops *t,
			  const struct trace_model *m, enum torch_group_by by, unsigned n)
{
	struct keyed *k = malloc((t->nops + 1) * sizeof(*k));
	size_t nk = 0;
	int err = 0;

	memset(g, 0, sizeof(*g));
	g->v = calloc(t->nops + 1, sizeof(*g->v));
	if (!k || !g->v) {
		free(k);
		return -ENOMEM;
	}
	/* by shape: an op without inputs has none recorded, "[]" as torch.profiler shows it */
	for (size_t i = 0; i < t->nops; i++)
		if (!t->ops[i].merged)
			k[nk++] = (struct keyed){ &t->ops[i], by != TORCH_GROUP_SHAPE ? NULL
							      : t->ops[i].shapes ? t->ops[i].shapes
										 : "[]" };
	if (by == TORCH_GROUP_STACK)
		err = stack_keys(g, t, m, n, k, nk);
	if (!err && nk)
		qsort(k, nk, sizeof(*k), keyed_cmp);
	for (size_t i = 0; !err && i < nk; i++) {
		struct torch_op_group *r;

		if (!g->n || keyed_cmp(&k[i - 1], &k[i])) {
			r = &g->v[g->n++];
			*r = (struct torch_op_group){ .pid = k[i].op->pid,
						      .name = k[i].op->name,
						      .scope = torch_scope_name(k[i].op->scope),
						      .by = by == TORCH_GROUP_NAME ? NULL
							    : k[i].by		   ? k[i].by
										   : "" };
		}
		add_op(&g->v[g->n - 1], k[i].op);
	}
	free(k);
	if (!err && g->n)
		qsort(g->v, g->n, sizeof(*g->v), group_cmp);
	return err;
}

void torch_op_groups__free(struct torch_op_groups *g)
{
	for (size_t i = 0; i < g->ntexts; i++)
		free(g->texts[i]);
	free(g->texts);
	free(g->v);
	memset(g, 0, sizeof(*g));
}
