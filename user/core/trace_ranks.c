// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The ranks of a merged file, in the order of their RANK records (trace_ranks.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "hmap.h"
#include "trace_ranks.h"

struct trace_ranks {
	struct trace_rank **v; /* in file order; never moved once made (pointers handed out) */
	__u32 n;
	size_t cap;
	struct hmap *by_pid; /* {pid, 0} -> index + 1; {ns, 1} -> index + 1 of its first */
};

struct trace_ranks *trace_ranks__new(void)
{
	struct trace_ranks *t = calloc(1, sizeof(*t));

	if (t && !(t->by_pid = hmap__new(sizeof(__u32)))) {
		free(t);
		t = NULL;
	}
	return t;
}

void trace_ranks__free(struct trace_ranks *t)
{
	if (!t)
		return;
	for (__u32 i = 0; i < t->n; i++)
		free(t->v[i]);
	free(t->v);
	hmap__free(t->by_pid);
	free(t);
}

int trace_ranks__add(struct trace_ranks *t, const struct bs_rank *r, const char *host,
		     const char *path)
{
	struct trace_rank *tr;
	__u32 *slot;
	char label[320];
	size_t hl, pl, ll;

	if (!t || !r)
		return -EINVAL;
	if (array__grow((void **)&t->v, t->n, &t->cap, sizeof(*t->v)))
		return -ENOMEM;
	if (r->rank >= 0)
		snprintf(label, sizeof(label), "rank %d @ %s", r->rank, host ? host : "?");
	else
		snprintf(label, sizeof(label), "file %u @ %s", r->ns, host ? host : "?");
	/* One allocation: the entry, then its three strings. */
	hl = host ? strlen(host) + 1 : 0;
	pl = path ? strlen(path) + 1 : 0;
	ll = strlen(label) + 1;
	tr = malloc(sizeof(*tr) + hl + pl + ll);
	if (!tr)
		return -ENOMEM;
	tr->r = *r;
	tr->index = t->n;
	tr->host = host ? memcpy((char *)(tr + 1), host, hl) : NULL;
	tr->path = path ? memcpy((char *)(tr + 1) + hl, path, pl) : NULL;
	tr->label = memcpy((char *)(tr + 1) + hl + pl, label, ll);
	slot = hmap__get(t->by_pid, (struct hkey){ r->ns, 1 }, 1);
	if (!slot) {
		free(tr);
		return -ENOMEM;
	}
	if (!*slot)
		*slot = t->n + 1;
	if (r->h.pid) {
		slot = hmap__get(t->by_pid, (struct hkey){ r->h.pid, 0 }, 1);
		if (!slot) {
			free(tr);
			return -ENOMEM;
		}
		*slot = t->n + 1;
	}
	t->v[t->n++] = tr;
	return 0;
}

const struct trace_rank *trace_ranks__of_pid(const struct trace_ranks *t, __u32 pid)
{
	const __u32 *i;

	if (!t || !t->n || !pid)
		return NULL;
	i = hmap__get(t->by_pid, (struct hkey){ pid, 0 }, 0);
	return i ? t->v[*i - 1] : NULL;
}

const struct trace_rank *trace_ranks__find(const struct trace_ranks *t, __u32 pid)
{
	const struct trace_rank *r = trace_ranks__of_pid(t, pid);
	const __u32 *i;

	if (r || !t || !t->n)
		return r;
	i = hmap__get(t->by_pid, (struct hkey){ trace_ranks__ns(pid), 1 }, 0);
	return i ? t->v[*i - 1] : NULL;
}

const struct trace_rank *trace_ranks__next(const struct trace_ranks *t, __u32 *i)
{
	return t && *i < t->n ? t->v[(*i)++] : NULL;
}

__u32 trace_ranks__count(const struct trace_ranks *t)
{
	return t ? t->n : 0;
}
