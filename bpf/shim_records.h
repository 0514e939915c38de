/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef BPFSIGHT_SHIM_RECORDS_H
#define BPFSIGHT_SHIM_RECORDS_H

#include "records.h"

#define BS_SHIM_WAKE_NAME "bpfsight-shim-wake"
/* The shim's poller thread's name: bpfsight's own, never one of the job's (trace_model.h). */
#define BS_SHIM_THREAD_NAME "bpfsight-shim"

/*
 * The records of the cupti-shim channel itself (block 0x60, which the gpu family shares: it
 * decodes the channel's STATUS records and names its loss), written by the shim
 * (cupti-shim/), carried by bpf/shim.bpf.c, read by user/shim_channel/ (docs/GPU.md, "The
 * channel"). The families the shim carries have their records in headers of their own
 * (gpu_records.h, nvtx_records.h, torch_records.h) and say what they send in their struct
 * family_shim (user/shim_channel/shim_family.h).
 *
 * The shim (loaded into the application by CUDA_INJECTION64_PATH / NVTX_INJECTION64_PATH)
 * writes the records below into per-thread buffers in its own memory and hands each full (or
 * timed-out) buffer to BPF through the USDT probe bpfsight:batch(buf, bytes). BPF copies the
 * buffer into one SHIM_BATCH ring record; user space unpacks it and writes every record inside
 * to the trace as an ordinary record: hdr.pid replaced by the pid BPF saw, hdr.cpu = 0,
 * string ids translated from the shim's (per process) to the file's (see BS_REC_STRING below).
 *
 * USDT probes of provider "bpfsight" (sys/sdt.h, each with a semaphore; a tracer attaching a
 * probe bumps its semaphore in the process, which is how the shim learns what is wanted):
 *   batch(void *buf, u64 bytes)  data channel; semaphore > 0 = a tracer is attached
 *   drain(u64 seq)    semaphore: flush everything now; fired once flushed, seq = last batch
 *   join(u64 seq)     semaphore: a tracer joins a session another began (BS_SHIM_EV_JOIN)
 * and each family's control sites (struct family_shim.sites: gpu, nvtx and sync, torch and
 * torch_shapes), whose semaphore says the family is wanted.
 *
 * Between recordings (after a tracer detached) the poller sleeps without a timer: it waits on
 * a futex word in a one-page memfd named BS_SHIM_WAKE_NAME ("/memfd:bpfsight-shim-wake" in
 * /proc/PID/maps). A tracer that attaches maps that page (/proc/PID/map_files), adds 1 to the
 * word and wakes it (FUTEX_WAKE, shared); the poller then reads the semaphores. Before its
 * first attach, and while attached, the poller polls the semaphores every 50 ms.
 *
 * Inside a batch the shim also writes BS_REC_STRING records (struct bs_string, id = the
 * shim's own id, unique per process) before the first record that refers to the id; user space
 * re-interns the text and rewrites the id fields marked "string" below. A shim re-sends every
 * string it uses after each new attach (ids stay the same within a process).
 */
#define BS_REC_SHIM_BATCH  0x60 /* ring only: one batch of shim records (never on disk) */
#define BS_REC_SHIM_STATUS 0x61 /* the shim's state changed, or it reports an error or drops */

/* Records the cupti-shim or CUPTI dropped, buffers full (a loss cause, records.h). */
#define BS_LOSS_SHIM 6

#define BS_SHIM_VERSION	  2	      /* 2: format 4's record numbers (pyfunc's) */
#define BS_SHIM_MAGIC	  0x48534253u /* "BSSH" little-endian */
#define BS_SHIM_BATCH_MAX 16384	      /* bytes of records in one batch */

/* The start of the buffer the shim passes to bpfsight:batch (copied with it). */
struct bs_shim_batch_hdr {
	__u32 magic;   /* BS_SHIM_MAGIC */
	__u32 version; /* BS_SHIM_VERSION */
	__u32 nrec;    /* records that follow */
	__u32 len;     /* bytes of records that follow (<= BS_SHIM_BATCH_MAX) */
	__u64 seq;     /* per process, from 1: a gap = batches lost */
};

/* Ring record: hdr.pid/tid = the thread that fired batch, hdr.ts = then. */
struct bs_shim_batch {
	struct bs_hdr h;
	__u32 len;   /* bytes that follow: the shim's bs_shim_batch_hdr + its records */
	__u32 flags; /* BS_SHIM_BATCH_* */
		     /* struct bs_shim_batch_hdr; records */
};

#define BS_SHIM_BATCH_FAULT 0x1 /* the user-memory read failed: content zeroed, records lost */
#define BS_SHIM_BATCH_CLAMP 0x2 /* bytes exceeded the maximum: cut at it */

/* What the shim is doing, written by the shim on every change and on every attach. */
struct bs_shim_status {
	struct bs_hdr h;     /* tid = the shim thread that noticed */
	__u32 state;	     /* BS_SHIM_ST_* bits now true */
	__u32 event;	     /* BS_SHIM_EV_*: why this record */
	__s32 cupti_result;  /* CUptiResult of the failing call (0 = none) */
	__u32 detail_id;     /* string: the failing call, or what owns CUPTI, or a note */
	__u64 dropped;	     /* records dropped since the previous status (buffers full) */
	__u64 seq;	     /* the last batch sequence number sent before this record */
	__u32 cupti_version; /* cuptiGetVersion (0 = CUPTI not loaded) */
	__u32 _pad;
};

/*
 * The channel's state bits. A family's own are in its header, named by its struct
 * family_shim: 0x04 0x10 gpu's, 0x02 0x08 0x20 0x40 nvtx's, 0x100 torch's; a new family takes
 * the next free bit (0x400 on).
 */
#define BS_SHIM_ST_CUDA_INJECTED   0x01	 /* InitializeInjection ran (CUDA_INJECTION64_PATH) */
#define BS_SHIM_ST_PTRACE_INJECTED 0x80	 /* loaded into a running process by record --inject */
#define BS_SHIM_ST_PRELOADED	   0x200 /* loaded by LD_PRELOAD: started by its constructor */

/*
 * record --inject installs the shim under a name ending with this: its constructor starts
 * the poller (no CUDA or NVTX entry point will ever call it), sets PTRACE_INJECTED, and the
 * poller loads CUPTI once the process has libcuda and GPU activity is wanted.
 */
#define BS_SHIM_INJECT_SUFFIX "-ptrace.so"

#define BS_SHIM_EV_ATTACH      1 /* a tracer attached (first batch of a session) */
#define BS_SHIM_EV_STATE       2 /* state bits changed */
#define BS_SHIM_EV_CUPTI_ERROR 3 /* a CUPTI call failed: cupti_result, detail_id */
#define BS_SHIM_EV_DRAINED     4 /* drain requested and done: everything before seq is sent */
#define BS_SHIM_EV_DROPPED     5 /* dropped > 0 */
#define BS_SHIM_EV_EXIT	       6 /* the process is exiting: final flush */
/*
 * Written by the recorder, not the shim: a target of -t gpu/nvtx has no shim and gets none
 * (not started with it and no --inject, or the injection was refused): detail_id says why.
 */
#define BS_SHIM_EV_NO_SHIM 7
/* 8: torch's (BS_SHIM_EV_TORCH); a family's own events are named by its struct family_shim. */
/*
 * A tracer joined a session another tracer's attach began (the join semaphore rose): every
 * string of the session, the NVTX names and the CUPTI errors are sent again, then this, so
 * the newcomer's file names what it records; the first tracer gets them twice (same ids).
 */
#define BS_SHIM_EV_JOIN 9

BS_ASSERT_RECORD(bs_shim_batch_hdr, 24);
BS_ASSERT_RECORD(bs_shim_batch, 32);
BS_ASSERT_RECORD(bs_shim_status, 64);

#endif /* BPFSIGHT_SHIM_RECORDS_H */
