// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The flight recorder: the recording's writer makes chunks as usual, but in memory (a sink
 * of trace_writer__open_mem); they are kept oldest first until they fall out of the window
 * (DUR) or the memory budget (SIZE). A dump is a new file: the recording's header, the
 * metadata records the window needs (flight_meta.c), a LOSS record for what SIZE cut out of
 * the window, the window's records (the oldest chunk cut at the window's start, the others
 * copied whole, still compressed), a footer. flight_recorder.h says more.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include "array.h"
#include "family.h"
#include "flight_cumul.h"
#include "flight_hang.h"
#include "flight_meta.h"
#include "flight_recorder.h"
#include "flight_trigger.h"
#include "mono_clock.h"
#include "trace_chunk_dec.h"
#include "trace_codec.h"
#include "trace_format.h"
#include "trace_writer.h"
#include "msg.h"

#define SIZE_DROPS_MAX 4096 /* chunks cut by SIZE remembered (one per 1 MiB of records) */

struct stored_chunk {
	__u8 *data; /* chunk header + zstd frame, as the writer made it */
	size_t len;
	struct trace_chunk_info info;
};

/* A chunk SIZE pushed out while it was still in the window: a dump counts its records. */
struct size_drop {
	__u64 last_ts;
	__u32 nrecords;
};

struct flight_recorder {
	struct flight_opts fo;
	const struct trace_meta *meta;
	const char *output;
	int force;
	struct trace_writer *w;
	struct flight_meta *fm;
	struct flight_cumul *fc;
	struct flight_triggers *ft;
	struct flight_hang *hang; /* --trigger hang, or NULL */
	flight_prologue_fn prologue;
	void *prologue_arg;
	/* Records for the next dump alone, after its window (flight__add_to_dump). */
	struct bs_hdr **extra;
	size_t nextra, cap_extra;

	struct stored_chunk *c; /* ring of chunks, oldest at head */
	size_t head, n, cap;
	__u64 chunk_bytes, budget;
	__u64 peak_bytes;

	struct size_drop drops[SIZE_DROPS_MAX];
	size_t drop_head, ndrops;
	__u64 dropped_total; /* records SIZE cut out of the window, whole recording */

	__u64 pruned_at; /* first_ts of the oldest chunk when the stores were last pruned */

	int pending;	  /* a dump was triggered and is not written yet */
	__u64 due_ns;	  /* ... to be written at */
	char reason[128]; /* what triggered it */
	/* The record that fired it (--trigger FAMILY:...), type 0 for none: a dump's readers
	 * open with it (trigger_event= in its options; stats' verdict). */
	struct bs_hdr cause;
	struct bs_hdr firing; /* the record flight__observe is triggering on, else type 0 */
	__u64 cooldown_until;
	__u32 ndumps, nfailed;
	__u64 coalesced, cooled, capped;     /* triggers that did not make a dump of their own */
	__u64 since_coalesced, since_cooled; /* since the previous dump */
	int capped_said;
};

static struct stored_chunk *chunk_at(struct flight_recorder *fr, size_t i)
{
	return &fr->c[(fr->head + i) % fr->cap];
}

static int grow_ring(struct flight_recorder *fr)
{
	size_t cap = fr->cap ? fr->cap * 2 : 64;
	struct stored_chunk *nc = malloc(cap * sizeof(*nc));

	if (!nc)
		return -ENOMEM;
	for (size_t i = 0; i < fr->n; i++)
		nc[i] = *chunk_at(fr, i);
	free(fr->c);
	fr->c = nc;
	fr->cap = cap;
	fr->head = 0;
	return 0;
}

static void drop_oldest(struct flight_recorder *fr)
{
	struct stored_chunk *s = chunk_at(fr, 0);

	fr->chunk_bytes -= s->len;
	free(s->data);
	fr->head = (fr->head + 1) % fr->cap;
	fr->n--;
}

/* SIZE is reached: the oldest chunk goes, and if the window still wanted it, it is a loss. */
static void drop_for_size(struct flight_recorder *fr, __u64 now)
{
	struct stored_chunk *s = chunk_at(fr, 0);

	if (s->info.last_ts + fr->fo.window_ns >= now) {
		if (fr->ndrops == SIZE_DROPS_MAX) { /* fold the oldest two: the total stays exact */
			struct size_drop *a = &fr->drops[fr->drop_head];
			struct size_drop *b = &fr->drops[(fr->drop_head + 1) % SIZE_DROPS_MAX];

			b->nrecords += a->nrecords;
			fr->drop_head = (fr->drop_head + 1) % SIZE_DROPS_MAX;
			fr->ndrops--;
		}
		fr->drops[(fr->drop_head + fr->ndrops++) % SIZE_DROPS_MAX] =
			(struct size_drop){ s->info.last_ts, s->info.nrecords };
		fr->dropped_total += s->info.nrecords;
	}
	drop_oldest(fr);
}

static __u64 held(const struct flight_recorder *fr)
{
	return fr->chunk_bytes + flight_meta__bytes(fr->fm) + flight_cumul__bytes(fr->fc);
}

static int on_chunk(void *arg, const __u8 *chunk, size_t len, const struct trace_chunk_info *info)
{
	struct flight_recorder *fr = arg;
	struct stored_chunk *s;
	__u8 *copy;
	__u64 now = mono_now_ns();

	if (fr->n == fr->cap && grow_ring(fr))
		return -ENOMEM;
	/* Room first, so the peak stays within SIZE. */
	while (fr->n && held(fr) + len > fr->budget)
		drop_for_size(fr, now);
	copy = malloc(len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, chunk, len);
	s = chunk_at(fr, fr->n++);
	s->data = copy;
	s->len = len;
	s->info = *info;
	fr->chunk_bytes += len;
	if (held(fr) > fr->peak_bytes)
		fr->peak_bytes = held(fr);
	return 0;
}

struct flight_recorder *flight__new(const struct flight_opts *fo, const struct trace_meta *meta,
				    const char *output, int force, int *err)
{
	struct flight_recorder *fr = calloc(1, sizeof(*fr));

	*err = -ENOMEM;
	if (!fr)
		return NULL;
	fr->fo = *fo;
	fr->meta = meta;
	fr->output = output;
	fr->force = force;
	fr->budget = fo->size_bytes;
	fr->fm = flight_meta__new();
	fr->fc = flight_cumul__new();
	if (!fr->fm || !fr->fc)
		goto fail;
	fr->ft = flight_triggers__new(&fr->fo, err);
	if (*err)
		goto fail;
	fr->hang = flight_hang__new(&fr->fo, err);
	if (*err)
		goto fail;
	fr->w = trace_writer__open_mem(on_chunk, fr, err);
	if (!fr->w)
		goto fail;
	return fr;
fail:
	flight__free(fr);
	return NULL;
}

struct trace_writer *flight__writer(struct flight_recorder *fr)
{
	return fr->w;
}

void flight__set_prologue(struct flight_recorder *fr, flight_prologue_fn fn, void *arg)
{
	fr->prologue = fn;
	fr->prologue_arg = arg;
}

int flight__add_to_dump(struct flight_recorder *fr, const struct bs_hdr *rec)
{
	struct bs_hdr *copy = malloc(rec->size);

	if (!copy ||
	    array__grow((void **)&fr->extra, fr->nextra, &fr->cap_extra, sizeof(*fr->extra))) {
		free(copy);
		return -ENOMEM;
	}
	memcpy(copy, rec, rec->size);
	fr->extra[fr->nextra++] = copy;
	return 0;
}

static void drop_extra(struct flight_recorder *fr)
{
	for (size_t i = 0; i < fr->nextra; i++)
		free(fr->extra[i]);
	fr->nextra = 0;
}

static int append_to(void *w, const struct bs_hdr *rec)
{
	return trace_writer__append(w, rec);
}

struct flight_hang *flight__hang(struct flight_recorder *fr)
{
	return fr ? fr->hang : NULL;
}

int flight__would_dump(const struct flight_recorder *fr)
{
	return !(fr->fo.max_dumps && fr->ndumps + fr->nfailed >= fr->fo.max_dumps) &&
	       (fr->pending || mono_now_ns() >= fr->cooldown_until);
}

int flight__trigger(struct flight_recorder *fr, const char *reason, int say)
{
	__u64 now = mono_now_ns();

	if (fr->fo.max_dumps && fr->ndumps + fr->nfailed >= fr->fo.max_dumps) {
		fr->capped++;
		if (!fr->capped_said++ || say)
			pr_info("flight recorder: %s: --max-dumps %u reached, later "
				"triggers are counted, not written\n",
				reason, fr->fo.max_dumps);
		return 0;
	}
	if (fr->pending) {
		fr->coalesced++; /* the dump on its way will hold this one too */
		fr->since_coalesced++;
		if (say)
			pr_info("flight recorder: %s joins the dump on its way (triggered "
				"by %s)\n",
				reason, fr->reason);
		return 1;
	}
	if (now < fr->cooldown_until) {
		fr->cooled++;
		fr->since_cooled++;
		if (say)
			pr_info("flight recorder: %s ignored: %.1fs of --trigger-cooldown "
				"are left since the last dump (counted: %llu ignored so far)\n",
				reason, (fr->cooldown_until - now) / 1e9,
				(unsigned long long)fr->cooled);
		return 0;
	}
	fr->pending = 1;
	fr->due_ns = now + fr->fo.after_ns;
	snprintf(fr->reason, sizeof(fr->reason), "%s", reason);
	fr->cause = fr->firing;
	pr_info("flight recorder: triggered by %s%s\n", reason,
		fr->fo.after_ns ? ", writing after --trigger-after" : "");
	return 1;
}

/* REC ends a wait or call written open for the next dump: its open copy goes (the same start). */
static void supersede_extra(struct flight_recorder *fr, const struct bs_hdr *rec)
{
	for (size_t i = 0; i < fr->nextra; i++) {
		const struct bs_hdr *x = fr->extra[i];

		if (x->type == rec->type && x->tid == rec->tid && x->ts == rec->ts) {
			free(fr->extra[i]);
			memmove(fr->extra + i, fr->extra + i + 1,
				(--fr->nextra - i) * sizeof(*fr->extra));
			return;
		}
	}
}

int flight__observe(struct flight_recorder *fr, const struct bs_hdr *rec)
{
	const struct flight_trigger *t;
	char why[160];

	if (fr->nextra)
		supersede_extra(fr, rec);

	/* Out of memory here costs names in a later dump, never the recording. */
	flight_meta__observe(fr->fm, rec, trace_writer__seq(fr->w));
	if (flight_cumul__observe(fr->fc, rec))
		return 1;
	if (flight_hang__watches(fr->hang, rec->type))
		flight_hang__observe(fr->hang, rec);
	t = flight_triggers__match(fr->ft, rec);
	if (!t)
		return 0;
	snprintf(why, sizeof(why), "%s (pid %u tid %u)", t->text, rec->pid, rec->tid);
	fr->firing = *rec;
	flight__trigger(fr, why, 0);
	fr->firing.type = 0;
	return 0;
}

int flight__due(const struct flight_recorder *fr, __u64 now)
{
	return fr->pending && now >= fr->due_ns;
}

/*
 * Where the window ends: now, or while a dump is pending, its cut (the trigger plus
 * --trigger-after): what a trigger does before the dump is written (the hang trigger reads the
 * job's threads, up to a second or more on a loaded machine) never pushes out what led to it.
 */
static __u64 window_end(const struct flight_recorder *fr, __u64 now)
{
	return fr->pending && fr->due_ns < now ? fr->due_ns : now;
}

void flight__tick(struct flight_recorder *fr, __u64 now)
{
	__u64 end = window_end(fr, now);
	__u64 start = end > fr->fo.window_ns ? end - fr->fo.window_ns : 0;

	trace_writer__tick(fr->w, now);
	/* Keep at least DUR: the oldest goes once the next one alone reaches back to DUR. */
	while (fr->n >= 2 && chunk_at(fr, 1)->info.first_ts <= start)
		drop_oldest(fr);
	while (fr->ndrops && fr->drops[fr->drop_head].last_ts < start) {
		fr->drop_head = (fr->drop_head + 1) % SIZE_DROPS_MAX;
		fr->ndrops--;
	}
	/* The oldest chunk changed (DUR or SIZE): what only older records needed goes. */
	if (fr->n && chunk_at(fr, 0)->info.first_ts != fr->pruned_at) {
		fr->pruned_at = chunk_at(fr, 0)->info.first_ts;
		flight_meta__prune(fr->fm, fr->pruned_at);
		flight_cumul__prune(fr->fc, fr->pruned_at);
	}
	while (fr->n > 1 && held(fr) > fr->budget) /* the metadata grew */
		drop_for_size(fr, now);
}

__u64 flight__bytes(const struct flight_recorder *fr)
{
	return held(fr);
}

/* A field of a stored chunk's header (little-endian). */
static __u32 le32_at(const __u8 *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (__u32)p[3] << 24;
}

/*
 * An interval (rec_decoder.span) that began before the window and ends in it: a wait or call
 * of the incident, which readers clip to the dump's start (a read blocked for longer than the
 * window that ended as the trigger fired was not in the dump).
 */
static int ends_in_window(const struct bs_hdr *h, __u64 from)
{
	const struct rec_decoder *d = family__decoder(h->type);
	__u64 dur;

	if (!d || !d->span || !h->ts || h->size < sizeof(*h) + sizeof(dur) || h->size < d->min_size)
		return 0;
	memcpy(&dur, (const __u8 *)h + sizeof(*h), sizeof(dur));
	return h->ts + dur >= from;
}

/*
 * The oldest chunk of the window begins before it: its records from FROM on go to W again
 * (state records whatever their time: they may be what later events need).
 */
static int append_cut(struct flight_recorder *fr, struct trace_writer *w,
		      const struct stored_chunk *s, __u64 from)
{
	__u32 raw_len = s->info.nrecords ? le32_at(s->data + 20) : 0;
	__u32 flags = le32_at(s->data + 4), i;
	struct trace_chunk_dec *dec = trace_chunk_dec__new();
	__u8 *raw = malloc(raw_len ? raw_len : 1);
	__u64 *words = malloc(TRACE_CODEC_MAX_WORDS * 8);
	size_t n;
	int err = -ENOMEM;

	if (!dec || !raw || !words)
		goto out;
	n = ZSTD_decompress(raw, raw_len, s->data + sizeof(struct bs_chunk_hdr),
			    s->len - sizeof(struct bs_chunk_hdr));
	err = -EIO;
	if (ZSTD_isError(n) || n != raw_len)
		goto out;
	err = trace_chunk_dec__begin(dec, flags, raw, raw_len, s->info.nrecords);
	for (i = 0; i < s->info.nrecords && !err; i++) {
		const struct bs_hdr *h = (const void *)words;
		__u32 nwords;

		err = trace_chunk_dec__next(dec, words, &nwords);
		if (!err && (h->ts >= from || flight_meta__is_state(fr->fm, h->type) ||
			     ends_in_window(h, from)))
			err = trace_writer__append(w, h);
	}
out:
	trace_chunk_dec__free(dec);
	free(raw);
	free(words);
	return err;
}

/* The window's records: the first chunk from FROM on, then every later chunk whole. */
static int append_window(struct flight_recorder *fr, struct trace_writer *w, size_t first,
			 __u64 from)
{
	int err = 0;

	for (size_t i = first; i < fr->n && !err; i++) {
		const struct stored_chunk *s = chunk_at(fr, i);

		if (s->info.first_ts < from)
			err = append_cut(fr, w, s, from);
		else
			err = trace_writer__append_chunk(w, s->data, s->len, &s->info);
	}
	return err;
}

static __u64 size_dropped_since(const struct flight_recorder *fr, __u64 from)
{
	__u64 n = 0;

	for (size_t i = 0; i < fr->ndrops; i++) {
		const struct size_drop *d = &fr->drops[(fr->drop_head + i) % SIZE_DROPS_MAX];

		if (d->last_ts >= from)
			n += d->nrecords;
	}
	return n;
}

static int write_dump(struct flight_recorder *fr, const char *path, __u64 now, __u64 from,
		      __u64 *nrec)
{
	struct trace_meta m = *fr->meta;
	struct trace_writer *w;
	char options[1024], cause[96];
	size_t first = 0;
	__u64 lost = size_dropped_since(fr, from);
	long nmeta;
	int err;

	while (first < fr->n && chunk_at(fr, first)->info.last_ts < from)
		first++;
	snprintf(cause, sizeof(cause), " trigger_event=0x%x:%u:%u:%llu", fr->cause.type,
		 fr->cause.pid, fr->cause.tid, (unsigned long long)fr->cause.ts);
	snprintf(options, sizeof(options),
		 "%s%sflight_recorder=%s dump=%u trigger=\"%s\"%s window_start_ns=%llu "
		 "window_end_ns=%llu size_dropped_records=%llu triggers_coalesced=%llu "
		 "triggers_in_cooldown=%llu",
		 m.options ? m.options : "", m.options ? " " : "", fr->fo.text, fr->ndumps + 1,
		 fr->reason, fr->cause.type ? cause : "", (unsigned long long)from,
		 (unsigned long long)now, (unsigned long long)lost,
		 (unsigned long long)fr->since_coalesced, (unsigned long long)fr->since_cooled);
	m.options = options;
	w = trace_writer__open(path, &m, fr->force ? TRACE_WRITER_FORCE : 0, &err);
	if (!w)
		return err;
	nmeta = flight_meta__write(fr->fm, w, from,
				   first < fr->n ? chunk_at(fr, first)->info.seq
						 : trace_writer__seq(fr->w));
	err = nmeta < 0 ? (int)nmeta : 0;
	if (!err && lost) {
		/* Never silent: what SIZE cut out of this window, before its first record. */
		struct bs_loss l = { .cause = BS_LOSS_FLIGHT, .count = lost };

		l.h = (struct bs_hdr){ .type = BS_REC_LOSS, .size = sizeof(l), .ts = from };
		err = trace_writer__append(w, &l.h);
	}
	/* The families' state at the window's start that its records need (nccl's comms). */
	if (!err && fr->prologue)
		err = fr->prologue(fr->prologue_arg, from, append_to, w);
	if (!err)
		err = append_window(fr, w, first, from);
	/* What the trigger saw (the hang trigger's calls in flight): whatever its times. */
	for (size_t i = 0; !err && i < fr->nextra; i++)
		err = trace_writer__append(w, fr->extra[i]);
	if (!err) {
		/* Counting from the window's start (kept out of the chunks: flight_cumul.c). */
		long n = flight_cumul__write(fr->fc, w, from);

		err = n < 0 ? (int)n : 0;
	}
	*nrec = trace_writer__records(w);
	if (err) {
		trace_writer__free(w);
		return err;
	}
	return trace_writer__close(w, NULL);
}

int flight__dump(struct flight_recorder *fr)
{
	__u64 t0 = mono_now_ns(), now, from, nrec = 0, start = fr->meta->start.mono_ns;
	char path[4096];
	int err;

	if (!fr->pending)
		return 0;
	/* What is open now is part of the window: it becomes a chunk like the others. */
	err = trace_writer__flush(fr->w);
	now = mono_now_ns();
	from = window_end(fr, now);
	from = from > fr->fo.window_ns ? from - fr->fo.window_ns : 0;
	fr->pending = 0;
	if (from < start)
		from = start; /* the recording is younger than the window */
	flight_opts__dump_path(fr->output, fr->ndumps + fr->nfailed + 1, path, sizeof(path));
	if (!err)
		err = write_dump(fr, path, now, from, &nrec);
	if (err) {
		fr->nfailed++;
		pr_err("flight recorder: cannot write %s: %s%s\n", path, strerror(-err),
		       err == -EEXIST ? " (use --force to overwrite)" : "");
	} else {
		fr->ndumps++;
		pr_info("flight recorder: wrote %s: %.1f s, %llu records, "
			"%llu cut by SIZE, in %.0f ms\n",
			path, (now - from) / 1e9, (unsigned long long)nrec,
			(unsigned long long)size_dropped_since(fr, from),
			(mono_now_ns() - t0) / 1e6);
	}
	fr->since_coalesced = fr->since_cooled = 0;
	fr->cooldown_until = mono_now_ns() + fr->fo.cooldown_ns;
	drop_extra(fr);
	return err;
}

void flight__finish(struct flight_recorder *fr, size_t pump_peak)
{
	if (!fr)
		return;
	if (fr->pending)
		flight__dump(fr);
	pr_err("flight recorder: %u dumps written, %u failed; triggers: %llu "
	       "coalesced into a pending dump, %llu in cool-down, %llu over --max-dumps; "
	       "%llu records cut by SIZE; at most %.1f MiB held, and %.1f MiB of records waiting "
	       "for the recorder (the ring pump)\n",
	       fr->ndumps, fr->nfailed, (unsigned long long)fr->coalesced,
	       (unsigned long long)fr->cooled, (unsigned long long)fr->capped,
	       (unsigned long long)fr->dropped_total, fr->peak_bytes / 1048576.0,
	       pump_peak / 1048576.0);
}

__u32 flight__failed(const struct flight_recorder *fr)
{
	return fr ? fr->nfailed : 0;
}

void flight__free(struct flight_recorder *fr)
{
	if (!fr)
		return;
	trace_writer__free(fr->w);
	while (fr->n)
		drop_oldest(fr);
	free(fr->c);
	flight_meta__free(fr->fm);
	flight_cumul__free(fr->fc);
	flight_triggers__free(fr->ft);
	flight_hang__free(fr->hang);
	drop_extra(fr);
	free(fr->extra);
	free(fr);
}
