/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The cudnn family's record (block 0xe0): a cuDNN API call, struct bs_ucall. */
#ifndef BPFSIGHT_CUDNN_RECORDS_H
#define BPFSIGHT_CUDNN_RECORDS_H

#include "ucall_records.h"

#define BS_REC_CUDNN_CALL 0xe0 /* one cuDNN API call (struct bs_ucall) */

/* Loss: a call nested deeper than ucall.bpf.h keeps frames (UCALL_MAX_DEPTH): not timed. */
#define BS_LOSS_CUDNN_DEPTH 0xe0

#endif /* BPFSIGHT_CUDNN_RECORDS_H */
