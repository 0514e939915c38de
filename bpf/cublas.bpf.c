// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cublas: cuBLAS and cuBLASLt API calls, by the generic uprobe pair (ucall.bpf.h). */
#define UCALL_REC_TYPE	 BS_REC_CUBLAS_CALL
#define UCALL_LOSS_DEPTH BS_LOSS_CUBLAS_DEPTH
#define BS_BLOCK	 0xc0
#include "common.bpf.h"
#include "cublas_records.h"
#include "ucall.bpf.h"
