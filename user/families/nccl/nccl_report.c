// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The nccl reports: nccl_sum and nccl_comm_sum, over calls read by nccl_decode.c (and its
 * walk, for the communicators).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api_sum.h"
#include "nccl_decode.h"
#include "stats_math.h"
#include "hmap.h"
#include "table.h"
#include "time_sum.h"

/*
 * nccl_sum: per function, the calls the application made (depth 0: ncclBcast's inner
 * ncclBroadcast is not counted twice), nsys's API summary (report/api_sum.c) with two columns
 * of its own: the bytes the collectives moved and the calls that failed. Host-side call
 * times: a collective's GPU time is in the gpu family's kernels (ncclDevKernel_*).
 */
struct nccl_fn {
	__u64 bytes, errors;
	int has_bytes;
};

static void nccl_fn_add(void *state, const struct bs_hdr *rec)
{
	struct nccl_fn *f = state;
	struct nccl_call c;
	__u64 bytes;
	int known;

	nccl_call__parse(rec, &c);
	if (!c.ok)
		f->errors++;
	bytes = nccl_call__bytes(&c, &known);
	if (nccl_call__is_op(&c) && known) {
		f->bytes += bytes;
		f->has_bytes = 1;
	}
}

static void nccl_fn_set(struct table *t, int col, const void *state)
{
	const struct nccl_fn *f = state;

	if (f->has_bytes)
		table__set_u64(t, col, f->bytes);
	table__set_u64(t, col + 1, f->errors);
}

static void nccl_sum_note(struct table *t, const __u32 *fns, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct ucall_api *api = ucall_table__api(&nccl_table, fns[i]);

		if (api && (api->flags & NCCL_F_GLOO)) {
			table__add_note(t, "gloo collective: ProcessGroupGloo::nextTag, where each "
					   "gloo collective takes its tag: the count is the "
					   "collectives', the times nextTag's, not theirs "
					   "(nccl_stragglers compares the ranks' entries); gloo "
					   "work: its work made, gloo work done: its end on the "
					   "rank, where merge aligns the ranks");
			return;
		}
	}
}

static const struct table_col nccl_fn_cols[] = {
	{ "bytes", "Bytes", TABLE_U64 },
	{ "errors", "Errors", TABLE_U64 },
};

static const struct api_sum_extra nccl_fn_extra = {
	.size = sizeof(struct nccl_fn),
	.add = nccl_fn_add,
	.cols = nccl_fn_cols,
	.ncols = 2,
	.set = nccl_fn_set,
	.note = nccl_sum_note,
};

static void *nccl_sum__new(void)
{
	return api_sum__new_extra(&nccl_table, &nccl_fn_extra);
}

static const struct report nccl_sum = {
	.name = "nccl_sum",
	.desc = "NCCL API Summary (host-side call time)",
	.new = nccl_sum__new,
	.add = api_sum__add,
	.emit = api_sum__emit,
	.free = api_sum__free,
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
