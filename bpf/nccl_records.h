/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The nccl family's record (block 0x40): an NCCL API call, struct bs_ucall. */
#ifndef BPFSIGHT_NCCL_RECORDS_H
#define BPFSIGHT_NCCL_RECORDS_H

#include "ucall_records.h"

#define BS_REC_NCCL_CALL 0x40 /* one API call (struct bs_ucall) */
#define BS_REC_NCCL_COMM 0x41 /* a communicator as a flight-recorder dump's window begins */

/*
 * A communicator that existed when a flight-recorder dump's window began (user space writes it
 * before the window's records, user/families/nccl/nccl_window.c): what its creation, which the
 * window no longer holds, said of it, and how many collectives it had made, so the window's
 * collectives have the numbers they have on every rank. hdr.pid = its process, ts = the
 * window's start.
 */
struct bs_nccl_comm {
	struct bs_hdr h;
	__u64 comm;    /* the pointer, in its process */
	__u64 id_hash; /* its unique id's hash (flags BS_NCCL_COMM_HASH) */
	__u64 parent;  /* the communicator it was split from, 0 = none */
	__u64 base;    /* its collectives before the window: the first one's number there */
	__s32 rank;    /* -1 = unknown */
	__s32 nranks;  /* -1 = unknown */
	__u32 flags;   /* BS_NCCL_COMM_* */
	__u32 _pad;
};

#define BS_NCCL_COMM_HASH 0x1 /* id_hash is known: its creation was recorded */

BS_ASSERT_RECORD(bs_nccl_comm, 72);

/* Loss: a call nested deeper than ucall.bpf.h keeps frames (UCALL_MAX_DEPTH): not timed. */
#define BS_LOSS_NCCL_DEPTH 0x40

#endif /* BPFSIGHT_NCCL_RECORDS_H */
