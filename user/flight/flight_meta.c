// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Metadata store of the flight recorder. A record describing state (a string, a process, a
 * thread's name, a symbol, a stack, what a family declares in state_records) is written
 * once, when first needed, so the window's chunks alone cannot be read: the store keeps the
 * latest copy of each, keyed by what it describes, and a dump writes the ones its window
 * needs first. It forgets what no event still in memory can refer to: the stacks no longer
 * referred to, the processes and threads that ended before the window.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "family.h"
#include "flight_meta.h"
#include "hmap.h"
#include "trace_writer.h"

struct meta_entry {
	struct hkey key;
	__u32 seq;    /* window chunk the record went into */
	__u64 ref_ts; /* stacks: the latest event that referred to it */
	struct bs_hdr *rec;
};

struct flight_meta {
	struct meta_entry *e;
	size_t n, cap;
	struct hmap *index; /* key -> u32 position + 1 */
	struct hmap *ended; /* (pid, tid) -> ts of the exit; tid 0: the whole process */
	__u64 bytes;
	__u8 state[BS_REC_TYPE_MAX];
};

/* Entries live until pruned; index and ended entries cost about this each in hmap. */
#define HMAP_ENTRY_COST 48

struct flight_meta *flight_meta__new(void)
{
	struct flight_meta *fm = calloc(1, sizeof(*fm));

	if (!fm)
		return NULL;
	fm->index = hmap__new(sizeof(__u32));
	fm->ended = hmap__new(sizeof(__u64));
	if (!fm->index || !fm->ended) {
		flight_meta__free(fm);
		return NULL;
	}
	/* The file's own: what trace_model reads to name things. */
	fm->state[BS_REC_STRING] = fm->state[BS_REC_PROCESS] = fm->state[BS_REC_THREAD] = 1;
	fm->state[BS_REC_COMM] = fm->state[BS_REC_SYMBOL] = fm->state[BS_REC_STACK] = 1;
	fm->state[BS_REC_THREAD_NAME] = 1;
	for_each_family(fit)
		for (const __u16 *t = fit.f->decode->state_records; t && *t; t++)
			if (*t < BS_REC_TYPE_MAX)
				fm->state[*t] = 1;
	return fm;
}

void flight_meta__free(struct flight_meta *fm)
{
	if (!fm)
		return;
	for (size_t i = 0; i < fm->n; i++)
		free(fm->e[i].rec);
	free(fm->e);
	hmap__free(fm->index);
	hmap__free(fm->ended);
	free(fm);
}

int flight_meta__is_state(const struct flight_meta *fm, __u16 type)
{
	return type < BS_REC_TYPE_MAX && fm->state[type];
}

static __u64 word3(const struct bs_hdr *rec)
{
	__u64 w = 0;

	if (rec->size >= 32)
		memcpy(&w, (const __u8 *)rec + 24, 8);
	return w;
}

/*
 * What a state record describes: strings and stacks by their file-wide id; thread names by
 * thread; everything else by process and its first word (a symbol's address, a PROCESS
 * record's ids: a process that exec'd keeps both, the later one wins when read).
 */
static struct hkey state_key(const struct bs_hdr *rec)
{
	__u64 w = word3(rec);

	if (rec->type == BS_REC_STRING || rec->type == BS_REC_STACK)
		return (struct hkey){ 0, (__u64)rec->type << 56 | (__u32)w };
	if (rec->type == BS_REC_THREAD || rec->type == BS_REC_COMM)
		return (struct hkey){ (__u64)rec->pid << 32 | rec->tid, BS_REC_THREAD };
	if (rec->type == BS_REC_THREAD_NAME)
		return (struct hkey){ (__u64)rec->pid << 32 | rec->tid, BS_REC_THREAD_NAME };
	return (struct hkey){ (__u64)rec->pid << 32, w ^ (__u64)rec->type << 56 };
}

static int keep(struct flight_meta *fm, const struct bs_hdr *rec, __u32 seq)
{
	struct hkey key = state_key(rec);
	__u32 *pos = hmap__get(fm->index, key, 1);
	struct meta_entry *e;
	struct bs_hdr *copy;

	if (!pos)
		return -ENOMEM;
	if (!*pos) {
		if (array__grow((void **)&fm->e, fm->n, &fm->cap, sizeof(*fm->e)))
			return -ENOMEM;
		memset(&fm->e[fm->n], 0, sizeof(fm->e[fm->n]));
		fm->e[fm->n].key = key;
		*pos = (__u32)++fm->n;
		fm->bytes += sizeof(*e) + HMAP_ENTRY_COST;
	}
	e = &fm->e[*pos - 1];
	copy = realloc(e->rec, rec->size);
	if (!copy)
		return -ENOMEM;
	fm->bytes += rec->size;
	if (e->rec)
		fm->bytes -= e->rec->size;
	memcpy(copy, rec, rec->size);
	e->rec = copy;
	e->seq = seq;
	return 0;
}

static void refer_stack(struct flight_meta *fm, __u32 id, __u64 ts)
{
	struct hkey key = { 0, (__u64)BS_REC_STACK << 56 | id };
	__u32 *pos;

	if (!id || !(pos = hmap__get(fm->index, key, 0)) || !*pos)
		return;
	if (fm->e[*pos - 1].ref_ts < ts)
		fm->e[*pos - 1].ref_ts = ts;
}

static void mark_ended(struct flight_meta *fm, __u32 pid, __u32 tid, __u64 ts)
{
	__u64 *t = hmap__get(fm->ended, (struct hkey){ pid, tid }, 1);

	if (t)
		*t = ts;
}

int flight_meta__observe(struct flight_meta *fm, const struct bs_hdr *rec, __u32 seq)
{
	const struct rec_decoder *d;

	if (rec->type == BS_REC_STACK_REF) {
		if (rec->size >= sizeof(struct bs_stack_ref))
			refer_stack(fm, ((const struct bs_stack_ref *)rec)->stack_id, rec->ts);
		return 0;
	}
	d = family__decoder(rec->type);
	if (d && d->stack_off) {
		if (rec->size >= d->stack_off + sizeof(__u32))
			refer_stack(fm, *(const __u32 *)((const char *)rec + d->stack_off),
				    rec->ts);
		return 0;
	}
	if (rec->type == BS_REC_EXIT && rec->size >= sizeof(struct bs_exit)) {
		const struct bs_exit *x = (const void *)rec;

		mark_ended(fm, rec->pid, x->group_dead ? 0 : rec->tid, rec->ts);
		return 0;
	}
	if (!flight_meta__is_state(fm, rec->type))
		return 0;
	if (rec->type == BS_REC_PROCESS) {
		/* A recycled pid: the new process ends on its own. */
		__u64 *t = hmap__get(fm->ended, (struct hkey){ rec->pid, 0 }, 0);

		if (t)
			*t = 0;
	}
	return keep(fm, rec, seq);
}

static __u64 ended_at(const struct flight_meta *fm, __u32 pid, __u32 tid)
{
	__u64 *t = hmap__get(fm->ended, (struct hkey){ pid, tid }, 0);

	return t ? *t : 0;
}

/* Whether entry E is of no use to events at or after OLDEST. */
static int stale(const struct flight_meta *fm, const struct meta_entry *e, __u64 oldest)
{
	const struct bs_hdr *r = e->rec;
	__u64 t;

	if (r->type == BS_REC_STACK)
		return e->ref_ts < oldest && r->ts < oldest;
	if (!r->pid)
		return 0; /* strings: any later record may name one */
	t = ended_at(fm, r->pid, 0);
	if (t && t < oldest)
		return 1;
	if (r->type == BS_REC_THREAD || r->type == BS_REC_COMM || r->type == BS_REC_THREAD_NAME) {
		t = ended_at(fm, r->pid, r->tid);
		return t && t < oldest;
	}
	return 0;
}

void flight_meta__prune(struct flight_meta *fm, __u64 oldest)
{
	struct hmap *index = hmap__new(sizeof(__u32)), *ended = hmap__new(sizeof(__u64));
	struct hkey key;
	size_t out = 0, it = 0;
	__u64 *t;

	if (!index || !ended)
		goto fail;
	/* The new index first: if it cannot be built, nothing has changed. */
	for (size_t i = 0; i < fm->n; i++) {
		__u32 *pos;

		if (stale(fm, &fm->e[i], oldest))
			continue;
		pos = hmap__get(index, fm->e[i].key, 1);
		if (!pos)
			goto fail;
		*pos = (__u32)++out;
	}
	while ((t = hmap__next(fm->ended, &it, &key))) {
		__u64 *nt;

		if (!*t || *t < oldest)
			continue;
		nt = hmap__get(ended, key, 1);
		if (!nt)
			goto fail;
		*nt = *t;
	}
	out = 0;
	for (size_t i = 0; i < fm->n; i++) {
		struct meta_entry *e = &fm->e[i];

		if (stale(fm, e, oldest)) {
			fm->bytes -= e->rec->size + sizeof(*e) + HMAP_ENTRY_COST;
			free(e->rec);
			continue;
		}
		fm->e[out++] = *e;
	}
	fm->n = out;
	hmap__free(fm->index);
	hmap__free(fm->ended);
	fm->index = index;
	fm->ended = ended;
	return;
fail:
	hmap__free(index);
	hmap__free(ended);
}

/* The kept records of chunks before FIRST_SEQ, stacks referred to from STACKS_FROM on. */
static long write_kept(struct flight_meta *fm, struct trace_writer *w, __u64 ts, __u32 first_seq,
		       __u64 stacks_from)
{
	long n = 0;
	int err;

	for (size_t i = 0; i < fm->n; i++) {
		struct meta_entry *e = &fm->e[i];
		__u64 was = e->rec->ts;

		if (e->seq >= first_seq)
			continue; /* in the window's chunks already */
		if (e->rec->type == BS_REC_STACK && e->ref_ts < stacks_from)
			continue; /* no event of the window has it */
		e->rec->ts = ts;
		err = trace_writer__append(w, e->rec);
		e->rec->ts = was;
		if (err)
			return err;
		n++;
	}
	return n;
}

long flight_meta__write(struct flight_meta *fm, struct trace_writer *w, __u64 from_ts,
			__u32 first_seq)
{
	return write_kept(fm, w, from_ts, first_seq, from_ts);
}

long flight_meta__write_all(struct flight_meta *fm, struct trace_writer *w, __u64 ts)
{
	return write_kept(fm, w, ts, UINT32_MAX, 0);
}

__u64 flight_meta__bytes(const struct flight_meta *fm)
{
	return fm->bytes;
}

__u64 flight_meta__count(const struct flight_meta *fm)
{
	return fm->n;
}
