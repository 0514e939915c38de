// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * blas_gemm_sum: a CPU job's GEMMs by function and shape (as the library was asked them, the
 * column-major m, n, k), with their FLOPs and the GFLOP/s achieved: a CPU GEMM runs inside
 * its call, so the calls' time is its compute time (the application's calls, depth 0).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "blas.h"
#include "report.h"
#include "table.h"

struct gemm_row {
	__u32 fn;
	__s64 m, n, k;
	char trans[3];
	__u64 count, flops, ns;
};

struct gemm_rows {
	struct gemm_row *v;
	size_t n, cap;
	int err;
};

static void *rows__new(void)
{
	return calloc(1, sizeof(struct gemm_rows));
}

static void rows__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_ucall *u = (const void *)rec;
	struct gemm_rows *st = vst;
	struct gemm_row key = { 0 }, *r = NULL;
	struct blas_gemm g;

	if (rec->type != BS_REC_BLAS_CALL || rec->size < sizeof(*u) || u->depth)
		return;
	blas_gemm__parse(rec, &g);
	if (!g.api || !g.flops)
		return;
	key.fn = u->fn;
	key.m = g.v[BLAS_K_M];
	key.n = g.v[BLAS_K_N];
	key.k = g.v[BLAS_K_K];
	key.trans[0] = blas__trans_char(g.v[BLAS_K_TRANSA]);
	key.trans[1] = blas__trans_char(g.v[BLAS_K_TRANSB]);
	for (size_t i = 0; i < st->n && !r; i++)
		if (st->v[i].fn == key.fn && st->v[i].m == key.m && st->v[i].n == key.n &&
		    st->v[i].k == key.k && !strcmp(st->v[i].trans, key.trans))
			r = &st->v[i];
	if (!r) {
		if (array__grow((void **)&st->v, st->n, &st->cap, sizeof(*st->v))) {
			st->err = -ENOMEM;
			return;
		}
		r = &st->v[st->n++];
		*r = key;
	}
	r->count++;
	r->flops += g.flops;
	r->ns += u->dur;
}

static int row_cmp(const void *x, const void *y)
{
	const struct gemm_row *a = x, *b = y;

	if (a->ns != b->ns)
		return a->ns < b->ns ? 1 : -1;
	return a->flops < b->flops ? 1 : a->flops > b->flops ? -1 : 0;
}

static int rows__emit(void *vst, const struct trace_model *m, struct table *t)
{
	struct gemm_rows *st = vst;
	int name, trans, cm, cn, ck, count, flops, ns, rate;

	if (st->err)
		return st->err;
	if (st->n)
		qsort(st->v, st->n, sizeof(*st->v), row_cmp);
	name = table__add_col(t, "name", "Name", TABLE_STR);
	trans = table__add_col(t, "trans", "Trans", TABLE_STR);
	cm = table__add_col(t, "m", "M", TABLE_S64);
	cn = table__add_col(t, "n", "N", TABLE_S64);
	ck = table__add_col(t, "k", "K", TABLE_S64);
	count = table__add_col(t, "count", "Count", TABLE_U64);
	flops = table__add_col(t, "flops", "FLOPs", TABLE_U64);
	ns = table__add_col(t, "total_ns", "Total Time (ns)", TABLE_U64);
	rate = table__add_col(t, "gflops", "GFLOP/s", TABLE_DOUBLE);
	table__set_precision(t, rate, 2);
	for (size_t i = 0; i < st->n; i++) {
		const struct gemm_row *r = &st->v[i];
		const struct ucall_api *api = ucall_table__api(&blas_table, r->fn);

		table__row(t);
		table__set_str(t, name, api ? api->name : "?");
		table__set_str(t, trans, r->trans);
		table__set_s64(t, cm, r->m);
		table__set_s64(t, cn, r->n);
		table__set_s64(t, ck, r->k);
		table__set_u64(t, count, r->count);
		table__set_u64(t, flops, r->flops);
		table__set_u64(t, ns, r->ns);
		if (r->ns)
			table__set_double(t, rate, (double)r->flops / (double)r->ns);
	}
	return table__err(t);
}

static void rows__free(void *vst)
{
	struct gemm_rows *st = vst;

	if (st)
		free(st->v);
	free(st);
}

const struct report blas_gemm_sum = {
	.name = "blas_gemm_sum",
	.desc = "CPU BLAS GEMMs by shape: FLOPs, time, GFLOP/s",
	.new = rows__new,
	.add = rows__add,
	.emit = rows__emit,
	.free = rows__free,
};
