// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A loop over the math libraries' GEMM entry points (bench_loop.h), for the cost per call of
 * the cublas and blas families (bench/RESULTS.md, "The math libraries"):
 *
 *   blas_loop [-m MS] [-r ROUNDS] [-o FILE] [gemmex|sgemm_]...
 *
 *   gemmex  cublasGemmEx on a NULL handle: cuBLAS returns CUBLAS_STATUS_NOT_INITIALIZED at
 *           once (no GPU needed), past the probe; 19 argument words, the 13 on the stack
 *           copied at return
 *   sgemm_  the reference libblas's sgemm_ with m = 0: it returns after its argument checks;
 *           the Fortran ints read through their pointers at entry
 */
#include <cublas_v2.h>
#include "bench_loop.h"

void sgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
	    const float *alpha, const float *a, const int *lda, const float *b, const int *ldb,
	    const float *beta, float *c, const int *ldc);

static float buf[16];

static long gemmex(long x)
{
	return cublasGemmEx(NULL, CUBLAS_OP_T, CUBLAS_OP_N, 64, 64, 64 + (int)(x & 1), buf, buf,
			    CUDA_R_16BF, 64, buf, CUDA_R_16BF, 64, buf, buf, CUDA_R_16BF, 64,
			    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

static long sgemm(long x)
{
	int m = 0, n = 4, k = 4, ld = 4;

	sgemm_("N", "N", &m, &n, &k, buf, buf, &ld, buf, &ld, buf, buf, &ld);
	return m + (x & 1);
}

int main(int argc, char **argv)
{
	static const struct bench_fn fns[] = {
		{ "gemmex", gemmex, (const void *)cublasGemmEx },
		{ "sgemm_", sgemm, (const void *)sgemm_ },
	};

	return bench_loop_main(argc, argv, fns, 2);
}
