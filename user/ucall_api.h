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

/*
 * Argument words A's args string consumes, for both families' grammars: every token but
 * constants ("k=v") and fields read from a pointee ("k@n"); a by-value dim3 takes two.
 * Without a description, assume the most.
 */
static inline int ucall_api__words(const struct ucall_api *a)
{
	const char *p = a->args;
	int words = 0;

	if (!p)
		return BS_UCALL_NARGS;
	while (*p) {
		const char *tok = p;
		int skip = 0, dim3 = 0;

		while (*p == ' ')
			tok = ++p;
		if (!*p)
			break;
		for (; *p && *p != ' '; p++) {
			if (*p == '=' || *p == '@')
				skip = 1;
			if (*p == ':' && !__builtin_strncmp(p + 1, "dim3", 4))
				dim3 = 1;
		}
		if (p > tok && !skip)
			words += dim3 ? 2 : 1;
	}
	return words;
}

static inline __u64 ucall_api__cookie(const struct ucall_table *t, __u32 fn)
{
	const struct ucall_api *a = &t->apis[fn];
	__u64 c = BS_UCOOKIE(fn, a->deref_arg, a->deref_off8, a->deref_mode, a->out_arg);

	if (ucall_api__words(a) > 6 || a->deref_arg == BS_DEREF_ARG_STACK)
		c |= BS_UCOOKIE_STACK;
	return c;
}

/* The entry of REC's fn, or NULL when the trace was written by a newer table. */
static inline const struct ucall_api *ucall_table__api(const struct ucall_table *t, __u32 fn)
{
	return fn < t->napis ? &t->apis[fn] : (const struct ucall_api *)0;
}

#endif /* BPFSIGHT_UCALL_API_H */
