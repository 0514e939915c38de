// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The column encoder's planner (trace_columns_plan.h): from a type's first records in a
 * chunk, how many columns it gets, whether its ts is coded as the interval's end, which u64
 * word (if any) is the time since the end of the same thread's previous record, and for each
 * column whether it holds values, deltas against the type's previous record or deltas against
 * the same thread's previous record.
 *
 * A column's coding is weighed by the order-0 entropy of its varint bytes under each coding,
 * not by their count: zstd's entropy stage is what codes those bytes, and a value that
 * repeats (an errno, a CPU) costs a few bits however many bytes its varint takes.
 */
#include <endian.h>
#include <string.h>
#include "trace_codec.h"
#include "trace_columns_plan.h"

#define VARIABLE_HEAD 32 /* bytes in columns of a record type whose length varies */
#define GAP_MIN_MATCH 16 /* records whose gap word the gap predicts exactly, at least */

static __u32 rec_size(const __u8 *r)
{
	return col_get64(r) >> 16 & 0xffff;
}

static __u32 zigzag32(__u32 d)
{
	return (d << 1) ^ (__u32)((__s32)d >> 31);
}

static unsigned int varint_len(__u64 v)
{
	return v ? (unsigned int)(64 - __builtin_clzll(v) + 6) / 7 : 1;
}

/* Columns: every field of the shortest record, or only the head of records that vary. */
static __u32 plan_ncols(const struct col_type *t)
{
	__u32 ncols = t->min_size / 4 < TRACE_COLUMNS_MAX ? t->min_size / 4 : TRACE_COLUMNS_MAX;

	if (t->max_size != t->min_size && ncols > VARIABLE_HEAD / 4)
		ncols = VARIABLE_HEAD / 4;
	return ncols;
}

/* The end in place of ts when its deltas take fewer varint bytes than ts's. */
static int plan_end(const struct col_type *t)
{
	__u64 prev_ts = 0, prev_end = 0, cost_ts = 0, cost_end = 0;
	size_t off;

	if (t->min_size < 32)
		return 0;
	for (off = 0; off < t->samples.len; off += rec_size(t->samples.p + off)) {
		const __u8 *r = t->samples.p + off;
		__u64 ts = col_get64(r + 16), end = ts + col_get64(r + 24);

		cost_ts += varint_len(trace_zigzag(ts - prev_ts));
		cost_end += varint_len(trace_zigzag(end - prev_end));
		prev_ts = ts;
		prev_end = end;
	}
	return cost_end < cost_ts;
}

/*
 * The u64 word (4 or more, in the columns) that most often equals the time since the end of
 * the same thread's previous record, when it does in most records that have such a record;
 * else 0.
 */
static __u32 plan_gap(const struct col_type *t, __u32 ncols, struct col_threads *tab)
{
	__u32 match[TRACE_COLUMNS_MAX / 2] = { 0 }, seen = 0, best = 0, w;
	size_t off;

	if (!tab || t->min_size < 40 || ncols < 10)
		return 0;
	col_threads_clear(tab);
	for (off = 0; off < t->samples.len; off += rec_size(t->samples.p + off)) {
		const __u8 *r = t->samples.p + off;
		struct col_thread *s = col_thread_of(tab, col_field(r, 3));
		__u32 size = rec_size(r);
		__u64 ts = col_get64(r + 16);

		if (s->has_end) {
			seen++;
			for (w = 4; 2 * w + 2 <= ncols && 8 * (w + 1) <= size; w++)
				match[w] += col_get64(r + 8 * w) == ts - s->end;
		}
		s->end = ts + col_get64(r + 24);
		s->has_end = 1;
	}
	col_threads_clear(tab);
	for (w = 4; w < TRACE_COLUMNS_MAX / 2; w++)
		if (match[w] > match[best])
			best = w;
	return best && match[best] >= GAP_MIN_MATCH && 2 * match[best] > seen ? best : 0;
}

static void count_varint(__u16 *h, __u32 x)
{
	while (x >= 0x80) {
		h[(x & 0x7f) | 0x80]++;
		x >>= 7;
	}
	h[x]++;
}

/* log2(x) for x >= 1, to within 0.09: the leading bit, then a straight line to the next. */
static double approx_log2(__u32 x)
{
	int e = 31 - __builtin_clz(x);

	return e + (double)x / (1u << e) - 1.0;
}

/* Order-0 entropy of the bytes counted in H, in bits. */
static double entropy_bits(const __u16 *h)
{
	double sum = 0;
	__u32 n = 0, i;

	for (i = 0; i < 256; i++)
		if (h[i]) {
			n += h[i];
			sum -= h[i] * approx_log2(h[i]);
		}
	return n ? n * approx_log2(n) + sum : 0;
}

/*
 * Count each column's varint bytes under each coding, over the samples; with SLOTS_ONLY (a
 * new key) only per slot: the other codings do not depend on the key. Fields 4 and 5 are
 * not counted: they stay deltas.
 */
static void count_modes(const struct col_type *t, plan_hist *hist, int slots_only,
			struct col_threads *tab)
{
	static const struct col_thread none;
	const struct col_plan *pl = &t->plan;
	__u32 prev[TRACE_COLUMNS_MAX] = { 0 }, v[TRACE_COLUMNS_MAX], j, i;
	__u32 stride = (t->nsamples + PLAN_COUNTED - 1) / PLAN_COUNTED;
	size_t off;

	for (j = 0; j < pl->ncols; j++) {
		if (!slots_only) {
			memset((*hist)[j][MODE_RAW], 0, sizeof((*hist)[j][MODE_RAW]));
			memset((*hist)[j][MODE_DELTA], 0, sizeof((*hist)[j][MODE_DELTA]));
		}
		memset((*hist)[j][MODE_THREAD], 0, sizeof((*hist)[j][MODE_THREAD]));
	}
	if (tab)
		col_threads_clear(tab);
	for (off = 0, i = 0; off < t->samples.len; off += rec_size(t->samples.p + off), i++) {
		const __u8 *r = t->samples.p + off;
		__u32 size = rec_size(r), n = size / 4 < pl->ncols ? size / 4 : pl->ncols;
		struct col_thread *s = tab ? col_slot_of(pl, tab, r, n) : NULL;
		const struct col_thread *ps = s ? s : &none;

		col_load_fields(pl, s, r, n, size, v);
		for (j = 0; j < n && i % stride == 0; j++) {
			if (j == 4 || j == 5)
				continue;
			if (!slots_only) {
				count_varint((*hist)[j][MODE_RAW], v[j]);
				count_varint((*hist)[j][MODE_DELTA], zigzag32(v[j] - prev[j]));
			}
			if (tab)
				count_varint((*hist)[j][MODE_THREAD], zigzag32(v[j] - ps->prev[j]));
		}
		memcpy(prev, v, (size_t)n * 4);
		if (s)
			col_thread_note(s, v, n, r, size);
	}
	if (tab)
		col_threads_clear(tab);
}

/* Bits each column's varints would take, raw and as deltas (not per slot: that depends). */
struct col_costs {
	double raw[TRACE_COLUMNS_MAX], delta[TRACE_COLUMNS_MAX];
};

static void base_costs(const struct col_plan *pl, plan_hist *hist, struct col_costs *c)
{
	__u32 j;

	for (j = 0; j < pl->ncols; j++) {
		c->raw[j] = entropy_bits((*hist)[j][MODE_RAW]);
		c->delta[j] = entropy_bits((*hist)[j][MODE_DELTA]);
	}
}

/*
 * Each column's coding, from C and HIST's per-slot counts, into PL's rawmask and threadmask;
 * returns the bits they would take. The timestamp's halves (fields 4, 5) stay deltas: a
 * half's cost says little about the whole. Field 0 (type and size) and the key field cannot
 * be coded per slot: the decoder reads them first. A column is coded per slot only when that
 * saves a tenth: it costs a lookup per record.
 */
static double choose_modes(struct col_plan *pl, const struct col_costs *c, plan_hist *hist,
			   int slots)
{
	double total = 0, best, slot;
	__u32 j;

	pl->rawmask = pl->threadmask = 0;
	for (j = 0; j < pl->ncols; j++) {
		if (j == 4 || j == 5)
			continue; /* the same under every plan */
		best = c->delta[j];
		if (c->raw[j] < best) {
			pl->rawmask |= 1u << j;
			best = c->raw[j];
		}
		if (slots && j != 0 && j != pl->key) {
			slot = entropy_bits((*hist)[j][MODE_THREAD]);
			if (slot < 0.9 * best) {
				pl->rawmask &= ~(1u << j);
				pl->threadmask |= 1u << j;
				best = slot;
			}
		}
		total += best;
	}
	return total;
}

/*
 * Fields that could key the slots instead of the tid: present in every sample, past the
 * timestamp, few distinct values (a syscall's number, a call's function): the two whose
 * values cost the fewest bits, more than none.
 */
static void key_candidates(const struct col_type *t, const struct col_costs *c, __u32 *cand)
{
	double cost[2] = { 0, 0 };
	__u32 j, n = t->plan.ncols < t->min_size / 4 ? t->plan.ncols : t->min_size / 4;

	cand[0] = cand[1] = 0;
	for (j = 6; j < n; j++) {
		if (c->raw[j] <= 0 || c->raw[j] > 6.0 * t->nsamples)
			continue;
		if (!cand[0] || c->raw[j] < cost[0]) {
			cand[1] = cand[0];
			cost[1] = cost[0];
			cand[0] = j;
			cost[0] = c->raw[j];
		} else if (!cand[1] || c->raw[j] < cost[1]) {
			cand[1] = j;
			cost[1] = c->raw[j];
		}
	}
}

void col_plan_type(struct col_type *t, plan_hist *hist, struct col_threads *tab)
{
	struct col_plan *pl = &t->plan, best;
	struct col_costs c = { { 0 } };
	__u32 cand[2], i;
	double cost, best_cost;

	memset(pl, 0, sizeof(*pl));
	pl->ncols = plan_ncols(t);
	pl->key = 3;
	if (t->chain)
		pl->flags |= TRACE_COLUMNS_END | TRACE_COLUMNS_CHAIN;
	else if (plan_end(t))
		pl->flags |= TRACE_COLUMNS_END;
	pl->gapword = plan_gap(t, pl->ncols, tab);
	if (pl->gapword)
		pl->flags |= TRACE_COLUMNS_GAP;
	count_modes(t, hist, 0, tab);
	base_costs(pl, hist, &c);
	best_cost = choose_modes(pl, &c, hist, !!tab);
	best = *pl;
	/* The gap is the same thread's: with it, the slots stay keyed by the tid. */
	key_candidates(t, &c, cand);
	for (i = 0; i < 2 && tab && !pl->gapword && cand[i]; i++) {
		pl->key = cand[i];
		count_modes(t, hist, 1, tab);
		cost = choose_modes(pl, &c, hist, 1);
		if (cost < best_cost) {
			best_cost = cost;
			best = *pl;
		}
	}
	*pl = best;
	if (pl->threadmask)
		pl->flags |= TRACE_COLUMNS_THREAD;
	if (!(pl->flags & (TRACE_COLUMNS_THREAD | TRACE_COLUMNS_GAP)))
		pl->key = 0;
}

int col_planes_measure(const __u32 *nlen, __u32 *plane_len)
{
	__u32 k = TRACE_COLUMNS_NPLANES, above = 0;
	size_t bytes = 0;

	while (k--) { /* plane k holds a byte of each varint longer than k bytes */
		above += nlen[k];
		plane_len[k] = above;
		bytes += above;
	}
	/* plane 0 counts the values: planes pay when there are half as many bytes again */
	return plane_len[0] >= 64 && 2 * (bytes - plane_len[0]) >= plane_len[0];
}

void col_planes_scatter(const __u8 *src, size_t len, __u8 *dst, const __u32 *plane_len)
{
	__u8 *plane[TRACE_COLUMNS_NPLANES];
	__u32 k;
	size_t i;

	plane[0] = dst;
	for (k = 1; k < TRACE_COLUMNS_NPLANES; k++)
		plane[k] = plane[k - 1] + plane_len[k - 1];
	for (i = 0, k = 0; i < len; i++) {
		*plane[k]++ = src[i];
		k = src[i] & 0x80 ? k + 1 : 0;
	}
}
