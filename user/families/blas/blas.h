/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * blas family: a CPU job's GEMMs in the BLAS library it maps (libblas, OpenBLAS, MKL): the
 * Fortran entry points (sgemm_, which Debian's torch calls for mm) and CBLAS's (cblas_sgemm),
 * with m, n, k, the transposes, leading dimensions and FLOPs. Record side in blas.c, the API
 * table in blas_api.c, the decoder in blas_decode.c. docs/BLAS.md for users.
 */
#ifndef BPFSIGHT_BLAS_H
#define BPFSIGHT_BLAS_H

#include "family.h"
#include "blas_records.h"
#include "ucall_api.h"

/* ucall_api.group of a blas API: its element type. */
enum blas_group { BLAS_GRP_S, BLAS_GRP_D, BLAS_GRP_C, BLAS_GRP_Z };

/* The keys of blas specs (blas_keys, blas_api.c). */
enum blas_key {
	BLAS_K_ORDER,
	BLAS_K_TRANSA,
	BLAS_K_TRANSB,
	BLAS_K_M,
	BLAS_K_N,
	BLAS_K_K,
	BLAS_K_LDA,
	BLAS_K_LDB,
	BLAS_K_LDC,
	BLAS_K_NR
};

extern const struct ucall_key blas_keys[BLAS_K_NR];
extern const struct ucall_table blas_table; /* blas_api.c */
extern const struct rec_decoder blas_decoders[];
extern const struct family_export blas_export; /* blas_export.c */
extern const struct family_sql blas_sql;       /* blas_sql.c */
struct report;
extern const struct report *const blas_reports[]; /* blas_report.c */
extern const struct family family_blas;		  /* blas.c */
struct family_verdict;
extern const struct family_verdict blas_verdict; /* blas_verdict.c */

/* A GEMM call read back: sizes and transposes as the library was given them. */
struct blas_gemm {
	__u64 have; /* 1ull << K_* */
	__s64 v[BLAS_K_NR];
	const struct ucall_api *api; /* NULL: a function of a newer table */
	__u64 flops;		     /* 2 m n k, x4 complex; 0: a size unknown */
};

/* 'N', 'T' or 'C' from a Fortran character (either case) or a CBLAS_TRANSPOSE; '?' else. */
char blas__trans_char(__s64 t);

struct trace_model;
/* The file process PID's GEMMs were found in (its path), NULL when the trace does not say. */
const char *blas__library(const struct trace_model *m, __u32 pid);
/*
 * What PATH's name says the library is: "OpenBLAS", "MKL", "BLIS", "ATLAS", "vendor BLAS",
 * "reference" (netlib's, installed as libblas.so.3 with no other name), "" unknown.
 */
const char *blas__impl(const char *path);
int blas__is_reference(const char *path);

/* Parse REC (a BS_REC_BLAS_CALL of at least sizeof(struct bs_ucall)) into G. */
void blas_gemm__parse(const struct bs_hdr *rec, struct blas_gemm *g);

struct family_ledger;
extern const struct family_ledger blas_ledger; /* blas_ledger.c: the ledger's feed */
#endif					       /* BPFSIGHT_BLAS_H */
