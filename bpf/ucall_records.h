/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The record of the uprobe API families (cuda, nccl): one call, written by the generic
 * programs of bpf/ucall.bpf.h, read through the family's API table (user/ucall/). Each
 * family gives its record type in a header of its own (cuda_records.h, nccl_records.h).
 */
#ifndef BPFSIGHT_UCALL_RECORDS_H
#define BPFSIGHT_UCALL_RECORDS_H

#include "records.h"

/*
 * One call of a probed user-space API function (cuda, nccl): the generic uprobe programs of
 * bpf/ucall.bpf.h. hdr.ts = entry, written at return. What is captured per function comes
 * from the probe's bpf_cookie (BS_UCOOKIE below), which user space compiles from the
 * argument spec of the function's entry in the family's API table (user/core/ucall_spec.h); the
 * entry's index is `fn`.
 */
#define BS_UCALL_NARGS	      12  /* rdi rsi rdx rcx r8 r9, then 6 stack words */
#define BS_UCALL_DEREF_STRUCT 192 /* bytes copied for BS_DEREF_STRUCT */
#define BS_UCALL_DEREF_STRING 512 /* bytes reserved for BS_DEREF_STRING (NUL-terminated) */

struct bs_ucall {
	struct bs_hdr h;
	__u64 dur;
	__s64 ret;	 /* rax at return */
	__u64 out;	 /* the u64 *args[out_arg] points to, read at return (0 = none/fault) */
	__u32 fn;	 /* index in the family's API table: part of the file format */
	__u16 depth;	 /* calls of the same family enclosing this one on this thread;
			  * BS_UCALL_OPEN: a call still running (below) */
	__u16 deref_len; /* bytes that follow the struct: 0, BS_UCALL_DEREF_STRUCT or _STRING */
	__u64 args[BS_UCALL_NARGS];
	/* __u8 deref[deref_len]: read at return from (char *)args[deref_arg] + deref_off;
	 * zero-filled when the read faults. */
};

/*
 * The call stack BPF keeps per thread (bpf/ucall.bpf.h): a frame per call entered and not yet
 * returned, in the ucall_slots array (a slot per thread, found from its tid). Never on disk:
 * user space reads the slots (an mmap of the array) for the hang trigger, which writes a
 * record per frame still there after DUR, marked BS_UCALL_OPEN.
 */
#define BS_UCALL_MAX_DEPTH 8
#define BS_UCALL_SLOTS	   1024 /* a power of two; 976 KB, preallocated */

struct bs_ucall_frame {
	__u64 ts;
	__u64 cookie;
	__u64 sp; /* rsp at entry: where the return address sits */
	__u64 args[BS_UCALL_NARGS];
};

struct bs_ucall_thread {
	__u64 owner; /* array slots: the tid owning it, 0 = free (task storage: unused) */
	__u32 depth; /* may exceed BS_UCALL_MAX_DEPTH: deeper frames are counted, not kept */
	__u32 sent;  /* records this thread sent: the ring's fill is checked on every 16th */
	struct bs_ucall_frame f[BS_UCALL_MAX_DEPTH];
};

/*
 * In depth: the call had not returned when the record was written. User space writes such a
 * record for each call in flight when the hang trigger fires (--trigger hang, the flight
 * recorder), from the frame BPF keeps for it: dur is its time so far, ret and out are 0 and
 * mean nothing, nothing is copied (deref_len 0). Readers that count calls at depth 0 leave
 * them out by that alone; decoders show them as in flight.
 */
#define BS_UCALL_OPEN	  0x8000
#define BS_UCALL_DEPTH(d) ((d) & ~BS_UCALL_OPEN)

/*
 * bpf_cookie of a ucall probe (both the entry and the return probe carry it):
 *   bits  0-11 fn       index in the family's API table
 *   bits 12-15 deref    argument index + 1 whose pointee is copied at return (0 = none;
 *                       BS_DEREF_ARG_STACK = the caller's stack-argument area, for a large
 *                       struct passed by value, e.g. ncclUniqueId)
 *   bits 16-23 off8     byte offset / 8 into that pointee
 *   bits 24-25 mode     BS_DEREF_*
 *   bits 26-29 out      argument index + 1 whose u64 pointee is read at return (0 = none)
 *   bit  30    stack    the function takes more than 6 argument words: copy the stack ones
 *   bit  31    wraps    its WRAPPED calls on the same thread are its own work (cuda: a runtime
 *                       launch, whose driver launch is the same launch)
 *   bit  32    wrapped  called directly inside a WRAPS call, the call is not recorded and, on
 *                       a uprobe session, its return probe does not fire (cuda: a driver launch)
 *   bits 33-44 byref    argument words that point to their value (Fortran BLAS): the 4 bytes
 *                       each points to are read at entry and replace the word (0: a fault)
 */
#define BS_DEREF_ARG_STACK 15
#define BS_DEREF_NONE	   0
#define BS_DEREF_STRUCT	   1
#define BS_DEREF_STRING	   2

#define BS_UCOOKIE(fn, deref_arg1, off8, mode, out_arg1)                                           \
	((__u64)(fn) | (__u64)(deref_arg1) << 12 | (__u64)(off8) << 16 | (__u64)(mode) << 24 |     \
	 (__u64)(out_arg1) << 26)
#define BS_UCOOKIE_STACK	(1ull << 30)
#define BS_UCOOKIE_WRAPS	(1ull << 31)
#define BS_UCOOKIE_WRAPPED	(1ull << 32)
#define BS_UCOOKIE_BYREF_SHIFT	33
#define BS_UCOOKIE_BYREF(c)	((__u32)((c) >> BS_UCOOKIE_BYREF_SHIFT) & 0xfff)
#define BS_UCOOKIE_FN(c)	((__u32)(c)&0xfff)
#define BS_UCOOKIE_DEREF_ARG(c) (((__u32)(c) >> 12) & 0xf)
#define BS_UCOOKIE_DEREF_OFF(c) ((((__u32)(c) >> 16) & 0xff) * 8)
#define BS_UCOOKIE_MODE(c)	(((__u32)(c) >> 24) & 0x3)
#define BS_UCOOKIE_OUT_ARG(c)	(((__u32)(c) >> 26) & 0xf)

BS_ASSERT_RECORD(bs_ucall, 152);
_Static_assert(sizeof(struct bs_ucall_thread) == 976, "what user space maps of ucall_slots");

#endif /* BPFSIGHT_UCALL_RECORDS_H */
