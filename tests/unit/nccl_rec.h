/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* An NCCL call record as ucall.bpf.h writes it, for the unit tests that make them by hand. */
#ifndef BPFSIGHT_TEST_NCCL_REC_H
#define BPFSIGHT_TEST_NCCL_REC_H

#include <string.h>
#include "nccl.h"
#include "ucall_records.h"
#include "unit.h"
#include "ucall_fn.h"

struct rec {
	struct bs_ucall u;
	__u8 deref[BS_UCALL_DEREF_STRUCT];
};

/* The index of function NAME in the nccl table (bs_ucall.fn). */
static inline __u32 fn_of(const char *name)
{
	return ucall_fn(&nccl_table, name);
}

#endif /* BPFSIGHT_TEST_NCCL_REC_H */
