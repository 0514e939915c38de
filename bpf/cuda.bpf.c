// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cuda: CUDA runtime and driver API calls, by the generic uprobe pair (ucall.bpf.h). */
#define UCALL_REC_TYPE	 BS_REC_CUDA_CALL
#define UCALL_LOSS_DEPTH BS_LOSS_CUDA_DEPTH
#define BS_BLOCK	 0x30
#include "common.bpf.h"
#include "cuda_records.h"
#include "ucall.bpf.h"
