// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * mem_peak: what was live at each (process, device)'s peak, by where it was allocated. The
 * peak is the most live bytes the records tell (mem_live.h), reached by one allocation: the
 * blocks allocated up to it and freed after it (or never) were live then. A row per (device,
 * site): the allocation's innermost Python line (mem_site.h), and when the trace has torch
 * ops, the innermost op on the allocating thread whose [ts, ts + dur) holds the allocation
 * (a column, so a line that runs several ops has a row per op). Devices by their peak,
 * largest first, and each device's rows by bytes.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "array.h"
#include "hmap.h"
#include "human.h"
#include "mem.h"
#include "mem_log.h"
#include "mem_report.h"
#include "mem_site.h"
#include "table.h"
#include "torch_records.h"

/* Ops walked back from an allocation before giving up on finding the one around it. */
#define OP_WALK_MAX 4096

struct op_span {
	__u64 ts, end;
	__u32 tid, name_id;
	__u8 depth;
};

struct peak_state {
	struct mem_log *log;
	struct op_span *ops;
	size_t nops, cap_ops;
	int err;
};

struct peak_row {
	__u32 dev, site, op;  /* op: its name's string id, 0 = none */
	double bytes, blocks; /* estimates where sampled blocks stand for others */
	__u64 sampled;	      /* sampled allocations behind them */
};

static void *peak__new(void)
{
	struct peak_state *st = calloc(1, sizeof(*st));

	if (st && !(st->log = mem_log__new())) {
		free(st);
		return NULL;
	}
	return st;
}

static void peak__free(void *vst)
{
	struct peak_state *st = vst;

	if (!st)
		return;
	mem_log__free(st->log);
	free(st->ops);
	free(st);
}

static void peak__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct peak_state *st = vst;
	const struct bs_torch_op *op = (const void *)rec;

	if (rec->type == BS_REC_MEM_ALLOC) {
		mem_log__add(st->log, rec, m);
		return;
	}
	/*
	 * An op's record comes when it ends, after the allocations inside it: one before the
	 * first allocation holds none (a trace of torch alone keeps nothing here).
	 */
	if (rec->type != BS_REC_TORCH_OP || st->err || !st->log->n)
		return;
	if (array__grow((void **)&st->ops, st->nops, &st->cap_ops, sizeof(*st->ops))) {
		st->err = -ENOMEM;
		return;
	}
	st->ops[st->nops++] = (struct op_span){ .ts = rec->ts,
						.end = rec->ts + op->dur,
						.tid = rec->tid,
						.name_id = op->name_id,
						.depth = op->depth };
}

/* By thread, then start; of ops that start together the outer (longer) first. */
static int op_cmp(const void *a, const void *b)
{
	const struct op_span *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;
}

/* The name of the innermost op of thread TID around TS, 0 when none. Ops sorted by op_cmp. */
static __u32 op_around(const struct peak_state *st, __u32 tid, __u64 ts)
{
	size_t lo = 0, hi = st->nops;

	/* The first op after (tid, ts): everything before it started on TID at TS or earlier. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct op_span *o = &st->ops[mid];

		if (o->tid < tid || (o->tid == tid && o->ts <= ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Back from the latest start: the first op still open at TS is the innermost. */
	for (size_t k = 0; lo > 0 && k < OP_WALK_MAX; k++) {
		const struct op_span *o = &st->ops[--lo];

		if (o->tid != tid)
			break;
		if (o->end > ts)
			return o->name_id;
		if (!o->depth) /* a top-level op over before TS: none before it is open either */
			break;
	}
	return 0;
}

/* The blocks live at each device's peak, summed by (device, site, op) into *ROWS. */
static int live_at_peaks(const struct peak_state *st, struct mem_sites *sites,
			 const struct trace_model *m, struct peak_row **rows, size_t *nrows)
{
	const struct mem_log *l = st->log;
	struct hmap *idx = hmap__new(sizeof(__u32));
	size_t cap = 0;
	int err = 0;

	*rows = NULL;
	*nrows = 0;
	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < l->n && !err; i++) {
		const struct mem_entry *e = &l->v[i];
		const struct mem_log_dev *d = &l->devs[e->dev];
		__u32 op, site, *at;

		if (!d->peak || i > d->peak_entry || e->free_seq <= d->peak_entry || !e->weight)
			continue;
		op = st->nops ? op_around(st, e->tid, e->ts) : 0;
		site = mem_sites__of(sites, m, e->stack);
		at = hmap__get(idx, (struct hkey){ (__u64)e->dev << 32 | site, op }, 1);
		if (!at) {
			err = -ENOMEM;
			break;
		}
		if (!*at) {
			if (array__grow((void **)rows, *nrows, &cap, sizeof(**rows))) {
				err = -ENOMEM;
				break;
			}
			(*rows)[*nrows] =
				(struct peak_row){ .dev = e->dev, .site = site, .op = op };
			*at = (__u32)++ * nrows;
		}
		(*rows)[*at - 1].bytes += mem_entry__bytes(e);
		(*rows)[*at - 1].blocks += e->weight;
		(*rows)[*at - 1].sampled += e->weight > 1;
	}
	hmap__free(idx);
	return err;
}

static const struct mem_log *sort_log;

/* Devices by their peak, largest first; a device's rows by bytes, largest first. */
static int row_cmp(const void *a, const void *b)
{
	const struct peak_row *x = a, *y = b;
	const struct mem_log_dev *dx = &sort_log->devs[x->dev], *dy = &sort_log->devs[y->dev];

	if (x->dev != y->dev) {
		if (dx->peak != dy->peak)
			return dx->peak > dy->peak ? -1 : 1;
		return x->dev < y->dev ? -1 : 1;
	}
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	return x->op < y->op ? -1 : x->op > y->op;
}

/*
 * A device whose allocator had more allocated than the recording saw (blocks from before); a
 * device none of whose blocks live at its peak was sampled (HAS_ROWS[i] 0): a peak of small
 * blocks, below what sampling resolves.
 */
static void peak_notes(const struct mem_log *l, const struct trace_model *m, const char *has_rows,
		       struct table *t)
{
	char dev[16], b1[32], b2[32];

	for (size_t i = 0; i < l->ndevs; i++) {
		const struct mem_log_dev *d = &l->devs[i];
		const char *proc = trace_model__process_name(m, d->pid);

		if (d->peak && !has_rows[i])
			table__add_note(
				t,
				"%s of %s (pid %u): none of the blocks live at its peak (%s) was "
				"sampled: they are small against --mem-sample-rate (its stacks are "
				"taken once per so many bytes); --stacks=mem:0 gives each its stack.",
				mem_device_name(d->device, dev, sizeof(dev)),
				proc ? proc : "process", d->pid,
				human__bytes((double)d->peak, b1, sizeof(b1)));

		if (d->peak_total <= d->peak)
			continue;
		table__add_note(
			t,
			"%s of %s (pid %u): its allocator's peak was %s allocated; the "
			"recording saw %s of it allocated at its own peak (rows above), the "
			"rest before it began.",
			mem_device_name(d->device, dev, sizeof(dev)), proc ? proc : "process",
			d->pid, human__bytes((double)d->peak_total, b1, sizeof(b1)),
			human__bytes((double)d->peak, b2, sizeof(b2)));
	}
}

static int peak__emit_for(void *vst, const struct trace_model *m, const struct report_ask *ask,
			  struct table *t)
{
	enum {
		C_WHO,
		C_SITE = C_WHO + MEM_WHO_NCOLS,
		C_OP = C_SITE + MEM_SITE_NCOLS,
		C_BYTES,
		C_BLOCKS,
		C_SAMPLED,
		C_PEAK_PCT,
		C_PEAK,
		C_PEAK_TS,
		C_STACK,
		NCOLS
	};
	/* the op column's option: the trace has torch's ops; the stack's: --group-by stack:N */
	enum { WITH_OPS = 1, WITH_STACK = 2 };
	static const struct table_col cols[NCOLS] = {
		MEM_WHO_COLS(C_WHO),
		MEM_SITE_COLS(C_SITE),
		[C_OP] = { "op", "Op", TABLE_STR, .when = WITH_OPS },
		[C_BYTES] = { "bytes", "Bytes (B)", TABLE_U64 },
		[C_BLOCKS] = { "blocks", "Blocks", TABLE_U64 },
		[C_SAMPLED] = { "sampled", "Sampled", TABLE_U64, TABLE_COL_MINOR },
		[C_PEAK_PCT] = { "peak_pct", "Of Peak (%)", TABLE_DOUBLE },
		[C_PEAK] = { "peak_bytes", "Peak (B)", TABLE_U64, TABLE_COL_MINOR },
		[C_PEAK_TS] = { "peak_ts", "Peak At (ns)", TABLE_U64,
				TABLE_COL_MINOR | TABLE_COL_TIMESTAMP },
		[C_STACK] = { "stack", "Stack", TABLE_STR, .when = WITH_STACK },
	};
	struct peak_state *st = vst;
	const struct mem_log *l = st->log;
	struct mem_sites *sites;
	struct peak_row *rows;
	size_t nrows;
	int err, c[NCOLS], unstacked = 0, sampled = 0;
	char *has_rows = calloc(l->ndevs + 1, 1);

	if (l->err || st->err)
		return l->err ? l->err : st->err;
	if (st->nops)
		qsort(st->ops, st->nops, sizeof(*st->ops), op_cmp);
	sites = mem_sites__new(mem_sites__stack_n(ask));
	if (!sites || !has_rows) {
		mem_sites__free(sites);
		free(has_rows);
		return -ENOMEM;
	}
	err = live_at_peaks(st, sites, m, &rows, &nrows);
	if (err) {
		mem_sites__free(sites);
		free(has_rows);
		return err;
	}
	sort_log = l;
	if (nrows)
		qsort(rows, nrows, sizeof(*rows), row_cmp);
	sort_log = NULL;
	table__add_cols_when(t, cols, NCOLS,
			     (st->nops ? WITH_OPS : 0) | (mem_sites__stack_n(ask) ? WITH_STACK : 0),
			     c);
	for (size_t i = 0; i < nrows; i++) {
		const struct mem_log_dev *d = &l->devs[rows[i].dev];

		has_rows[rows[i].dev] = 1;
		table__row(t);
		mem_who__set(t, c[C_WHO], m, d->pid, d->device);
		unstacked |= mem_site__set(t, c[C_SITE], sites, rows[i].site, m, MEM_NO_STACK);
		if (c[C_OP] >= 0 && rows[i].op)
			table__set_str(t, c[C_OP], trace_model__string(m, rows[i].op));
		if (c[C_STACK] >= 0)
			mem_site__set_stack(t, c[C_STACK], sites, rows[i].site);
		table__set_u64(t, c[C_BYTES], (__u64)llround(rows[i].bytes));
		table__set_u64(t, c[C_BLOCKS], (__u64)llround(rows[i].blocks));
		if (rows[i].sampled)
			table__set_u64(t, c[C_SAMPLED], rows[i].sampled);
		sampled |= rows[i].sampled != 0;
		table__set_double(t, c[C_PEAK_PCT], 100.0 * rows[i].bytes / d->peak);
		table__set_u64(t, c[C_PEAK], d->peak);
		table__set_u64(t, c[C_PEAK_TS], d->peak_ts);
	}
	free(rows);
	mem_sites__free(sites);
	mem_site_notes(t, unstacked, MEM_NO_STACK_ALLOC);
	if (sampled)
		table__add_note(t, MEM_SAMPLED_NOTE);
	peak_notes(l, m, has_rows, t);
	free(has_rows);
	return table__err(t);
}

static int peak__emit(void *vst, const struct trace_model *m, struct table *t)
{
	return peak__emit_for(vst, m, &(struct report_ask){ 0 }, t);
}

const struct report mem_peak = {
	.name = "mem_peak",
	.desc = "Memory Live at Each Peak, by Line and Op",
	.new = peak__new,
	.add = peak__add,
	.emit = peak__emit,
	.emit_for = peak__emit_for,
	.free = peak__free,
	.group_by = mem_site_groups,
};
