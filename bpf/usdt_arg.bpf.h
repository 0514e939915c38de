/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A USDT probe's argument, read in its program as its spec says (usdt_arg.h). */
#ifndef BPFSIGHT_USDT_ARG_BPF_H
#define BPFSIGHT_USDT_ARG_BPF_H

#include "usdt_arg.h"

/* The SIZE bytes at user address P, zero-extended. Constant sizes keep the verifier happy. */
static __always_inline int usdt_read_user_sized(__u64 *v, __u32 log2size, const void *p)
{
	switch (log2size) {
	case 0:
		return bpf_probe_read_user(v, 1, p);
	case 1:
		return bpf_probe_read_user(v, 2, p);
	case 2:
		return bpf_probe_read_user(v, 4, p);
	default:
		return bpf_probe_read_user(v, 8, p);
	}
}

/* The argument SPEC describes, at the probe whose registers are CTX. 0 or -1. */
static __always_inline int usdt_fetch(struct pt_regs *ctx, __u32 spec, __u64 *out)
{
	__u32 log2size = BS_USDT_ARG_LOG2SIZE(spec), shift = 64 - (8u << log2size);
	__u64 v = 0, base = 0;

	switch (BS_USDT_ARG_KIND(spec)) {
	case BS_USDT_ARG_REG:
		if (bpf_probe_read_kernel(&v, 8, (void *)ctx + BS_USDT_ARG_REG_SLOT(spec) * 8))
			return -1;
		break;
	case BS_USDT_ARG_MEM:
		if (bpf_probe_read_kernel(&base, 8, (void *)ctx + BS_USDT_ARG_REG_SLOT(spec) * 8) ||
		    usdt_read_user_sized(&v, log2size,
					 (void *)(base + (__s64)BS_USDT_ARG_VAL(spec))))
			return -1;
		break;
	case BS_USDT_ARG_CONST:
		v = (__s64)BS_USDT_ARG_VAL(spec);
		break;
	default:
		return -1;
	}
	if (shift) {
		v <<= shift;
		v = BS_USDT_ARG_SIGNED(spec) ? (__u64)((__s64)v >> shift) : v >> shift;
	}
	*out = v;
	return 0;
}

#endif /* BPFSIGHT_USDT_ARG_BPF_H */
