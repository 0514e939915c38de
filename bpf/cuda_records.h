/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The cuda family's record (block 0x30): a runtime or driver API call, struct bs_ucall. */
#ifndef BPFSIGHT_CUDA_RECORDS_H
#define BPFSIGHT_CUDA_RECORDS_H

#include "ucall_records.h"

#define BS_REC_CUDA_CALL 0x30 /* one runtime or driver API call (struct bs_ucall) */

/* Loss: a call nested deeper than ucall.bpf.h keeps frames (UCALL_MAX_DEPTH): not timed. */
#define BS_LOSS_CUDA_DEPTH 0x30

#endif /* BPFSIGHT_CUDA_RECORDS_H */
