// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The blas family's API table: the GEMMs of the CPU BLAS a process maps (the reference
 * libblas, OpenBLAS and MKL export these names). An entry's index is bs_ucall.fn in trace
 * files: APPEND ONLY, never reorder or remove.
 *
 * The Fortran entry points take every argument by reference: '^' fields, whose 4 bytes are
 * read at entry (ucall_spec.h). Their 13th argument, ldc, is past the 12 words the probe
 * keeps: not shown. CBLAS passes sizes by value and alpha/beta in xmm registers for the real
 * types (no argument word), by pointer for the complex ones (ldc is then the 14th word: read
 * from the stack-argument copy). Every spec is compiled when bpfsight is built
 * (tools/check_specs.c).
 *
 * args, in blas_keys: order (CBLAS: 101 row-major, 102 column-major), transa, transb (Fortran:
 * 'N', 'T', 'C'; CBLAS: 111, 112, 113), m, n, k, lda, ldb, ldc (C ints).
 */
#include "blas.h"

#define FORTRAN "^transa:u8 ^transb:u8 ^m ^n ^k - - ^lda - ^ldb"
#define CBLAS	"order transa transb m n k - lda - ldb - ldc"
#define CBLAS_C "order transa transb m n k -!8 lda@16 ldb@32 ldc@56"

// clang-format off
#define A(n, grp, a) { .name = n, .group = grp, .args = a }

static const struct ucall_api blas_apis[] = {
	A("sgemm_", BLAS_GRP_S, FORTRAN),
	A("dgemm_", BLAS_GRP_D, FORTRAN),
	A("cgemm_", BLAS_GRP_C, FORTRAN),
	A("zgemm_", BLAS_GRP_Z, FORTRAN),
	A("cblas_sgemm", BLAS_GRP_S, CBLAS),
	A("cblas_dgemm", BLAS_GRP_D, CBLAS),
	A("cblas_cgemm", BLAS_GRP_C, CBLAS_C),
	A("cblas_zgemm", BLAS_GRP_Z, CBLAS_C),
};
// clang-format on

#define INT   1u << UCALL_T_S32, UCALL_T_S32
#define TRANS 1u << UCALL_T_S32 | 1u << UCALL_T_U8, UCALL_T_S32 /* CBLAS enum, Fortran char */
const struct ucall_key blas_keys[BLAS_K_NR] = {
	[BLAS_K_ORDER] = { "order", INT },
	[BLAS_K_TRANSA] = { "transa", TRANS },
	[BLAS_K_TRANSB] = { "transb", TRANS },
	[BLAS_K_M] = { "m", INT },
	[BLAS_K_N] = { "n", INT },
	[BLAS_K_K] = { "k", INT },
	[BLAS_K_LDA] = { "lda", INT },
	[BLAS_K_LDB] = { "ldb", INT },
	[BLAS_K_LDC] = { "ldc", INT },
};

static struct ucall_spec *blas_compiled;

const struct ucall_table blas_table = {
	.family = "blas",
	.rec_type = BS_REC_BLAS_CALL,
	.loss_depth = BS_LOSS_BLAS_DEPTH,
	.apis = blas_apis,
	.napis = sizeof(blas_apis) / sizeof(blas_apis[0]),
	.keys = blas_keys,
	.nkeys = BLAS_K_NR,
	.compiled = &blas_compiled,
};
