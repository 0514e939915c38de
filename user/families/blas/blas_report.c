// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The blas report: blas_sum, the CPU BLAS calls by function (api_sum.h: nsys's columns). */
#include "api_sum.h"
#include "blas.h"

static void *blas_sum__new(void)
{
	return api_sum__new(&blas_table);
}

static const struct report blas_sum = {
	.name = "blas_sum",
	.desc = "CPU BLAS Summary",
	.new = blas_sum__new,
	.add = api_sum__add,
	.emit = api_sum__emit,
	.free = api_sum__free,
};

extern const struct report blas_gemm_sum; /* blas_gemm_report.c */

const struct report *const blas_reports[] = { &blas_sum, &blas_gemm_sum, NULL };
