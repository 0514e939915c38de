/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An API table of a uprobe family (cuda, nccl): the functions it probes, what the generic
 * BPF programs (bpf/ucall.bpf.h) capture for each, and how a decoder reads their arguments.
 * The index of an entry is bs_ucall.fn in trace files: tables are append-only.
 */
#ifndef BPFSIGHT_UCALL_API_H
#define BPFSIGHT_UCALL_API_H

#include <linux/types.h>
#include "records.h"

struct ucall_api {
	const char *name; /* the exported symbol, also the name shown (cudaLaunchKernel) */
	__u8 deref_arg;	  /* argument index + 1 whose pointee is copied at return (0 = none) */
	__u8 deref_off8;  /* byte offset / 8 into that pointee */
	__u8 deref_mode;  /* BS_DEREF_* */
	__u8 out_arg;	  /* argument index + 1 whose u64 pointee is read at return (0 = none) */
	__u16 group;	  /* family-defined category (launch, memcpy, sync, ...) */
	__u16 flags;	  /* family-defined */
	const char *args; /* family-defined description of the arguments, for its decoder */
};

struct ucall_table {
	const char *family; /* "cuda" */
	__u16 rec_type;	    /* BS_REC_CUDA_CALL */
	const struct ucall_api *apis;
	__u32 napis;
};

static inline __u64 ucall_api__cookie(const struct ucall_table *t, __u32 fn)
{
	const struct ucall_api *a = &t->apis[fn];

	return BS_UCOOKIE(fn, a->deref_arg, a->deref_off8, a->deref_mode, a->out_arg);
}

/* The entry of REC's fn, or NULL when the trace was written by a newer table. */
static inline const struct ucall_api *ucall_table__api(const struct ucall_table *t, __u32 fn)
{
	return fn < t->napis ? &t->apis[fn] : (const struct ucall_api *)0;
}

#endif /* BPFSIGHT_UCALL_API_H */
