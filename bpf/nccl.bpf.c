// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* nccl: NCCL API calls, by the generic uprobe pair (ucall.bpf.h). */
#define UCALL_REC_TYPE	 BS_REC_NCCL_CALL
#define UCALL_LOSS_DEPTH BS_LOSS_NCCL_DEPTH
#define BS_BLOCK	 0x40
#include "common.bpf.h"
#include "nccl_records.h"
#include "ucall.bpf.h"
