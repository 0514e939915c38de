// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Named groups of measurements for the summary reports; see tgroups.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "tgroups.h"
#include "hmap.h"

struct tgroups {
	struct hmap *idx; /* hash of the key -> index + 1 into groups */
	struct tgroup *groups;
	size_t n, cap;
};

struct tgroups *tgroups__new(void)
{
	struct tgroups *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->idx = hmap__new(sizeof(size_t));
	if (!g->idx) {
		free(g);
		return NULL;
	}
	return g;
}

void tgroups__free(struct tgroups *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n; i++) {
		free(g->groups[i].name);
		free(g->groups[i].name2);
		for (int s = 0; s < TGROUP_NSTATS; s++)
			samples__free(&g->groups[i].st[s].samples);
	}
	free(g->groups);
	hmap__free(g->idx);
	free(g);
}

static __u64 fnv(__u64 h, const char *s)
{
	for (; s && *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

static int key_is(const struct tgroup *t, const char *name, const char *name2, __u32 tag)
{
	if (t->tag != tag || strcmp(t->name, name))
		return 0;
	if (!t->name2 || !name2)
		return !t->name2 && !name2;
	return !strcmp(t->name2, name2);
}

struct tgroup *tgroups__get(struct tgroups *g, const char *name, const char *name2, __u32 tag)
{
	struct hkey key = { fnv(0xcbf29ce484222325ull, name),
			    fnv(0x84222325cbf29ce4ull ^ tag, name2) ^ (name2 ? 1 : 0) };
	struct tgroup *t;
	size_t *slot;

	/* Keys are hashes: a collision moves on to the next key until the group matches. */
	for (;;) {
		slot = hmap__get(g->idx, key, 1);
		if (!slot)
			return NULL;
		if (!*slot)
			break;
		if (key_is(&g->groups[*slot - 1], name, name2, tag))
			return &g->groups[*slot - 1];
		key.b += 0x9e3779b97f4a7c15ull;
	}
	if (array__grow((void **)&g->groups, g->n, &g->cap, sizeof(*g->groups)))
		return NULL;
	t = &g->groups[g->n];
	memset(t, 0, sizeof(*t));
	t->name = strdup(name);
	t->name2 = name2 ? strdup(name2) : NULL;
	if (!t->name || (name2 && !t->name2)) {
		free(t->name);
		free(t->name2);
		return NULL;
	}
	t->tag = tag;
	*slot = ++g->n;
	return t;
}

int tgroup__add(struct tgroup *t, int i, __u64 v)
{
	struct tstat *s = &t->st[i];

	if (samples__add(&s->samples, (double)v, 1))
		return -ENOMEM;
	if (!s->count || v < s->min)
		s->min = v;
	if (!s->count || v > s->max)
		s->max = v;
	s->count++;
	s->total += v;
	return 0;
}

static int group_cmp(const void *x, const void *y, void *arg)
{
	const struct tgroup *a = *(struct tgroup *const *)x, *b = *(struct tgroup *const *)y;
	int i = *(const int *)arg;
	__u64 ta = a->st[i].total, tb = b->st[i].total;
	int d;

	if (ta != tb)
		return ta < tb ? 1 : -1;
	d = strcmp(a->name, b->name);
	if (d)
		return d;
	d = strcmp(a->name2 ? a->name2 : "", b->name2 ? b->name2 : "");
	if (d)
		return d;
	return (a->tag > b->tag) - (a->tag < b->tag);
}

struct tgroup **tgroups__sorted(struct tgroups *g, int i, size_t *n)
{
	struct tgroup **v = malloc((g->n + 1) * sizeof(*v));

	if (!v)
		return NULL;
	for (size_t k = 0; k < g->n; k++)
		v[k] = &g->groups[k];
	qsort_r(v, g->n, sizeof(*v), group_cmp, &i);
	*n = g->n;
	return v;
}

__u64 tgroups__grand(const struct tgroups *g, int i)
{
	__u64 sum = 0;

	for (size_t k = 0; k < g->n; k++)
		sum += g->groups[k].st[i].total;
	return sum;
}
