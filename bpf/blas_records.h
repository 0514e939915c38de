/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The blas family's record (block 0xd0): a CPU BLAS call (sgemm_, cblas_sgemm...), bs_ucall. */
#ifndef BPFSIGHT_BLAS_RECORDS_H
#define BPFSIGHT_BLAS_RECORDS_H

#include "ucall_records.h"

#define BS_REC_BLAS_CALL 0xd0 /* one CPU BLAS call (struct bs_ucall) */

/* Loss: a call nested deeper than ucall.bpf.h keeps frames (UCALL_MAX_DEPTH): not timed. */
#define BS_LOSS_BLAS_DEPTH 0xd0

#endif /* BPFSIGHT_BLAS_RECORDS_H */
