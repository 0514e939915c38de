// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Stacks in the Chrome JSON export, as the tools that read it expect them:
 *   - an event's stack as torch.profiler's with_stack writes it (Kineto's "Call stack" key of
 *     an op's args): its frames innermost first, "FILE(LINE): FUNC" each, joined by ';' in one
 *     string (stack_frame__line; native frames "MODULE(0xADDR): FUNC"). Perfetto's JSON
 *     importer and HTA show it with the event's other args. A GIL wait's holder stack is
 *     "Holder call stack", alike.
 *   - a CPU sample (export_style.sample) also names its stack by "sf", a node of the trace's
 *     "stackFrames" dictionary (Chrome's Trace Event Format: {"name", "category", "parent"}
 *     per node, category = the module or source file), which chrome://tracing reads.
 *     "stackFrames" follows "traceEvents", written at the end: nodes are made as samples come.
 * Memory: a node per distinct (parent node, frame) and a frame index, never per event.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "export_chrome.h"
#include "stack_format.h"
#include "trace_model.h"
#include "hmap.h"

struct chrome_stacks {
	struct hmap *frame_ids; /* {frame key} -> u64 frame index + 1 */
	struct hmap *nodes;	/* {parent node, frame index} -> u64 node id (1-based) */
	struct sf_node {
		__u64 parent; /* 0: a root */
		const struct bs_frame *frame;
	} * v;
	__u64 n;
	size_t cap;
	char *text; /* a "Call stack" string being built */
	size_t len, size;
};

int chrome_stacks__new(struct chrome *c)
{
	c->stacks = calloc(1, sizeof(*c->stacks));
	if (!c->stacks)
		return -ENOMEM;
	c->stacks->frame_ids = hmap__new(sizeof(__u64));
	c->stacks->nodes = hmap__new(sizeof(__u64));
	return c->stacks->frame_ids && c->stacks->nodes ? 0 : -ENOMEM;
}

void chrome_stacks__free(struct chrome *c)
{
	if (!c->stacks)
		return;
	hmap__free(c->stacks->frame_ids);
	hmap__free(c->stacks->nodes);
	free(c->stacks->v);
	free(c->stacks->text);
	free(c->stacks);
	c->stacks = NULL;
}

static int text_add(struct chrome_stacks *st, const char *s)
{
	size_t n = strlen(s);

	if (st->len + n + 1 > st->size) {
		size_t size = (st->len + n + 1) * 2;
		char *t = realloc(st->text, size);

		if (!t)
			return -ENOMEM;
		st->text = t;
		st->size = size;
	}
	memcpy(st->text + st->len, s, n + 1);
	st->len += n;
	return 0;
}

/* "KEY":"FRAME;FRAME;..." for S (Kineto's "Call stack"), after a comma unless FIRST. */
static int chrome_stack_key(struct chrome *c, int first, const char *key,
			    const struct trace_stack *s, const struct trace_model *m)
{
	struct chrome_stacks *st = c->stacks;
	char buf[1024];
	int err = 0;

	st->len = 0;
	err = text_add(st, "");
	for (__u32 i = 0; !err && i < s->nframes; i++) {
		if (i)
			err = text_add(st, ";");
		if (!err)
			err = text_add(st, stack_frame__line(&s->frames[i], m, buf, sizeof(buf)));
	}
	if (!err && (s->flags & BS_STACK_TRUNCATED))
		err = text_add(st, s->nframes ? ";[truncated]" : "[truncated]");
	if (err)
		return err;
	if (!first)
		fputc(',', c->f);
	chrome_str(c->f, key);
	fputc(':', c->f);
	chrome_str(c->f, st->text);
	return 0;
}

int chrome_stack_args(struct chrome *c, const struct event *ev, const struct trace_model *m,
		      int nonempty)
{
	int err = 0;

	if (!m)
		return 0;
	if (ev->stack)
		err = chrome_stack_key(c, !nonempty, "Call stack", ev->stack, m);
	if (!err && ev->holder_stack)
		err = chrome_stack_key(c, !nonempty && !ev->stack, "Holder call stack",
				       ev->holder_stack, m);
	return err;
}

static struct hkey frame_key(const struct bs_frame *f)
{
	__u64 k[2];

	stack_frame__key(f, k);
	return (struct hkey){ k[0], k[1] };
}

/* The node of F under PARENT, made the first time. 0: no memory. */
static __u64 chrome_node(struct chrome_stacks *st, __u64 parent, const struct bs_frame *f)
{
	__u64 *fid = hmap__get(st->frame_ids, frame_key(f), 1), *node;

	if (!fid)
		return 0;
	if (!*fid)
		*fid = hmap__count(st->frame_ids);
	node = hmap__get(st->nodes, (struct hkey){ parent, *fid }, 1);
	if (!node)
		return 0;
	if (*node)
		return *node;
	if (array__grow((void **)&st->v, st->n, &st->cap, sizeof(*st->v)))
		return 0;
	st->v[st->n] = (struct sf_node){ parent, f };
	*node = ++st->n;
	return *node;
}

int chrome_sample_frame(struct chrome *c, const struct event *ev, __u64 *sf)
{
	struct chrome_stacks *st = c->stacks;
	const struct trace_stack *s = ev->stack;
	__u64 node = 0;

	*sf = 0;
	if (s && (s->flags & BS_STACK_TRUNCATED) &&
	    !(node = chrome_node(st, 0, &stack_frame_truncated)))
		return -ENOMEM;
	/* Root first: a node's parent is its caller. */
	for (__u32 i = s ? s->nframes : 0; i-- > 0;)
		if (!(node = chrome_node(st, node, &s->frames[i])))
			return -ENOMEM;
	if (ev->stack_in_kernel && !(node = chrome_node(st, node, &stack_frame_kernel)))
		return -ENOMEM;
	*sf = node;
	return 0;
}

void chrome_stack_frames(struct chrome *c, const struct trace_model *m)
{
	struct chrome_stacks *st = c->stacks;
	char buf[512];

	fputs("\"stackFrames\":{", c->f);
	for (__u64 i = 0; st && i < st->n; i++) {
		const struct bs_frame *f = st->v[i].frame;
		const char *file = f->kind == STACK_FRAME_KERNEL ? "[kernel.kallsyms]"
								 : stack_frame__file(f, m);

		fprintf(c->f, "%s\n\"%llu\":{\"name\":", i ? "," : "", (unsigned long long)i + 1);
		chrome_str(c->f, stack_frame__func(f, m, buf, sizeof(buf)));
		fputs(",\"category\":", c->f);
		chrome_str(c->f, *file ? file : "[unknown]");
		if (f->kind == BS_FRAME_PYTHON)
			fprintf(c->f, ",\"line\":%u", f->line);
		if (st->v[i].parent)
			fprintf(c->f, ",\"parent\":\"%llu\"", (unsigned long long)st->v[i].parent);
		fputc('}', c->f);
	}
	fputs("}", c->f);
}
