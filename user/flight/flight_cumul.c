// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Cumulative snapshots for flight-recorder dumps. A snapshot says "N calls since the
 * recording began"; the window wants "since the window began": N less the same key's last
 * snapshot before the window (its base). A snapshot that closes its key (osrt's
 * BS_AGG_FINAL) makes the next one count from zero: no base after it. The family says what
 * a key is and how to subtract (struct family_cumulative).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "family.h"
#include "flight_cumul.h"
#include "hmap.h"
#include "trace_writer.h"

struct cumul_key {
	const struct family_cumulative *fc;
	struct hkey key;
	struct bs_hdr *base;  /* last snapshot before the oldest kept, NULL: none */
	struct bs_hdr **snap; /* snapshots in time order, from the oldest kept */
	size_t n, cap;
};

struct flight_cumul {
	const struct family_cumulative *by_type[BS_REC_TYPE_MAX];
	struct cumul_key *k;
	size_t nk, capk;
	struct hmap *index; /* hkey -> u32 position + 1 */
	__u64 bytes;
};

#define SNAP_COST 16 /* the pointer and the allocator's header, per snapshot */

struct flight_cumul *flight_cumul__new(void)
{
	struct flight_cumul *fc = calloc(1, sizeof(*fc));

	if (!fc)
		return NULL;
	fc->index = hmap__new(sizeof(__u32));
	if (!fc->index) {
		free(fc);
		return NULL;
	}
	for_each_family(it)
		for (const struct family_cumulative *c = it.f->decode->cumulative; c && c->type;
		     c++)
			if (c->type < BS_REC_TYPE_MAX)
				fc->by_type[c->type] = c;
	return fc;
}

static void key_free(struct cumul_key *k)
{
	free(k->base);
	for (size_t i = 0; i < k->n; i++)
		free(k->snap[i]);
	free(k->snap);
}

void flight_cumul__free(struct flight_cumul *fc)
{
	if (!fc)
		return;
	for (size_t i = 0; i < fc->nk; i++)
		key_free(&fc->k[i]);
	free(fc->k);
	hmap__free(fc->index);
	free(fc);
}

static struct cumul_key *key_of(struct flight_cumul *fc, const struct family_cumulative *c,
				const struct bs_hdr *rec)
{
	struct hkey key = { (__u64)rec->pid << 32 | rec->tid,
			    c->key(rec) ^ (__u64)rec->type << 56 };
	__u32 *pos = hmap__get(fc->index, key, 1);

	if (!pos)
		return NULL;
	if (!*pos) {
		if (array__grow((void **)&fc->k, fc->nk, &fc->capk, sizeof(*fc->k)))
			return NULL;
		memset(&fc->k[fc->nk], 0, sizeof(fc->k[fc->nk]));
		fc->k[fc->nk].fc = c;
		fc->k[fc->nk].key = key;
		*pos = (__u32)++fc->nk;
		fc->bytes += sizeof(struct cumul_key) + 48;
	}
	return &fc->k[*pos - 1];
}

int flight_cumul__observe(struct flight_cumul *fc, const struct bs_hdr *rec)
{
	const struct family_cumulative *c =
		rec->type < BS_REC_TYPE_MAX ? fc->by_type[rec->type] : NULL;
	struct cumul_key *k;
	struct bs_hdr *copy;

	if (!c || rec->size < c->min_size)
		return 0;
	k = key_of(fc, c, rec);
	if (!k)
		return 0; /* out of memory: the chunks keep it, as a plain recording would */
	/* from 8: a key per thread and counter, most with few snapshots in the window */
	if (array__grow_from((void **)&k->snap, k->n, &k->cap, sizeof(*k->snap), 8))
		return 0;
	copy = malloc(rec->size);
	if (!copy)
		return 0;
	memcpy(copy, rec, rec->size);
	k->snap[k->n++] = copy;
	fc->bytes += rec->size + SNAP_COST;
	return 1;
}

static int closes(const struct cumul_key *k, const struct bs_hdr *rec)
{
	return rec && k->fc->closes && k->fc->closes(rec);
}

void flight_cumul__prune(struct flight_cumul *fc, __u64 oldest)
{
	struct hmap *index;
	size_t out = 0;

	for (size_t i = 0; i < fc->nk; i++) {
		struct cumul_key *k = &fc->k[i];
		size_t old = 0;

		while (old < k->n && k->snap[old]->ts < oldest)
			old++;
		if (!old)
			continue;
		/* The last of them is the new base; a closing one means "count from zero". */
		if (k->base)
			fc->bytes -= k->base->size + SNAP_COST;
		free(k->base);
		for (size_t j = 0; j + 1 < old; j++) {
			fc->bytes -= k->snap[j]->size + SNAP_COST;
			free(k->snap[j]);
		}
		k->base = k->snap[old - 1];
		if (closes(k, k->base)) {
			fc->bytes -= k->base->size + SNAP_COST;
			free(k->base);
			k->base = NULL;
		}
		memmove(k->snap, k->snap + old, (k->n - old) * sizeof(*k->snap));
		k->n -= old;
	}
	/* Keys left with nothing (closed, nothing since) are dropped: the index is rebuilt. */
	index = hmap__new(sizeof(__u32));
	if (!index)
		return;
	for (size_t i = 0; i < fc->nk; i++) {
		__u32 *pos;

		if (!fc->k[i].base && !fc->k[i].n)
			continue;
		pos = hmap__get(index, fc->k[i].key, 1);
		if (!pos) {
			hmap__free(index);
			return;
		}
		*pos = (__u32)++out;
	}
	out = 0;
	for (size_t i = 0; i < fc->nk; i++) {
		if (!fc->k[i].base && !fc->k[i].n) {
			key_free(&fc->k[i]);
			fc->bytes -= sizeof(struct cumul_key) + 48;
			continue;
		}
		fc->k[out++] = fc->k[i];
	}
	fc->nk = out;
	hmap__free(fc->index);
	fc->index = index;
}

long flight_cumul__write(struct flight_cumul *fc, struct trace_writer *w, __u64 from)
{
	struct bs_hdr *copy = NULL;
	size_t cap = 0;
	long n = 0;
	int err = 0;

	for (size_t i = 0; i < fc->nk && !err; i++) {
		struct cumul_key *k = &fc->k[i];
		const struct bs_hdr *base = k->base;

		for (size_t j = 0; j < k->n && !err; j++) {
			const struct bs_hdr *s = k->snap[j];

			if (s->ts < from) {
				base = closes(k, s) ? NULL : s;
				continue;
			}
			if (s->size > cap) {
				struct bs_hdr *nc = realloc(copy, s->size);

				if (!nc) {
					err = -ENOMEM;
					break;
				}
				copy = nc;
				cap = s->size;
			}
			memcpy(copy, s, s->size);
			if (base)
				k->fc->since(copy, base);
			err = trace_writer__append(w, copy);
			n++;
			if (closes(k, s))
				base = NULL; /* the key's next snapshot counts from zero */
		}
	}
	free(copy);
	return err ? err : n;
}

__u64 flight_cumul__bytes(const struct flight_cumul *fc)
{
	return fc->bytes;
}
