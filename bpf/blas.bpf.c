// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* blas: CPU BLAS calls (libblas, OpenBLAS, MKL), by the generic uprobe pair (ucall.bpf.h). */
#define UCALL_REC_TYPE	 BS_REC_BLAS_CALL
#define UCALL_LOSS_DEPTH BS_LOSS_BLAS_DEPTH
#define BS_BLOCK	 0xd0
#include "common.bpf.h"
#include "blas_records.h"
#include "ucall.bpf.h"
