// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Every GEMM form of cuBLAS 13, and a cublasLtMatmul with its descriptors, called through the
 * real libcublas and libcublasLt (tests/e2e/test_cublas.py). Without a GPU cublasCreate_v2
 * fails and each GEMM, given that NULL handle, returns CUBLAS_STATUS_NOT_INITIALIZED: the
 * probes fire and the arguments arrive. cuBLASLt's layouts and matmul descriptors are made on
 * the host, so they succeed.
 *
 *   cublas_gemm N
 *
 * Runs the sequence N times. GEMM form i (its order below) is called with m = 100 + i,
 * n = 200 + i, k = 300 + i, lda = 400 + i, ldb = 500 + i, ldc = 600 + i and (batched forms)
 * batch = 2 + i, transa = T and transb = N; the _64 form's m is 5000000000 (past 32 bits).
 * The cublasLtMatmul: transa T, m 64, n 32, k 128, batch 4, bf16 in and out, compute 32F,
 * stream 0x5000, workspace 4096 bytes. Then a cublasSnrm2_v2, a function traced by name only.
 * Output: "pid P", then "done STATUS" (the first GEMM's).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cublas_v2.h>
#include <cublasLt.h>

#define M(i)   (100 + (i))
#define N(i)   (200 + (i))
#define K(i)   (300 + (i))
#define LDA(i) (400 + (i))
#define LDB(i) (500 + (i))
#define LDC(i) (600 + (i))
#define BAT(i) (2 + (i))
#define T      CUBLAS_OP_T, CUBLAS_OP_N

/* cublas_api.h declares it for C++ only (__half): the same ABI, with void pointers. */
cublasStatus_t cublasHgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
			   int n, int k, const void *alpha, const void *a, int lda, const void *b,
			   int ldb, const void *beta, void *c, int ldc);

static float buf[64];

static int gemms(cublasHandle_t h)
{
	const float *f = buf;
	float *fo = buf;
	const double *d = (const double *)buf;
	const cuComplex *c = (const cuComplex *)buf;
	cuComplex *co = (cuComplex *)buf;
	const cuDoubleComplex *z = (const cuDoubleComplex *)buf;
	const void *hf = buf;
	void *vo = buf;
	const float *fa[1] = { buf };
	float *const fc[1] = { buf };
	const void *va[1] = { buf };
	void *const vc[1] = { buf };
	cublasOperation_t ops[3] = { CUBLAS_OP_N, CUBLAS_OP_N, CUBLAS_OP_N };
	int dims[3] = { 8, 8, 8 }, sizes[3] = { 1, 1, 1 };
	int first;

	first = cublasSgemm_v2(h, T, M(0), N(0), K(0), f, f, LDA(0), f, LDB(0), f, fo, LDC(0));
	cublasDgemm_v2_64(h, T, 5000000000ll, N(1), K(1), d, d, LDA(1), d, LDB(1), d, (double *)buf,
			  LDC(1));
	cublasCgemm_v2(h, T, M(2), N(2), K(2), c, c, LDA(2), c, LDB(2), c, co, LDC(2));
	cublasZgemm_v2(h, T, M(3), N(3), K(3), z, z, LDA(3), z, LDB(3), z, (cuDoubleComplex *)buf,
		       LDC(3));
	cublasHgemm(h, T, M(4), N(4), K(4), hf, hf, LDA(4), hf, LDB(4), hf, vo, LDC(4));
	cublasSgemmBatched(h, T, M(5), N(5), K(5), f, fa, LDA(5), fa, LDB(5), f, fc, LDC(5),
			   BAT(5));
	cublasSgemmStridedBatched(h, T, M(6), N(6), K(6), f, f, LDA(6), 1000, f, LDB(6), 2000, f,
				  fo, LDC(6), 3000, BAT(6));
	cublasSgemmEx(h, T, M(7), N(7), K(7), f, buf, CUDA_R_16F, LDA(7), buf, CUDA_R_16F, LDB(7),
		      f, buf, CUDA_R_32F, LDC(7));
	cublasGemmEx(h, T, M(8), N(8), K(8), f, buf, CUDA_R_16BF, LDA(8), buf, CUDA_R_16BF, LDB(8),
		     f, buf, CUDA_R_16BF, LDC(8), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	cublasGemmBatchedEx(h, T, M(9), N(9), K(9), f, va, CUDA_R_16F, LDA(9), va, CUDA_R_16F,
			    LDB(9), f, vc, CUDA_R_16F, LDC(9), BAT(9), CUBLAS_COMPUTE_32F_FAST_16F,
			    CUBLAS_GEMM_DEFAULT);
	cublasGemmStridedBatchedEx(h, T, M(10), N(10), K(10), f, buf, CUDA_R_8F_E4M3, LDA(10), 10,
				   buf, CUDA_R_8F_E5M2, LDB(10), 20, f, buf, CUDA_R_16BF, LDC(10),
				   30, BAT(10), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	cublasGemmStridedBatchedEx_64(h, T, M(11), N(11), K(11), f, buf, CUDA_R_32F, LDA(11), 10,
				      buf, CUDA_R_32F, LDB(11), 20, f, buf, CUDA_R_32F, LDC(11), 30,
				      BAT(11), CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
	cublasSgemmGroupedBatched(h, ops, ops, dims, dims, dims, f, fa, dims, fa, dims, f, fc, dims,
				  3, sizes);
	cublasGemmGroupedBatchedEx(h, ops, ops, dims, dims, dims, f, va, CUDA_R_16F, dims, va,
				   CUDA_R_16F, dims, f, vc, CUDA_R_16F, dims, 2, sizes,
				   CUBLAS_COMPUTE_32F);
	cublasCgemm3m(h, T, M(14), N(14), K(14), c, c, LDA(14), c, LDB(14), c, co, LDC(14));
	return first;
}

/* op(A) = A^T: A is k x m; B k x n; C and D m x n; all bf16, 4 in a batch. */
static void lt_matmul(void)
{
	cublasLtMatrixLayout_t a = NULL, b = NULL, c = NULL, d = NULL;
	cublasLtMatmulDesc_t desc = NULL;
	cublasLtHandle_t lt = NULL;
	cublasOperation_t op_t = CUBLAS_OP_T;
	int batch = 4;

	cublasLtCreate(&lt);
	cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, 128, 64, 128);
	cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, 128, 32, 128);
	cublasLtMatrixLayoutCreate(&c, CUDA_R_16BF, 64, 32, 64);
	cublasLtMatrixLayoutCreate(&d, CUDA_R_16BF, 64, 32, 64);
	cublasLtMatrixLayoutSetAttribute(a, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
					 sizeof(batch));
	cublasLtMatrixLayoutSetAttribute(b, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
					 sizeof(batch));
	cublasLtMatrixLayoutSetAttribute(c, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
					 sizeof(batch));
	cublasLtMatrixLayoutSetAttribute(d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
					 sizeof(batch));
	cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
	cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof(op_t));
	cublasLtMatmul(lt, desc, buf, buf, a, buf, b, buf, buf, c, buf, d, NULL, buf, 4096,
		       (cudaStream_t)0x5000);
	cublasLtMatmulDescDestroy(desc);
	cublasLtMatrixLayoutDestroy(a);
	cublasLtMatrixLayoutDestroy(b);
	cublasLtMatrixLayoutDestroy(c);
	cublasLtMatrixLayoutDestroy(d);
	if (lt)
		cublasLtDestroy(lt);
}

int main(int argc, char **argv)
{
	cublasHandle_t h = NULL;
	int n, first = 0;

	if (argc != 2 || (n = atoi(argv[1])) < 1) {
		fprintf(stderr, "usage: %s N\n", argv[0]);
		return 2;
	}
	printf("pid %d\n", getpid());
	fflush(stdout);
	if (cublasCreate_v2(&h) != CUBLAS_STATUS_SUCCESS)
		h = NULL;
	for (int i = 0; i < n; i++) {
		float norm = 0;

		first = gemms(h);
		lt_matmul();
		cublasSnrm2_v2(h, 10, buf, 1, &norm); /* one of the rest: name, status, handle */
	}
	if (h)
		cublasDestroy_v2(h);
	printf("done %d\n", first);
	return 0;
}
