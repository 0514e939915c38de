/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The cublas family's record (block 0xc0): a cuBLAS or cuBLASLt API call, struct bs_ucall. */
#ifndef BPFSIGHT_CUBLAS_RECORDS_H
#define BPFSIGHT_CUBLAS_RECORDS_H

#include "ucall_records.h"

#define BS_REC_CUBLAS_CALL 0xc0 /* one cuBLAS or cuBLASLt API call (struct bs_ucall) */

/* Loss: a call nested deeper than ucall.bpf.h keeps frames (UCALL_MAX_DEPTH): not timed. */
#define BS_LOSS_CUBLAS_DEPTH 0xc0

#endif /* BPFSIGHT_CUBLAS_RECORDS_H */
