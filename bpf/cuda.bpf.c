// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cuda: CUDA runtime and driver API calls, by the generic uprobe pair (ucall.bpf.h). */
#define UCALL_REC_TYPE BS_REC_CUDA_CALL
#include "common.bpf.h"
#include "cuda_records.h"
#include "ucall.bpf.h"
