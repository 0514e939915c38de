// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Ops and the GPU work they launched (see torch_ops.h). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_decode.h"
#include "gpu_records.h"
#include "torch.h"
#include "torch_flops.h"
#include "torch_op_mem.h"
#include "torch_ops.h"
#include "array.h"

struct torch_ops *torch_ops__new(int with_mem)
{
	struct torch_ops *t = calloc(1, sizeof(struct torch_ops));

	if (t && with_mem && !(t->mem = torch_op_mem__new())) {
		free(t);
		return NULL;
	}
	return t;
}

void torch_ops__free(struct torch_ops *t)
{
	if (!t)
		return;
	free(t->ops);
	free(t->gpu);
	torch_op_mem__free(t->mem);
	free(t);
}

int torch_ops__add(struct torch_ops *t, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_torch_op *r = (const void *)rec;
	struct torch_op_row *o;
	const char *name;
	struct gpu_op op;
	int err;

	if (t->mem && (err = torch_op_mem__add(t->mem, rec)))
		return err;
	if (torch_op__valid(rec)) {
		if (array__grow((void **)&t->ops, t->nops, &t->cap_ops, sizeof(*t->ops)))
			return -ENOMEM;
		name = r->name_id ? trace_model__string(m, r->name_id) : NULL;
		o = &t->ops[t->nops++];
		*o = (struct torch_op_row){ .pid = rec->pid,
					    .tid = rec->tid,
					    .ts = rec->ts,
					    .dur = r->dur,
					    .name = name ? name : "",
					    .stack = trace_model__event_stack(m, rec),
					    .seq = r->seq,
					    .torch_tid = r->torch_tid,
					    .fwd_tid = r->fwd_tid,
					    .scope = r->scope };
		if (r->shapes_id)
			o->shapes = trace_model__string(m, r->shapes_id);
		if (rec->size >= offsetof(struct bs_torch_op, concrete_id) + 4 && r->concrete_id)
			o->concrete = trace_model__string(m, r->concrete_id);
		o->flops = torch_flops__of(o->name, o->shapes, o->concrete);
		return 0;
	}
	/* Only operations whose launching call is known have an op. */
	if (!gpu_op__read(rec, &op) || !op.call_ts ||
	    !(op.flags & (BS_GPU_CALL_CUDA | BS_GPU_CALL_API)))
		return 0;
	if (array__grow((void **)&t->gpu, t->ngpu, &t->cap_gpu, sizeof(*t->gpu)))
		return -ENOMEM;
	t->gpu[t->ngpu++] = (struct torch_gpu_row){ op.pid,  op.tid, op.call_ts,
						    op.ts,   op.dur, gpu_op__name(&op, m),
						    .op = -1 };
	return 0;
}

static int thread_cmp(__u32 pa, __u32 ta, __u32 pb, __u32 tb)
{
	if (pa != pb)
		return pa < pb ? -1 : 1;
	return ta < tb ? -1 : ta > tb;
}

static int op_cmp(const void *x, const void *y)
{
	const struct torch_op_row *a = x, *b = y;
	int c = thread_cmp(a->pid, a->tid, b->pid, b->tid);

	if (c)
		return c;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return (a->dur < b->dur) - (a->dur > b->dur); /* the outer one first */
}

static int gpu_cmp(const void *x, const void *y)
{
	const struct torch_gpu_row *a = x, *b = y;
	int c = thread_cmp(a->pid, a->tid, b->pid, b->tid);

	return c ? c : (a->call_ts > b->call_ts) - (a->call_ts < b->call_ts);
}

static __u64 end_of(const struct torch_op_row *o)
{
	return o->ts + o->dur;
}

/* The ops open at each point of one thread: indices into t->ops. */
struct open_stack {
	size_t *v, n, cap;
};

/* Let go of the ops that end before END. */
static void pop_ended(struct torch_ops *t, struct open_stack *s, __u64 end)
{
	while (s->n && end_of(&t->ops[s->v[s->n - 1]]) < end)
		s->n--;
}

/*
 * Mark the ops of one thread, [o, oe), that key_averages() merges into their parent: the only
 * child of an op of the same name. A chain of them (div_ in div_ in div_) all goes into the
 * first, as _remove_dup_nodes' passes merge it. KIDS: a counter per op, zeroed.
 */
static int mark_merged(struct torch_ops *t, struct open_stack *s, size_t o, size_t oe, __u32 *kids)
{
	s->n = 0;
	for (size_t i = o; i < oe; i++) {
		pop_ended(t, s, end_of(&t->ops[i]));
		t->ops[i].parent = s->n ? (long)s->v[s->n - 1] : -1;
		if (s->n)
			kids[s->v[s->n - 1] - o]++;
		if (array__grow((void **)&s->v, s->n, &s->cap, sizeof(*s->v)))
			return -ENOMEM;
		s->v[s->n++] = i;
	}
	for (size_t i = o; i < oe; i++) {
		long p = t->ops[i].parent;

		t->ops[i].merged =
			p >= 0 && kids[p - (long)o] == 1 && !strcmp(t->ops[p].name, t->ops[i].name);
	}
	return 0;
}

/*
 * One thread: ops [o, oe) and GPU operations [g, ge), both sorted by time. A merged op is
 * never on the stack: its children and GPU work are the op it is merged into's.
 */
static int join_thread(struct torch_ops *t, struct open_stack *s, size_t o, size_t oe, size_t g,
		       size_t ge)
{
	s->n = 0;
	while (o < oe || g < ge) {
		if (o < oe && (g >= ge || t->ops[o].ts <= t->gpu[g].call_ts)) {
			pop_ended(t, s, end_of(&t->ops[o]));
			if (t->ops[o].merged) {
				o++;
				continue;
			}
			if (s->n) { /* the parent's children, for now */
				struct torch_op_row *p = &t->ops[s->v[s->n - 1]];

				p->self_ns += t->ops[o].dur;
				p->self_cpu_mem += t->ops[o].cpu_mem;
				p->self_cuda_mem += t->ops[o].cuda_mem;
			}
			if (array__grow((void **)&s->v, s->n, &s->cap, sizeof(*s->v)))
				return -ENOMEM;
			s->v[s->n++] = o++;
			continue;
		}
		pop_ended(t, s, t->gpu[g].call_ts);
		if (s->n) {
			struct torch_op_row *in = &t->ops[s->v[s->n - 1]];

			t->gpu[g].op = (long)s->v[s->n - 1];
			in->gpu_self_ns += t->gpu[g].dur;
			in->gpu_ops++;
			for (size_t k = 0; k < s->n; k++)
				t->ops[s->v[k]].gpu_total_ns += t->gpu[g].dur;
		}
		g++;
	}
	return 0;
}

int torch_ops__join(struct torch_ops *t)
{
	struct open_stack s = { 0 };
	size_t o = 0, g = 0;
	__u32 *kids = calloc(t->nops + 1, sizeof(*kids));
	int err = kids ? 0 : -ENOMEM;

	if (t->nops)
		qsort(t->ops, t->nops, sizeof(*t->ops), op_cmp);
	if (t->ngpu)
		qsort(t->gpu, t->ngpu, sizeof(*t->gpu), gpu_cmp);
	for (size_t i = 0; i < t->nops; i++) {
		struct torch_op_row *r = &t->ops[i];

		r->self_ns = r->gpu_self_ns = r->gpu_total_ns = 0;
		r->merged = 0;
		r->cpu_mem = r->cuda_mem = r->self_cpu_mem = r->self_cuda_mem = 0;
	}
	if (!err && t->mem)
		err = torch_op_mem__join(t->mem, t->ops, t->nops);
	while (!err && (o < t->nops || g < t->ngpu)) {
		/* The next thread, in (pid, tid) order, with its ops and GPU work. */
		__u32 pid, tid;
		size_t oe = o, ge = g;

		if (o < t->nops &&
		    (g >= t->ngpu ||
		     thread_cmp(t->ops[o].pid, t->ops[o].tid, t->gpu[g].pid, t->gpu[g].tid) <= 0)) {
			pid = t->ops[o].pid;
			tid = t->ops[o].tid;
		} else {
			pid = t->gpu[g].pid;
			tid = t->gpu[g].tid;
		}
		while (oe < t->nops && t->ops[oe].pid == pid && t->ops[oe].tid == tid)
			oe++;
		while (ge < t->ngpu && t->gpu[ge].pid == pid && t->gpu[ge].tid == tid)
			ge++;
		memset(kids, 0, (oe - o) * sizeof(*kids));
		err = mark_merged(t, &s, o, oe, kids);
		if (!err)
			err = join_thread(t, &s, o, oe, g, ge);
		o = oe;
		g = ge;
	}
	free(s.v);
	free(kids);
	/* self: the duration less the children's (a child that sticks out counts in full) */
	for (size_t i = 0; i < t->nops; i++) {
		__u64 child = t->ops[i].self_ns;

		if (t->ops[i].merged) {
			t->ops[i].self_ns = 0;
			t->ops[i].self_cpu_mem = t->ops[i].self_cuda_mem = 0;
			continue;
		}
		t->ops[i].self_ns = child < t->ops[i].dur ? t->ops[i].dur - child : 0;
		/* memory: torch.profiler's self may be negative (frees) */
		t->ops[i].self_cpu_mem = t->ops[i].cpu_mem - t->ops[i].self_cpu_mem;
		t->ops[i].self_cuda_mem = t->ops[i].cuda_mem - t->ops[i].self_cuda_mem;
	}
	return err;
}
