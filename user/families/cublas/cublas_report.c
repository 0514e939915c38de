// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cublas reports: cublas_sum (nsys's API summary, api_sum.h) and gemm_sum, the GEMMs by
 * shape and types with their FLOPs and, where the gpu family recorded the kernels a GEMM
 * launched, their GPU time and the TFLOP/s achieved. A call cuBLAS refused is counted, as an
 * error, and did no math: it has no FLOPs (cublas_decode.h), in TFLOP/s or in MFU.
 *
 * A GEMM's kernels are the ones whose launching call (gpu_op.call_ts, a cudaLaunchKernel or
 * cuLaunchKernelEx that cuBLAS made) began on the GEMM's thread inside the GEMM's call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api_sum.h"
#include "array.h"
#include "cublas_decode.h"
#include "gpu_decode.h"
#include "gpu_records.h"
#include "table.h"

/*
 * cublas_sum: nsys's API summary (report/api_sum.c) with a column of its own, as nccl_sum's:
 * the calls that failed, a status other than CUBLAS_STATUS_SUCCESS (cublasStatus_t is an int:
 * the upper half of rax is not its).
 */
static void cublas_fn_add(void *errors, const struct bs_hdr *rec)
{
	const struct bs_ucall *u = (const void *)rec;

	*(__u64 *)errors += (__s32)u->ret != CUBLAS_STATUS_SUCCESS;
}

static void cublas_fn_set(struct table *t, int col, const void *errors)
{
	table__set_u64(t, col, *(const __u64 *)errors);
}

static const struct table_col cublas_fn_cols[] = { { "errors", "Errors", TABLE_U64 } };

static const struct api_sum_extra cublas_fn_extra = {
	.size = sizeof(__u64),
	.add = cublas_fn_add,
	.cols = cublas_fn_cols,
	.ncols = 1,
	.set = cublas_fn_set,
};

static void *cublas_sum__new(void)
{
	return api_sum__new_extra(&cublas_table, &cublas_fn_extra);
}

static const struct report cublas_sum = {
	.name = "cublas_sum",
	.desc = "cuBLAS API Summary",
	.new = cublas_sum__new,
	.add = api_sum__add,
	.emit = api_sum__emit,
	.free = api_sum__free,
};

/* ---- gemm_sum ---- */

/* A row's key: what makes two GEMMs the same work. */
struct gemm_key {
	__u64 m, n, k, batch;
	__s32 transa, transb, atype, btype, ctype, compute;
};

struct gemm_row {
	struct gemm_key key;
	__u32 fn; /* the function of its first call */
	__u64 count, errors, flops, api_ns, gpu_ns, kernels;
};

/* A call, or a kernel by its launching call's start, on a thread. */
struct gemm_span {
	__u32 pid, tid;
	__u64 ts, dur;
	size_t row; /* calls: its row; kernels: unused */
};

struct gemm_sum {
	struct gemm_row *rows;
	size_t nrows, cap_rows;
	struct gemm_span *calls, *kernels;
	size_t ncalls, cap_calls, nkernels, cap_kernels;
	int err;
};

static void *gemm_sum__new(void)
{
	return calloc(1, sizeof(struct gemm_sum));
}

static int span_push(struct gemm_span **v, size_t *n, size_t *cap, struct gemm_span s)
{
	if (array__grow((void **)v, *n, cap, sizeof(**v)))
		return -ENOMEM;
	(*v)[(*n)++] = s;
	return 0;
}

/* The row of K: rows are few (a model's GEMM shapes), a scan finds it. */
static long gemm_row_of(struct gemm_sum *st, const struct gemm_key *k, __u32 fn)
{
	for (size_t i = 0; i < st->nrows; i++)
		if (!memcmp(&st->rows[i].key, k, sizeof(*k)))
			return (long)i;
	if (array__grow((void **)&st->rows, st->nrows, &st->cap_rows, sizeof(*st->rows)))
		return -ENOMEM;
	memset(&st->rows[st->nrows], 0, sizeof(st->rows[0]));
	st->rows[st->nrows].key = *k;
	st->rows[st->nrows].fn = fn;
	return (long)st->nrows++;
}

static void gemm_sum__add_call(struct gemm_sum *st, const struct bs_hdr *rec,
			       const struct trace_model *m)
{
	const struct bs_ucall *u = (const void *)rec;
	struct gemm_key k;
	struct cublas_gemm g;
	long row;

	if (u->depth || !cublas__gemm(trace_model__walk(m, &family_cublas), rec, &g) ||
	    !g.has_shape)
		return;
	memset(&k, 0, sizeof(k));
	k = (struct gemm_key){ g.m,	 g.n,	  g.k,	   g.batch, g.transa,
			       g.transb, g.atype, g.btype, g.ctype, g.compute };
	row = gemm_row_of(st, &k, u->fn);
	if (row < 0 || span_push(&st->calls, &st->ncalls, &st->cap_calls,
				 (struct gemm_span){ rec->pid, rec->tid, rec->ts, u->dur, row })) {
		st->err = -ENOMEM;
		return;
	}
	st->rows[row].count++;
	st->rows[row].errors += g.ret != CUBLAS_STATUS_SUCCESS;
	st->rows[row].flops += g.flops;
	st->rows[row].api_ns += u->dur;
}

static void gemm_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct gemm_sum *st = vst;
	struct gpu_op op;

	if (rec->type == BS_REC_CUBLAS_CALL && rec->size >= sizeof(struct bs_ucall)) {
		gemm_sum__add_call(st, rec, m);
		return;
	}
	if (rec->type != BS_REC_GPU_KERNEL || !gpu_op__read(rec, &op) || !op.call_ts)
		return;
	if (span_push(&st->kernels, &st->nkernels, &st->cap_kernels,
		      (struct gemm_span){ op.pid, op.tid, op.call_ts, op.dur, 0 }))
		st->err = -ENOMEM;
}

static int span_cmp(const void *x, const void *y)
{
	const struct gemm_span *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return a->ts < b->ts ? -1 : a->ts > b->ts;
}

/* Each kernel to the GEMM call on its thread whose time holds its launch (calls at depth 0
 * of one thread do not overlap). */
static void gemm_sum__link(struct gemm_sum *st)
{
	size_t c = 0;

	if (!st->ncalls || !st->nkernels)
		return; /* (qsort is given no NULL array) */
	qsort(st->calls, st->ncalls, sizeof(*st->calls), span_cmp);
	qsort(st->kernels, st->nkernels, sizeof(*st->kernels), span_cmp);
	for (size_t i = 0; i < st->nkernels; i++) {
		const struct gemm_span *kn = &st->kernels[i];

		while (c < st->ncalls &&
		       (span_cmp(&st->calls[c], kn) < 0 &&
			(st->calls[c].pid != kn->pid || st->calls[c].tid != kn->tid ||
			 st->calls[c].ts + st->calls[c].dur < kn->ts)))
			c++;
		if (c < st->ncalls && st->calls[c].pid == kn->pid && st->calls[c].tid == kn->tid &&
		    st->calls[c].ts <= kn->ts && kn->ts <= st->calls[c].ts + st->calls[c].dur) {
			st->rows[st->calls[c].row].gpu_ns += kn->dur;
			st->rows[st->calls[c].row].kernels++;
		}
	}
}

static int row_cmp(const void *x, const void *y)
{
	const struct gemm_row *a = x, *b = y;

	if (a->gpu_ns != b->gpu_ns)
		return a->gpu_ns < b->gpu_ns ? 1 : -1;
	if (a->flops != b->flops)
		return a->flops < b->flops ? 1 : -1;
	return memcmp(&a->key, &b->key, sizeof(a->key));
}

static const char *compute_short(__s32 c)
{
	const char *n = cublas__compute_name(c);

	if (n && !strncmp(n, "CUBLAS_COMPUTE_", 15))
		return n + 15;
	return n && !strncmp(n, "CUDA_", 5) ? cublas__type_short(c) : (n ? n : "?");
}

static int gemm_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	enum {
		NAME,
		TRANS,
		M,
		N,
		K,
		BATCH,
		AT,
		BT,
		CT,
		COMP,
		COUNT,
		ERRORS,
		FLOPS,
		API,
		GPU,
		KERN,
		TFLOPS,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[NAME] = { "name", "Name", TABLE_STR },
		[TRANS] = { "trans", "Trans", TABLE_STR },
		[M] = { "m", "M", TABLE_S64 },
		[N] = { "n", "N", TABLE_S64 },
		[K] = { "k", "K", TABLE_S64 },
		[BATCH] = { "batch", "Batch", TABLE_S64 },
		[AT] = { "a_type", "A", TABLE_STR },
		[BT] = { "b_type", "B", TABLE_STR },
		[CT] = { "c_type", "C", TABLE_STR },
		[COMP] = { "compute_type", "Compute", TABLE_STR },
		[COUNT] = { "count", "Count", TABLE_U64 },
		[ERRORS] = { "errors", "Errors", TABLE_U64 },
		[FLOPS] = { "flops", "FLOPs", TABLE_U64 },
		[API] = { "api_ns", "API Time (ns)", TABLE_U64 },
		[GPU] = { "gpu_ns", "GPU Time (ns)", TABLE_U64 },
		[KERN] = { "kernels", "Kernels", TABLE_U64 },
		[TFLOPS] = { "tflops", "TFLOP/s", TABLE_DOUBLE, .precision = 2 },
	};
	struct gemm_sum *st = vst;

	if (st->err)
		return st->err;
	gemm_sum__link(st);
	if (st->nrows)
		qsort(st->rows, st->nrows, sizeof(*st->rows), row_cmp);
	table__add_cols(t, cols, NCOLS);
	for (size_t i = 0; i < st->nrows; i++) {
		const struct gemm_row *r = &st->rows[i];
		const struct ucall_api *api = ucall_table__api(&cublas_table, r->fn);
		char trans[3] = {
			"NTC?"[r->key.transa >= 0 && r->key.transa < 3 ? r->key.transa : 3],
			"NTC?"[r->key.transb >= 0 && r->key.transb < 3 ? r->key.transb : 3], 0
		};

		table__row(t);
		table__set_str(t, NAME, api ? api->name : "?");
		table__set_str(t, TRANS, trans);
		table__set_s64(t, M, (__s64)r->key.m); /* as called: a refused call's may be < 0 */
		table__set_s64(t, N, (__s64)r->key.n);
		table__set_s64(t, K, (__s64)r->key.k);
		table__set_s64(t, BATCH, (__s64)r->key.batch);
		table__set_str(t, AT, cublas__type_short(r->key.atype));
		table__set_str(t, BT, cublas__type_short(r->key.btype));
		table__set_str(t, CT, cublas__type_short(r->key.ctype));
		table__set_str(t, COMP, compute_short(r->key.compute));
		table__set_u64(t, COUNT, r->count);
		table__set_u64(t, ERRORS, r->errors);
		table__set_u64(t, FLOPS, r->flops);
		table__set_u64(t, API, r->api_ns);
		if (!r->kernels)
			continue; /* no kernel recorded: no GPU time, no rate */
		table__set_u64(t, GPU, r->gpu_ns);
		table__set_u64(t, KERN, r->kernels);
		if (r->gpu_ns)
			table__set_double(t, TFLOPS, (double)r->flops / (double)r->gpu_ns / 1e3);
	}
	return table__err(t);
}

static void gemm_sum__free(void *vst)
{
	struct gemm_sum *st = vst;

	if (!st)
		return;
	free(st->rows);
	free(st->calls);
	free(st->kernels);
	free(st);
}

static const struct report gemm_sum = {
	.name = "gemm_sum",
	.desc = "cuBLAS GEMMs by shape and types: FLOPs, GPU time, TFLOP/s",
	.new = gemm_sum__new,
	.add = gemm_sum__add,
	.emit = gemm_sum__emit,
	.free = gemm_sum__free,
};

extern const struct report cublas_gemm_step_sum; /* cublas_mfu.c */

const struct report *const cublas_reports[] = { &cublas_sum, &gemm_sum, &cublas_gemm_step_sum,
						NULL };
