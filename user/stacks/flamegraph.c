// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Flame graphs: the stacks merged into a tree (flamegraph.h); drawn by flamegraph_svg.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "flamegraph.h"
#include "flamegraph_tree.h"
#include "records.h"
#include "stack_format.h"
#include "trace_model.h"

struct flamegraph *flamegraph__new(const char *unit)
{
	struct flamegraph *g = calloc(1, sizeof(*g));

	if (g)
		g->unit = unit;
	return g;
}

static void node_free(struct node *n)
{
	struct node *c, *next;

	for (c = n->child; c; c = next) {
		next = c->next;
		node_free(c);
		free(c->name);
		free(c);
	}
}

void flamegraph__free(struct flamegraph *g)
{
	if (!g)
		return;
	node_free(&g->root);
	free(g);
}

/* N's child NAME, made when new; children are kept sorted by name (flamegraph.pl's order). */
static struct node *child_of(struct node *n, const char *name, int kind)
{
	struct node **at = &n->child, *c;

	for (; *at && strcmp((*at)->name, name) < 0; at = &(*at)->next)
		;
	for (c = *at; c && !strcmp(c->name, name); c = c->next)
		if (c->kind == kind)
			return c;
	c = calloc(1, sizeof(*c));
	if (!c || !(c->name = strdup(name))) {
		free(c);
		return NULL;
	}
	c->kind = kind;
	c->next = *at;
	*at = c;
	return c;
}

/* A frame as the graph names it: as the folded export does. */
static const char *frame_name(const struct bs_frame *f, const struct trace_model *m, char *buf,
			      size_t len)
{
	char fn[512];
	const char *func = stack_frame__func(f, m, fn, sizeof(fn));

	if (f->kind == BS_FRAME_PYTHON)
		snprintf(buf, len, "%s (%s:%u)", func, stack_frame__file(f, m), f->line);
	else
		snprintf(buf, len, "%s", func);
	return buf;
}

/* Entry AT of a stack's path as drawn: a marker first when the stack is cut, its frames root
 * first, "[kernel]" last when the sample was in the kernel. */
static struct node *path_child(struct node *n, const struct trace_stack *s, int marked, int at,
			       const struct trace_model *m)
{
	int nframes = s ? (int)s->nframes : 0;
	char buf[1024];

	if (at < marked)
		return child_of(n, !s || !s->nframes ? "[no user stack]" : "[truncated]",
				BS_FRAME_CUT);
	at -= marked;
	if (at < nframes) {
		const struct bs_frame *f = &s->frames[nframes - 1 - at];

		return child_of(n, frame_name(f, m, buf, sizeof(buf)), f->kind);
	}
	return child_of(n, "[kernel]", STACK_FRAME_KERNEL);
}

int flamegraph__add(struct flamegraph *g, const struct trace_stack *s, int kernel, __u64 count,
		    const struct trace_model *m)
{
	int marked = !s || !s->nframes || (s->flags & BS_STACK_TRUNCATED);
	int depth = marked + (s ? (int)s->nframes : 0) + !!kernel;
	int fold = depth > FOLD_DEPTH ? depth - FOLD_DEPTH + 1 : 0;
	struct node *n = &g->root;

	n->count += count;
	for (int at = 0; at < depth && n; at++) {
		if (fold && at == FOLD_OUTER) {
			n = child_of(n, "[frames folded]", FRAME_FOLDED);
			if (!n)
				break;
			if (!n->fold_min || n->fold_min > (__u32)fold)
				n->fold_min = fold;
			if (n->fold_max < (__u32)fold)
				n->fold_max = fold;
			g->folded = 1;
			at += fold - 1;
		} else {
			n = path_child(n, s, marked, at, m);
		}
		if (n)
			n->count += count;
	}
	depth -= fold ? fold - 1 : 0;
	if (depth > g->depth)
		g->depth = depth;
	return n ? 0 : -ENOMEM;
}

__u64 flamegraph__samples(const struct flamegraph *g)
{
	return g->root.count;
}
