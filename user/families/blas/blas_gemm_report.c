// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * blas_gemm_sum: a CPU job's GEMMs by function and shape (as the library was asked them, the
 * column-major m, n, k), with their FLOPs and the GFLOP/s achieved: a CPU GEMM runs inside
 * its call, so the calls' time is its compute time (the application's calls, depth 0), and
 * the library that ran them (blas_library.c): the reference BLAS is why a GEMM runs at 4
 * GFLOP/s where OpenBLAS runs it at 100.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "blas.h"
#include "human.h"
#include "report.h"
#include "table.h"

struct gemm_row {
	__u32 fn;
	__s64 m, n, k;
	char trans[3];
	const char *lib; /* the file the GEMMs ran in (the model's string), NULL: unknown */
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
	key.lib = blas__library(m, rec->pid);
	for (size_t i = 0; i < st->n && !r; i++)
		if (st->v[i].fn == key.fn && st->v[i].m == key.m && st->v[i].n == key.n &&
		    st->v[i].k == key.k && !strcmp(st->v[i].trans, key.trans) &&
		    !strcmp(st->v[i].lib ?: "", key.lib ?: ""))
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
	enum {
		C_NAME,
		C_TRANS,
		C_M,
		C_N,
		C_K,
		C_COUNT,
		C_FLOPS,
		C_TOTAL,
		C_GFLOPS,
		C_LIB,
		C_IMPL,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_NAME] = { "name", "Name", TABLE_STR },
		[C_TRANS] = { "trans", "Trans", TABLE_STR },
		[C_M] = { "m", "M", TABLE_S64 },
		[C_N] = { "n", "N", TABLE_S64 },
		[C_K] = { "k", "K", TABLE_S64 },
		[C_COUNT] = { "count", "Count", TABLE_U64 },
		[C_FLOPS] = { "flops", "FLOPs", TABLE_U64 },
		[C_TOTAL] = { "total_ns", "Total Time (ns)", TABLE_U64 },
		[C_GFLOPS] = { "gflops", "GFLOP/s", TABLE_DOUBLE, .precision = 2 },
		[C_LIB] = { "library", "Library", TABLE_STR },
		[C_IMPL] = { "blas", "BLAS", TABLE_STR },
	};
	struct gemm_rows *st = vst;

	if (st->err)
		return st->err;
	if (st->n)
		qsort(st->v, st->n, sizeof(*st->v), row_cmp);
	table__add_cols(t, cols, NCOLS);
	for (size_t i = 0; i < st->n; i++) {
		const struct gemm_row *r = &st->v[i];
		const struct ucall_api *api = ucall_table__api(&blas_table, r->fn);

		table__row(t);
		table__set_str(t, C_NAME, api ? api->name : "?");
		table__set_str(t, C_TRANS, r->trans);
		table__set_s64(t, C_M, r->m);
		table__set_s64(t, C_N, r->n);
		table__set_s64(t, C_K, r->k);
		table__set_u64(t, C_COUNT, r->count);
		table__set_u64(t, C_FLOPS, r->flops);
		table__set_u64(t, C_TOTAL, r->ns);
		if (r->ns)
			table__set_double(t, C_GFLOPS, (double)r->flops / (double)r->ns);
		table__set_str(t, C_LIB, r->lib ? human__base(r->lib) : "");
		table__set_str(t, C_IMPL, blas__impl(r->lib));
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
