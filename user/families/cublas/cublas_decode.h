/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reading side of the cublas family, shared by its API table (the keys its specs name), its
 * decoder and walk (cublas_decode.c) and its reports: one call read through its compiled
 * argument spec, a GEMM's shape as the call or its cuBLASLt descriptors give it.
 */
#ifndef BPFSIGHT_CUBLAS_DECODE_H
#define BPFSIGHT_CUBLAS_DECODE_H

#include "cublas.h"
#include "hmap.h"

/* The keys of cublas specs (cublas_keys, cublas_api.c, says what each is). */
enum cublas_key {
	K_HANDLE,
	K_STREAM,
	K_TRANSA,
	K_TRANSB,
	K_M,
	K_N,
	K_K,
	K_LDA,
	K_LDB,
	K_LDC,
	K_BATCH,
	K_ATYPE,
	K_BTYPE,
	K_CTYPE,
	K_COMPUTE,
	K_ALGO,
	K_GROUPS,
	K_MODE,
	K_BYTES,
	K_LAYOUT,
	K_DESC,
	K_ADESC,
	K_BDESC,
	K_CDESC,
	K_DDESC,
	K_TYPE,
	K_ROWS,
	K_COLS,
	K_LD,
	K_SCALE,
	K_ATTR,
	K_VALUE,
	K_SIZE,
	K_NR,
};

extern const struct ucall_key cublas_keys[K_NR];

/* One call, its spec applied to its record. */
struct cublas_call {
	const struct bs_ucall *r;
	const struct ucall_api *api; /* NULL: a function of a newer table */
	__s32 ret;		     /* cublasStatus_t */
	__u64 have;		     /* 1ull << K_*: fields with a value */
	__u64 v[K_NR];
};

/* Parse REC (a BS_REC_CUBLAS_CALL of at least sizeof(struct bs_ucall)) into C. */
void cublas_call__parse(const struct bs_hdr *rec, struct cublas_call *c);

static inline int cublas_call__has(const struct cublas_call *c, int k)
{
	return !!(c->have & (1ull << k));
}

/*
 * A GEMM as the reports show it: from the call's arguments or its cuBLASLt descriptors. The
 * sizes are the call's signed ints, sign-extended (a refused call's may be negative).
 */
struct cublas_gemm {
	__u64 m, n, k, batch;
	__u64 lda, ldb, ldc; /* 0: not known (cuBLASLt: the layouts' ld) */
	__s32 transa, transb;
	__s32 atype, btype, ctype, compute; /* -1: not known */
	int has_shape;			    /* m n k batch are known (not a grouped GEMM's) */
	__s32 ret;			    /* the call's status */
	/*
	 * The math the call did, 2 m n k batch, x4 complex; 0: none, the call failed (ret), or
	 * not known: no shape, a size not positive, a product past 2^64.
	 */
	__u64 flops;
	__u64 stream;
	int have_stream;
};

/*
 * What the walk tracks per process: the stream each handle was given (cublasSetStream), and
 * cuBLASLt's matrix layouts and matmul descriptors as they were created and set, so that a
 * cublasLtMatmul's shape and types are read from the descriptors it was given.
 */
struct cublas_walk {
	struct hmap *streams; /* {pid, handle} -> __u64 stream */
	struct hmap *layouts; /* {pid, layout} -> struct cublas_layout */
	struct hmap *descs;   /* {pid, desc} -> struct cublas_desc */
	int err;
	int have_last;
	__u64 last_ts;
	__u32 last_pid, last_tid;
	struct cublas_gemm last; /* the GEMM of the record observed last, when is_gemm */
	int last_is_gemm;
};

/* The family's walk hooks (struct family.walk_*), over a struct cublas_walk. */
void *cublas_walk__new(void);
void cublas_walk__free(void *w);
void cublas_walk__observe(void *w, const struct bs_hdr *rec);

/*
 * The GEMM of REC (a cublas call record the walk W observed last, or any with W NULL: then
 * without cuBLASLt descriptors and streams): 1 and *G filled for a GEMM entry point, 0 else.
 */
int cublas__gemm(const struct cublas_walk *w, const struct bs_hdr *rec, struct cublas_gemm *g);

/* Names: cudaDataType_t ("CUDA_R_16BF"), cublasComputeType_t ("CUBLAS_COMPUTE_32F", or a
 * cudaDataType_t's name where an old caller passed one), cublasStatus_t. NULL: unknown. */
const char *cublas__type_name(__s32 t);
const char *cublas__compute_name(__s32 t);
const char *cublas__status_name(__s32 s);
/* Is T a complex cudaDataType_t (CUDA_C_*)? */
int cublas__type_complex(__s32 t);
/* Short names for tables: "bf16", "f32", "c64"...; "?" when unknown. */
const char *cublas__type_short(__s32 t);

#endif /* BPFSIGHT_CUBLAS_DECODE_H */
