/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The nvtx family's records (block 0x70): NVTX ranges, marks and names, written by the shim's
 * NVTX handlers (cupti-shim/shim_nvtx.c) and carried in its batches (shim_records.h).
 * docs/NVTX.md for users, docs/FORMAT.md lists the fields.
 */
#ifndef BPFSIGHT_NVTX_RECORDS_H
#define BPFSIGHT_NVTX_RECORDS_H

#include "shim_records.h"

#define BS_REC_NVTX_RANGE 0x70 /* a push/pop or start/end range, written when it ends */
#define BS_REC_NVTX_MARK  0x71 /* an instant marker */
#define BS_REC_NVTX_NAME  0x72 /* a name given to a thread or a category */
#define BS_REC_NVTX_BEGIN 0x73 /* a range began (sync mode only: --capture-range=nvtx) */

/* NAME records of a process past the keys the recorder keeps for it (65536): not written */
#define BS_LOSS_NVTX_NAMES 0x70

/* hdr.ts = start, hdr.tid = the thread that pushed or started it. */
struct bs_nvtx_range {
	struct bs_hdr h;
	__u64 dur;	 /* with BS_NVTX_OPEN: until the recording stopped */
	__u64 range_id;	 /* start/end ranges: nvtxRangeStart's id; push/pop: 0 */
	__u64 payload;	 /* raw bits; type in BS_NVTX_PAYLOAD_* */
	__u32 name_id;	 /* string: the message (0 = none) */
	__u32 domain_id; /* string: the domain's name (0 = the default domain) */
	__u32 end_tid;	 /* the thread that ended it (= hdr.tid for push/pop) */
	__u32 category;
	__u32 color; /* ARGB (BS_NVTX_COLOR) */
	__u16 depth; /* push/pop: ranges of the domain open on the thread around it */
	__u16 flags; /* BS_NVTX_* */
};

/* hdr.ts = the mark, hdr.tid = the thread. */
struct bs_nvtx_mark {
	struct bs_hdr h;
	__u64 payload;
	__u32 name_id;
	__u32 domain_id;
	__u32 category;
	__u32 color;
	__u16 flags;
	__u16 _pad;
	__u32 _pad2;
};

/* nvtxNameOsThread / nvtxNameCategory / nvtxDomainNameCategory. hdr.tid = the caller. */
struct bs_nvtx_name {
	struct bs_hdr h;
	__u64 key;	 /* the OS thread id, or the category */
	__u32 kind;	 /* BS_NVTX_NAME_* */
	__u32 name_id;	 /* string */
	__u32 domain_id; /* string (categories are per domain) */
	__u32 _pad;
};

#define BS_NVTX_NAME_THREAD   1
#define BS_NVTX_NAME_CATEGORY 2

/* Sync mode: a range began (its RANGE record follows when it ends). */
struct bs_nvtx_begin {
	struct bs_hdr h;
	__u64 range_id;
	__u32 name_id;
	__u32 domain_id;
};

#define BS_NVTX_PUSHPOP	     0x001 /* nvtxRangePush/Pop (else start/end) */
#define BS_NVTX_OPEN	     0x002 /* not ended when the recording stopped */
#define BS_NVTX_COLOR	     0x004 /* color holds an ARGB value */
#define BS_NVTX_PAYLOAD_MASK 0x070
#define BS_NVTX_PAYLOAD_NONE 0x000
#define BS_NVTX_PAYLOAD_U64  0x010
#define BS_NVTX_PAYLOAD_I64  0x020
#define BS_NVTX_PAYLOAD_F64  0x030
#define BS_NVTX_PAYLOAD_U32  0x040
#define BS_NVTX_PAYLOAD_I32  0x050
#define BS_NVTX_PAYLOAD_F32  0x060
#define BS_NVTX_REGISTERED   0x080 /* the message was a registered string handle */

BS_ASSERT_RECORD(bs_nvtx_range, 72);
BS_ASSERT_RECORD(bs_nvtx_mark, 56);
BS_ASSERT_RECORD(bs_nvtx_name, 48);
BS_ASSERT_RECORD(bs_nvtx_begin, 40);

/* The nvtx family's bits of a STATUS record's state (shim_records.h). */
#define BS_SHIM_ST_NVTX_INJECTED 0x02 /* InitializeInjectionNvtx2 ran at least once */
#define BS_SHIM_ST_NVTX_ON	 0x08 /* NVTX calls recorded */
#define BS_SHIM_ST_SYNC		 0x20 /* NVTX_BEGIN records sent at once */
#define BS_SHIM_ST_NVTX_CHAINED	 0x40 /* NVTX calls are passed on to another injection library */

#endif /* BPFSIGHT_NVTX_RECORDS_H */
