// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cudnn: cuDNN 9 API calls (libcudnn and its sub-libraries), by the generic uprobe pair. */
#define UCALL_REC_TYPE	 BS_REC_CUDNN_CALL
#define UCALL_LOSS_DEPTH BS_LOSS_CUDNN_DEPTH
#define BS_BLOCK	 0xe0
#include "common.bpf.h"
#include "cudnn_records.h"
#include "ucall.bpf.h"
