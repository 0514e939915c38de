/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The nccl family's record (block 0x40): an NCCL API call, struct bs_ucall. */
#ifndef BPFSIGHT_NCCL_RECORDS_H
#define BPFSIGHT_NCCL_RECORDS_H

#include "ucall_records.h"

#define BS_REC_NCCL_CALL 0x40 /* one API call (struct bs_ucall) */

/* Loss: a call nested deeper than ucall.bpf.h keeps frames (UCALL_MAX_DEPTH): not timed. */
#define BS_LOSS_NCCL_DEPTH 0x40

#endif /* BPFSIGHT_NCCL_RECORDS_H */
