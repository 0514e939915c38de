// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A hash map with 128-bit keys (hmap.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "hmap.h"

/* Open addressing, linear probing, load <= 1/2; slots are [used:8][key:16][value]. */
struct hmap {
	unsigned char *slots;
	size_t val_size, slot_size;
	size_t cap, n;
};

struct hslot {
	__u64 used;
	struct hkey key;
};

static size_t hkey_hash(struct hkey k)
{
	__u64 h = k.a * 0x9e3779b97f4a7c15ull;

	h ^= (k.b + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;
	return (size_t)(h ^ (h >> 29));
}

static struct hslot *hmap__slot(const struct hmap *m, size_t i)
{
	return (struct hslot *)(m->slots + i * m->slot_size);
}

struct hmap *hmap__new(size_t val_size)
{
	struct hmap *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->val_size = val_size;
	/* Keep values 8-byte aligned: they hold u64 and double fields. */
	m->slot_size = sizeof(struct hslot) + ((val_size + 7) & ~(size_t)7);
	return m;
}

void hmap__free(struct hmap *m)
{
	if (!m)
		return;
	free(m->slots);
	free(m);
}

static int hmap__grow(struct hmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64, i, j;
	unsigned char *ns;
	struct hslot *src;

	ns = calloc(ncap, m->slot_size);
	if (!ns)
		return -ENOMEM;
	for (i = 0; i < m->cap; i++) {
		src = hmap__slot(m, i);
		if (!src->used)
			continue;
		for (j = hkey_hash(src->key) & (ncap - 1);
		     ((struct hslot *)(ns + j * m->slot_size))->used; j = (j + 1) & (ncap - 1))
			;
		memcpy(ns + j * m->slot_size, src, m->slot_size);
	}
	free(m->slots);
	m->slots = ns;
	m->cap = ncap;
	return 0;
}

void *hmap__get(struct hmap *m, struct hkey key, int create)
{
	struct hslot *sl;
	size_t i;

	if (m->cap) {
		for (i = hkey_hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
			sl = hmap__slot(m, i);
			if (!sl->used)
				break;
			if (sl->key.a == key.a && sl->key.b == key.b)
				return sl + 1;
		}
	}
	if (!create)
		return NULL;
	if ((m->n + 1) * 2 > m->cap && hmap__grow(m))
		return NULL;
	for (i = hkey_hash(key) & (m->cap - 1); hmap__slot(m, i)->used; i = (i + 1) & (m->cap - 1))
		;
	sl = hmap__slot(m, i);
	sl->used = 1;
	sl->key = key;
	memset(sl + 1, 0, m->val_size);
	m->n++;
	return sl + 1;
}

/* Linear probing: later entries of the removed one's run move back, so no lookup stops early. */
void hmap__del(struct hmap *m, struct hkey key)
{
	struct hslot *sl;
	size_t i, j, home, mask = m->cap - 1;

	if (!m->cap)
		return;
	for (i = hkey_hash(key) & mask;; i = (i + 1) & mask) {
		sl = hmap__slot(m, i);
		if (!sl->used)
			return;
		if (sl->key.a == key.a && sl->key.b == key.b)
			break;
	}
	for (j = (i + 1) & mask;; j = (j + 1) & mask) {
		sl = hmap__slot(m, j);
		if (!sl->used)
			break;
		home = hkey_hash(sl->key) & mask;
		/* Move it back when its home is not cyclically within (i, j]. */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			memcpy(hmap__slot(m, i), sl, m->slot_size);
			i = j;
		}
	}
	hmap__slot(m, i)->used = 0;
	m->n--;
}

size_t hmap__count(const struct hmap *m)
{
	return m->n;
}

void *hmap__next(const struct hmap *m, size_t *iter, struct hkey *key)
{
	struct hslot *sl;

	while (*iter < m->cap) {
		sl = hmap__slot(m, (*iter)++);
		if (sl->used) {
			if (key)
				*key = sl->key;
			return sl + 1;
		}
	}
	return NULL;
}

void hmap__del_all(struct hmap *m, int which, __u64 v)
{
	struct hkey key, *gone;
	size_t it = 0, n = 0;

	/* Collected first: a deletion moves other entries under an iteration. */
	gone = malloc(hmap__count(m) * sizeof(*gone) + 1);
	while (gone && hmap__next(m, &it, &key))
		if ((which ? key.b : key.a) == v)
			gone[n++] = key;
	for (size_t i = 0; i < n; i++)
		hmap__del(m, gone[i]);
	free(gone);
}
