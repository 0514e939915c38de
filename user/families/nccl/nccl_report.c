// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The nccl reports: nccl_sum and nccl_comm_sum, over calls read by nccl_decode.c (and its
 * walk, for the communicators).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nccl_decode.h"
#include "stats_math.h"
#include "hmap.h"
#include "table.h"
#include "time_sum.h"

/*
 * nccl_sum: per function, the calls the application made (depth 0: ncclBcast's inner
 * ncclBroadcast is not counted twice). Host-side call times: a collective's GPU time is in
 * the gpu family's kernels (ncclDevKernel_*).
 */
struct nccl_fn {
	struct samples samples;
	__u64 count, total, min, max, bytes, errors;
	int has_bytes;
};

struct nccl_sum {
	struct hmap *by_fn; /* {fn, 0} -> struct nccl_fn */
	int err;
};

static void *nccl_sum__new(void)
{
	struct nccl_sum *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->by_fn = hmap__new(sizeof(struct nccl_fn));
	if (!st->by_fn) {
		free(st);
		return NULL;
	}
	return st;
}

static void nccl_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct nccl_sum *st = vst;
	struct nccl_call c;
	struct nccl_fn *f;
	__u64 bytes;
	int known;

	if (rec->type != BS_REC_NCCL_CALL || rec->size < sizeof(struct bs_ucall))
		return;
	nccl_call__parse(rec, &c);
	if (c.r->depth)
		return;
	f = hmap__get(st->by_fn, (struct hkey){ c.r->fn, 0 }, 1);
	if (!f || samples__add(&f->samples, (double)c.r->dur, 1)) {
		st->err = -ENOMEM;
		return;
	}
	if (!f->count || c.r->dur < f->min)
		f->min = c.r->dur;
	if (c.r->dur > f->max)
		f->max = c.r->dur;
	f->count++;
	f->total += c.r->dur;
	if (!c.ok)
		f->errors++;
	bytes = nccl_call__bytes(&c, &known);
	if (nccl_call__is_op(&c) && known) {
		f->bytes += bytes;
		f->has_bytes = 1;
	}
}

struct nccl_sum_row {
	char name[48]; /* a copy: rows move while sorting */
	struct nccl_fn *f;
	__u32 fn;
};

static int nccl_sum_row_cmp(const void *a, const void *b)
{
	const struct nccl_sum_row *x = a, *y = b;

	/* nsys orders by total time, descending; ties by name keep the output stable. */
	if (x->f->total != y->f->total)
		return x->f->total < y->f->total ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void fn_name(__u32 fn, char *buf, size_t len)
{
	const struct ucall_api *api = ucall_table__api(&nccl_table, fn);

	if (api)
		snprintf(buf, len, "%s", ucall_api__shown(api));
	else
		snprintf(buf, len, "nccl_fn_%u", fn);
}

static int nccl_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	enum { C_BYTES = TIME_SUM_NCOLS, C_ERRORS, C_NAME, NCOLS };
	static const struct table_col cols[NCOLS] = {
		TIME_SUM_COLS("Num Calls"),
		[C_BYTES] = { "bytes", "Bytes", TABLE_U64 },
		[C_ERRORS] = { "errors", "Errors", TABLE_U64 },
		[C_NAME] = { "name", "Name", TABLE_STR },
	};
	struct nccl_sum_row *rows;
	struct nccl_sum *st = vst;
	size_t it = 0, nrows = 0;
	long double grand = 0;
	struct nccl_fn *f;
	struct hkey key;
	int err, gloo = 0;

	if (st->err)
		return st->err;
	rows = calloc(hmap__count(st->by_fn) + 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	while ((f = hmap__next(st->by_fn, &it, &key))) {
		rows[nrows].f = f;
		rows[nrows].fn = (__u32)key.a;
		fn_name((__u32)key.a, rows[nrows].name, sizeof(rows[nrows].name));
		grand += f->total;
		nrows++;
	}
	qsort(rows, nrows, sizeof(*rows), nccl_sum_row_cmp);

	table__add_cols(t, cols, NCOLS);
	for (size_t i = 0; i < nrows; i++) {
		const struct ucall_api *api = ucall_table__api(&nccl_table, rows[i].fn);

		f = rows[i].f;
		gloo |= api && (api->flags & NCCL_F_GLOO);
		table__row(t);
		time_sum__set(t, f->count, f->total, f->min, f->max, &f->samples, grand);
		if (f->has_bytes)
			table__set_u64(t, C_BYTES, f->bytes);
		table__set_u64(t, C_ERRORS, f->errors);
		table__set_str(t, C_NAME, rows[i].name);
	}
	if (gloo)
		table__add_note(
			t, "gloo collective: ProcessGroupGloo::nextTag, where each gloo collective "
			   "takes its tag: the count is the collectives', the times nextTag's, not "
			   "theirs (nccl_stragglers compares the ranks' entries)");
	err = table__err(t);
	free(rows);
	return err;
}

static void nccl_sum__free(void *vst)
{
	struct nccl_sum *st = vst;
	struct nccl_fn *f;
	size_t it = 0;

	if (!st)
		return;
	while ((f = hmap__next(st->by_fn, &it, NULL)))
		samples__free(&f->samples);
	hmap__free(st->by_fn);
	free(st);
}

static const struct report nccl_sum = {
	.name = "nccl_sum",
	.desc = "NCCL API Summary (host-side call time)",
	.new = nccl_sum__new,
	.add = nccl_sum__add,
	.emit = nccl_sum__emit,
	.free = nccl_sum__free,
};

/*
 * nccl_comm_sum: per communicator instance the walk knows (created by a traced init, or
 * first seen as an argument), its identity and the collective / point-to-point calls made
 * on it (depth 0). Rank and nranks learnt late (ncclCommUserRank after -p) count for the
 * whole row.
 */
struct nccl_comm_ops {
	__u64 ops, bytes, total;
};

struct nccl_comm_sum {
	struct nccl_walk *w;
	struct hmap *by_serial; /* {serial, 0} -> struct nccl_comm_ops */
	int err;
};

static void nccl_comm_sum__free(void *vst)
{
	struct nccl_comm_sum *st = vst;

	if (!st)
		return;
	nccl_walk__free(st->w);
	hmap__free(st->by_serial);
	free(st);
}

static void *nccl_comm_sum__new(void)
{
	struct nccl_comm_sum *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->w = nccl_walk__new();
	st->by_serial = hmap__new(sizeof(struct nccl_comm_ops));
	if (!st->w || !st->by_serial) {
		nccl_comm_sum__free(st);
		return NULL;
	}
	return st;
}

static void nccl_comm_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct nccl_comm_sum *st = vst;
	const struct nccl_ctx *ctx;
	struct nccl_comm_ops *o;
	__u64 bytes;
	int known;

	if (rec->type != BS_REC_NCCL_CALL || rec->size < sizeof(struct bs_ucall))
		return;
	nccl_walk__observe(st->w, rec);
	ctx = nccl_walk__ctx(st->w, rec);
	if (!ctx || !ctx->have_comm || st->w->call.r->depth || !nccl_call__is_op(&st->w->call))
		return;
	o = hmap__get(st->by_serial, (struct hkey){ ctx->comm.serial, 0 }, 1);
	if (!o) {
		st->err = -ENOMEM;
		return;
	}
	o->ops++;
	o->total += st->w->call.r->dur;
	bytes = nccl_call__bytes(&st->w->call, &known);
	o->bytes += bytes;
}

static int comm_cmp(const void *a, const void *b)
{
	const struct nccl_comm *x = *(const struct nccl_comm *const *)a;
	const struct nccl_comm *y = *(const struct nccl_comm *const *)b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

static int nccl_comm_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	enum {
		C_PID,
		C_COMM,
		C_RANK,
		C_NRANKS,
		C_UNIQUE_ID_HASH,
		C_OPERATIONS,
		C_BYTES,
		C_TOTAL,
		C_PARENT,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_PID] = { "pid", "PID", TABLE_U64 },
		[C_COMM] = { "comm", "Communicator", TABLE_STR },
		[C_RANK] = { "rank", "Rank", TABLE_S64 },
		[C_NRANKS] = { "nranks", "NRanks", TABLE_S64 },
		[C_UNIQUE_ID_HASH] = { "unique_id_hash", "Unique Id Hash", TABLE_STR },
		[C_OPERATIONS] = { "operations", "Operations", TABLE_U64 },
		[C_BYTES] = { "bytes", "Bytes", TABLE_U64 },
		[C_TOTAL] = { "total_ns", "Total Time (ns)", TABLE_U64 },
		[C_PARENT] = { "parent", "Parent", TABLE_STR },
	};
	struct nccl_comm_sum *st = vst;
	const struct nccl_comm_ops *o;
	struct nccl_comm **rows, *cm;
	size_t it = 0, nrows = 0;
	char buf[24];
	int err;

	if (st->err || st->w->err)
		return st->err ? st->err : st->w->err;
	rows = calloc(hmap__count(st->w->by_serial) + 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	while ((cm = hmap__next(st->w->by_serial, &it, NULL)))
		rows[nrows++] = cm;
	qsort(rows, nrows, sizeof(*rows), comm_cmp);

	table__add_cols(t, cols, NCOLS);
	for (size_t i = 0; i < nrows; i++) {
		cm = rows[i];
		o = hmap__get(st->by_serial, (struct hkey){ cm->serial, 0 }, 0);
		table__row(t);
		table__set_u64(t, C_PID, cm->pid);
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)cm->comm);
		table__set_str(t, C_COMM, buf);
		if (cm->rank >= 0)
			table__set_s64(t, C_RANK, cm->rank);
		if (cm->nranks >= 0)
			table__set_s64(t, C_NRANKS, cm->nranks);
		if (cm->have_hash) {
			snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)cm->id_hash);
			table__set_str(t, C_UNIQUE_ID_HASH, buf);
		}
		table__set_u64(t, C_OPERATIONS, o ? o->ops : 0);
		table__set_u64(t, C_BYTES, o ? o->bytes : 0);
		table__set_u64(t, C_TOTAL, o ? o->total : 0);
		if (cm->parent) {
			snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)cm->parent);
			table__set_str(t, C_PARENT, buf);
		}
	}
	err = table__err(t);
	free(rows);
	return err;
}

static const struct report nccl_comm_sum = {
	.name = "nccl_comm_sum",
	.desc = "NCCL Communicator Summary",
	.new = nccl_comm_sum__new,
	.add = nccl_comm_sum__add,
	.emit = nccl_comm_sum__emit,
	.free = nccl_comm_sum__free,
};

extern const struct report nccl_stragglers, nccl_rank_sum; /* nccl_rank_report.c */

const struct report *const nccl_reports[] = { &nccl_sum,      &nccl_comm_sum,	 &nccl_stragglers,
					      &nccl_rank_sum, &nccl_hang_report, NULL };
