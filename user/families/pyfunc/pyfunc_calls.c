// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The call pieces of a trace, nested per thread (pyfunc_calls.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "hmap.h"
#include "pyfunc_calls.h"

void *pyfunc_calls__new(void)
{
	return calloc(1, sizeof(struct pyfunc_calls));
}

static int add_piece(struct pyfunc_calls *c, const struct bs_hdr *rec)
{
	const struct bs_pyfunc_call *r = (const void *)rec;

	if (array__grow((void **)&c->v, c->n, &c->cap, sizeof(*c->v)))
		return -ENOMEM;
	c->v[c->n++] = (struct pyfunc_piece){ .pid = rec->pid,
					      .tid = rec->tid,
					      .ts = rec->ts,
					      .dur = r->dur,
					      .func_id = r->func_id,
					      .file_id = r->file_id,
					      .line = r->line,
					      .depth = r->depth,
					      .end = r->end,
					      .flags = r->flags };
	return 0;
}

void pyfunc_calls__add(void *vc, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct pyfunc_calls *c = vc;

	if (c->err)
		return;
	if (pyfunc_call__valid(rec))
		c->err = add_piece(c, rec);
}

int pyfunc_piece__same(const struct pyfunc_piece *a, const struct pyfunc_piece *b)
{
	return a->pid == b->pid && a->func_id == b->func_id && a->file_id == b->file_id &&
	       a->line == b->line;
}

#define CMP(x, y) ((x) < (y) ? -1 : (x) > (y))

static int by_start(const void *x, const void *y)
{
	const struct pyfunc_piece *a = x, *b = y;

	if (a->pid != b->pid)
		return CMP(a->pid, b->pid);
	if (a->tid != b->tid)
		return CMP(a->tid, b->tid);
	if (a->ts != b->ts)
		return CMP(a->ts, b->ts);
	if (a->depth != b->depth)
		return CMP(a->depth, b->depth);
	return CMP(b->dur, a->dur); /* the longer one holds the other */
}

static int same_thread(const struct pyfunc_piece *a, const struct pyfunc_piece *b)
{
	return a->pid == b->pid && a->tid == b->tid;
}

int pyfunc_calls__nest(struct pyfunc_calls *c)
{
	size_t *open = malloc((c->n + 1) * sizeof(*open)), nopen = 0;

	if (!open)
		return -ENOMEM;
	if (c->n)
		qsort(c->v, c->n, sizeof(*c->v), by_start);
	for (size_t i = 0; i < c->n; i++) {
		struct pyfunc_piece *p = &c->v[i];

		/* what ended before it, or is no shallower, is not around it */
		while (nopen) {
			const struct pyfunc_piece *top = &c->v[open[nopen - 1]];

			if (same_thread(top, p) && top->depth < p->depth &&
			    top->ts + top->dur >= p->ts)
				break;
			nopen--;
		}
		p->child_ns = 0;
		p->recursive = 0;
		if (nopen)
			c->v[open[nopen - 1]].child_ns += p->dur;
		for (size_t k = 0; k < nopen && !p->recursive; k++)
			p->recursive = pyfunc_piece__same(&c->v[open[k]], p);
		open[nopen++] = i;
	}
	free(open);
	return 0;
}

long pyfunc_calls__rows(struct pyfunc_calls *c, size_t **row)
{
	struct hmap *index;
	long n = 0;

	*row = NULL;
	if (c->err || (c->err = pyfunc_calls__nest(c)))
		return c->err;
	index = hmap__new(sizeof(size_t));
	*row = malloc((c->n + 1) * sizeof(**row));
	for (size_t i = 0; index && *row && i < c->n; i++) {
		const struct pyfunc_piece *p = &c->v[i];
		struct hkey k = { (__u64)p->pid << 32 | p->line,
				  (__u64)p->func_id << 32 | p->file_id };
		size_t *at = hmap__get(index, k, 0);

		if (!at) {
			if (!(at = hmap__get(index, k, 1)))
				break;
			*at = n++;
		}
		(*row)[i] = *at;
	}
	if (!index || !*row || hmap__count(index) != (size_t)n)
		n = -ENOMEM;
	hmap__free(index);
	return n;
}

void pyfunc_calls__free(void *vc)
{
	struct pyfunc_calls *c = vc;

	if (!c)
		return;
	free(c->v);
	free(c);
}
