/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * cublas family: cuBLAS and cuBLASLt API calls (handles and streams, every GEMM entry point
 * with its shape, types and FLOPs, cublasLtMatmul decoded from its descriptors), traced by
 * uprobes on libcublas/libcublasLt wherever they are mapped. Record side in cublas.c, the API
 * table in cublas_api.c, the decoder and the descriptor walk in cublas_decode.c, the reports
 * in cublas_report.c and cublas_mfu.c, the verdict's rule in cublas_verdict.c. docs/BLAS.md for
 * users.
 */
#ifndef BPFSIGHT_CUBLAS_H
#define BPFSIGHT_CUBLAS_H

#include "family.h"
#include "cublas_records.h"
#include "report.h"
#include "ucall_api.h"

/* ucall_api.group of a cublas API. */
enum cublas_group {
	CUBLAS_GRP_OTHER = 0,
	CUBLAS_GRP_HANDLE,    /* create, destroy, stream, math mode, workspace */
	CUBLAS_GRP_GEMM,      /* a cuBLAS GEMM entry point */
	CUBLAS_GRP_LT_MATMUL, /* cublasLtMatmul */
	CUBLAS_GRP_LT_DESC,   /* cuBLASLt's layouts and matmul descriptors */
};

/* ucall_api.flags of a cublas API: what the walk learns from it. */
#define CUBLAS_F_SET_STREAM	0x0001
#define CUBLAS_F_LAYOUT_CREATE	0x0002 /* *layout type rows cols ld (Create: out; Init: arg) */
#define CUBLAS_F_LAYOUT_SET	0x0004
#define CUBLAS_F_LAYOUT_DESTROY 0x0008
#define CUBLAS_F_DESC_CREATE	0x0010 /* *desc compute scale */
#define CUBLAS_F_DESC_SET	0x0020
#define CUBLAS_F_DESC_DESTROY	0x0040
#define CUBLAS_F_GROUPED	0x0080 /* shapes in arrays: not decoded */

#define CUBLAS_STATUS_SUCCESS 0
#define CUBLAS_OP_N	      0

extern const struct ucall_table cublas_table; /* cublas_api.c */
extern const struct rec_decoder cublas_decoders[];
extern const struct family_export cublas_export;    /* cublas_export.c */
extern const struct family_sql cublas_sql;	    /* cublas_sql.c */
extern const struct report *const cublas_reports[]; /* cublas_report.c */
extern const struct family family_cublas;	    /* cublas.c */
extern const struct family_verdict cublas_verdict;  /* cublas_verdict.c */

struct family_ledger;
extern const struct family_ledger cublas_ledger; /* cublas_ledger.c: the ledger's feed */
#endif						 /* BPFSIGHT_CUBLAS_H */
