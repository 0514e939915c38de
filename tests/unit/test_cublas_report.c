// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cublas family, reading side: GEMM call records built by hand with the words the x86-64 ABI
 * puts there (a C int's register has garbage in its upper half), decoded as dump shows them,
 * and cublas_sum, gemm_sum and gemm_step_sum over a trace of them written with the real trace
 * writer (what `bpfsight stats` runs). A call cuBLAS refused (a status other than SUCCESS; a
 * negative size is one reason) is counted, as an error, and did no math: no FLOPs, nothing in
 * TFLOP/s or MFU. Its sign-extended size once wrapped into FLOPs, TFLOP/s and MFU.
 */
#include <errno.h>
#include <stdio.h>
#include "commands.h"
#include "cublas_decode.h"
#include "stats.h"
#include "trace_build.h"
#include "ucall_fn.h"

#define PID 100

/* An int argument's word: x86-64 leaves the upper half of its register undefined. */
#define I(v) (0xdead0000ull << 32 | (__u32)(v))

/* cublasStatus_t values (cublas_api.h). */
#define NOT_INITIALIZED 1
#define INVALID_VALUE	7

static char tmp_dir[64];

/* A depth-0 call of FN that returned RET; no stack copy (no leading dimensions). */
static struct bs_ucall call(const char *fn, __u64 ts, __u64 dur, __s32 ret)
{
	struct bs_ucall u = {
		.h = { .type = BS_REC_CUBLAS_CALL,
		       .size = sizeof(u),
		       .pid = PID,
		       .tid = PID,
		       .ts = ts },
		.dur = dur,
		/* cublasStatus_t is an int: the upper half of rax is whatever was there. */
		.ret = (__s64)(0x7777ull << 32 | (__u32)ret),
		.fn = ucall_fn(&cublas_table, fn),
	};

	u.args[0] = 0x1; /* the handle */
	return u;
}

/* cublasSgemm_v2(handle, N, N, m, n, k, ...). */
static struct bs_ucall sgemm(__u64 ts, __s32 ret, int m, int n, int k)
{
	struct bs_ucall u = call("cublasSgemm_v2", ts, 1000, ret);

	u.args[1] = I(0);
	u.args[2] = I(0);
	u.args[3] = I(m);
	u.args[4] = I(n);
	u.args[5] = I(k);
	return u;
}

#define FLOPS (2ull * 64 * 32 * 16)

/*
 * Three cublasSgemm_v2 of one process, 1000 ns each: 64x32x16 that ran, the same refused
 * (NOT_INITIALIZED, as every call without a GPU is), one with m = -5 refused (INVALID_VALUE);
 * and a cublasSetStream_v2 refused.
 */
static const struct bs_ucall *calls(size_t *n)
{
	static struct bs_ucall r[4];

	r[0] = sgemm(100000, 0, 64, 32, 16);
	r[1] = sgemm(200000, NOT_INITIALIZED, 64, 32, 16);
	r[2] = sgemm(300000, INVALID_VALUE, -5, 32, 16);
	r[3] = call("cublasSetStream_v2", 400000, 10, INVALID_VALUE);
	*n = sizeof(r) / sizeof(r[0]);
	return r;
}

/* What dump shows: the refused calls' sizes as called (-5), their status, no FLOPs. */
static void test_decode_failed_gemm(void)
{
	const struct bs_ucall *r;
	struct event ev;
	struct tb b;
	size_t n;

	if (!ASSERT_EQ(tb_open(&b, NULL, "cublas"), 0, "open"))
		return;
	r = calls(&n);
	for (size_t i = 0; i < n; i++)
		tb_put(&b, &r[i]);
	if (ASSERT_EQ(tb_decode(&b, &r[0], &ev), 1, "the GEMM that ran")) {
		ASSERT_ARG_STR(&ev, "status", "CUBLAS_STATUS_SUCCESS");
		ASSERT_ARG_S64(&ev, "m", 64);
		ASSERT_ARG_U64(&ev, "flops", FLOPS);
	}
	if (ASSERT_EQ(tb_decode(&b, &r[1], &ev), 1, "a refused GEMM")) {
		ASSERT_ARG_STR(&ev, "status", "CUBLAS_STATUS_NOT_INITIALIZED");
		ASSERT_ARG_S64(&ev, "m", 64);
		ASSERT_NO_ARG(&ev, "flops");
	}
	if (ASSERT_EQ(tb_decode(&b, &r[2], &ev), 1, "a GEMM refused for m = -5")) {
		ASSERT_ARG_STR(&ev, "status", "CUBLAS_STATUS_INVALID_VALUE");
		ASSERT_ARG_S64(&ev, "m", -5);
		ASSERT_ARG_S64(&ev, "n", 32);
		ASSERT_NO_ARG(&ev, "flops");
	}
	tb_close(&b, 0);
}

static void check_gemm_sum(const struct table *t)
{
	int ran = -1, neg = -1;

	if (!ASSERT_TRUE(t, "gemm_sum") || !ASSERT_EQ(table__nrows(t), 2, "a row per shape"))
		return;
	for (int i = 0; i < 2; i++)
		if (table__get_s64(t, i, table__col(t, "m")) == 64)
			ran = i;
		else if (table__get_s64(t, i, table__col(t, "m")) == -5)
			neg = i;
	if (!ASSERT_TRUE(ran >= 0 && neg >= 0, "the rows of m = 64 and m = -5"))
		return;
	ASSERT_EQ(U64_AT(t, ran, "count"), 2, "64x32x16: both calls");
	ASSERT_EQ(U64_AT(t, ran, "errors"), 1, "64x32x16: one refused");
	ASSERT_EQ(U64_AT(t, ran, "flops"), FLOPS, "64x32x16: the FLOPs of the one that ran");
	ASSERT_EQ(U64_AT(t, ran, "api_ns"), 2000, "64x32x16: both calls' time");
	ASSERT_EQ(U64_AT(t, neg, "count"), 1, "m = -5: the call");
	ASSERT_EQ(U64_AT(t, neg, "errors"), 1, "m = -5: refused");
	ASSERT_EQ(U64_AT(t, neg, "flops"), 0, "m = -5: no FLOPs");
	ASSERT_TRUE(!SET_AT(t, neg, "tflops"), "m = -5: no TFLOP/s");
}

static void check_cublas_sum(const struct table *t)
{
	int gemm = tb_row(t, "name", "cublasSgemm_v2", NULL, NULL);
	int set = tb_row(t, "name", "cublasSetStream_v2", NULL, NULL);

	if (!ASSERT_TRUE(gemm >= 0 && set >= 0, "cublas_sum's rows"))
		return;
	ASSERT_EQ(U64_AT(t, gemm, "count"), 3, "every GEMM call");
	ASSERT_EQ(U64_AT(t, gemm, "errors"), 2, "the GEMMs refused");
	ASSERT_EQ(U64_AT(t, set, "count"), 1, "cublasSetStream_v2");
	ASSERT_EQ(U64_AT(t, set, "errors"), 1, "cublasSetStream_v2 refused");
}

/* No steps: one row over the GEMMs' span, the one that ran: 1000 ns at 100 TFLOP/s. */
static void check_step_sum(const struct table *t)
{
	if (!ASSERT_TRUE(t, "gemm_step_sum") || !ASSERT_EQ(table__nrows(t), 1, "one row"))
		return;
	ASSERT_EQ(U64_AT(t, 0, "gemms"), 1, "the GEMM that ran");
	ASSERT_EQ(U64_AT(t, 0, "flops"), FLOPS, "its FLOPs");
	ASSERT_EQ(U64_AT(t, 0, "step_ns"), 1000, "over its time");
	ASSERT_NEAR(DBL_AT(t, 0, "mfu_pct"), 100.0 * FLOPS / 100e3 / 1000, 0.005,
		    "its time at peak over the span");
}

static void test_reports_count_failed_calls_without_flops(void)
{
	struct stats_opts o = { .reports = "cublas_sum,gemm_sum,gemm_step_sum",
				.fmt = STATS_FORMAT_JSON,
				.peak = "100" };
	const struct bs_ucall *r;
	struct stats *s = NULL;
	char path[128];
	struct tb b;
	int status;
	size_t n;

	snprintf(path, sizeof(path), "%s/cublas.bst", tmp_dir);
	if (!ASSERT_EQ(tb_open(&b, path, "cublas"), 0, "open"))
		return;
	r = calls(&n);
	for (size_t i = 0; i < n; i++)
		tb_put(&b, &r[i]);
	if (!ASSERT_EQ(tb_close(&b, 500000), 0, "close"))
		goto out;
	s = stats__collect_opts(path, &o, &status);
	if (!ASSERT_TRUE(s, "collect") || !ASSERT_EQ(status, EXIT_READ_OK, "status"))
		goto out;
	check_gemm_sum(stats__table(s, "gemm_sum"));
	check_cublas_sum(stats__table(s, "cublas_sum"));
	check_step_sum(stats__table(s, "gemm_step_sum"));
out:
	stats__free(s);
	unlink(path);
}

int main(void)
{
	if (tb_tmp_dir(tmp_dir, sizeof(tmp_dir)))
		return 1;
	RUN_TEST(test_decode_failed_gemm);
	RUN_TEST(test_reports_count_failed_calls_without_flops);
	rmdir(tmp_dir);
	return UNIT_EXIT();
}
