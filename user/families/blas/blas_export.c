// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The blas family in the exports (export_model.h): its calls are slices on their threads, by
 * their style. Table: BPFSIGHT_BLAS, one row per CPU BLAS call (nsys has none): start, end,
 * globalTid, nameId, nestingLevel (bs_ucall.depth), and the GEMM's arguments as dump shows
 * them. callchainId: the call's stack (--stacks=blas).
 */
#include "blas.h"
#include "export_model.h"

static const struct ex_column blas_cols[] = {
	EX_UCALL_COLS_NO_CLASS, EXC_TEXT("ord"),	EX_GEMM_COLS, EXC_TEXT("dtype"),
	EXC_INT("flops"),	EXC_INT("callchainId"), { 0 },
};
static const struct ex_index blas_idx[] = { { "start", "start" }, { 0 } };
static const struct ex_table blas_calls = { "BPFSIGHT_BLAS", blas_cols, .indexes = blas_idx };

static const struct ex_table *const blas_tables[] = { &blas_calls, NULL };

static int blas_record(struct ex_sink *s, void *st, const struct bs_hdr *rec,
		       const struct event *ev)
{
	static const char *const cols[] = { "order", "trans", "m",   "n",     "k",
					    "lda",   "ldb",   "ldc", "dtype", "flops" };

	return ex_ucall_row(s, &blas_calls, rec, ev, -1, cols,
			    (int)(sizeof(cols) / sizeof(cols[0])));
}

/* The rows (EX_ROWS): the library process PID's GEMMs ran in, which the rule names. */
static void blas_process_keys(struct ex_sink *s, void *st, __u32 pid)
{
	const char *lib = blas__library(s->model, pid);

	(void)st;
	if (lib)
		ex_key(s, "blas_library", EX_V_TEXT(lib));
}

static const struct ex_rows blas_rows = {
	.process = blas_process_keys,
};

const struct family_export blas_export = {
	.tables = blas_tables,
	.record = blas_record,
	.rows = &blas_rows,
};
