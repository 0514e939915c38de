/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The torch family's records (block 0x90): PyTorch's own ranges (ops, backward ops, user
 * scopes), written by the cupti-shim's RecordFunction callback (cupti-shim/shim_torch.c) into
 * its batches and carried by the shim channel like the gpu and nvtx records
 * (bpf/shim_records.h). docs/TORCH.md for users; docs/FORMAT.md lists the fields.
 */
#ifndef BPFSIGHT_TORCH_RECORDS_H
#define BPFSIGHT_TORCH_RECORDS_H

#include "shim_records.h"

#define BS_REC_TORCH_OP	  0x90 /* one op or scope, written when it ends (the shim) */
#define BS_REC_TORCH_STEP 0x91 /* one training step, written when it ends (the recorder) */

/*
 * hdr.ts = the start callback, hdr.tid = the thread that ran it (RecordFunction ranges nest
 * on their thread; the rare async ones end elsewhere: BS_TORCH_ASYNC).
 */
struct bs_torch_op {
	struct bs_hdr h;
	__u64 dur;
	__s64 seq;	 /* the autograd sequence number (-1: none), pairs forward and backward */
	__u64 fwd_tid;	 /* backward ops: torch's thread id of the forward op (0: none) */
	__u64 torch_tid; /* torch's own id of this thread (RecordFunction::currentThreadId) */
	__u32 name_id;	 /* string: RecordFunction::name() */
	__u32 shapes_id; /* string: input shapes, "[[4, 8], [], [8]]" (0: not asked, --torch-shapes) */
	__u8 scope;	 /* BS_TORCH_SCOPE_* (at::RecordScope) */
	__u8 depth;	 /* ops open around it on its thread (255: 255 or more) */
	__u16 flags;	 /* BS_TORCH_* */
	/* string: the scalar inputs' values, ["", "", "[2, 2]", "1"] (0: not asked or none) */
	__u32 concrete_id;
};

/* at::RecordScope, numbered as in torch 1.13 to 2.14 (tests/torch/layout.cpp: NUM_SCOPES 10) */
#define BS_TORCH_SCOPE_FUNCTION		     0 /* c10/ATen ops */
#define BS_TORCH_SCOPE_BACKWARD_FUNCTION     1 /* autograd nodes (the backward ops) */
#define BS_TORCH_SCOPE_TORCHSCRIPT_FUNCTION  2
#define BS_TORCH_SCOPE_KERNEL_FUNCTION_DTYPE 3
#define BS_TORCH_SCOPE_CUSTOM_CLASS	     4
#define BS_TORCH_SCOPE_BUILD_FEATURE	     5
#define BS_TORCH_SCOPE_LITE_INTERPRETER	     6
#define BS_TORCH_SCOPE_USER_SCOPE	     7 /* record_function(), Optimizer.step#... */
#define BS_TORCH_SCOPE_STATIC_RUNTIME_OP     8
#define BS_TORCH_SCOPE_STATIC_RUNTIME_MODEL  9
#define BS_TORCH_SCOPES			     10

#define BS_TORCH_STEP	       0x1 /* a step boundary: an Optimizer.step#... scope */
#define BS_TORCH_PROFILER_STEP 0x2 /* a step boundary: a ProfilerStep#N scope */

/*
 * A step: from the end of one step scope to the end of the next (user/families/torch/
 * torch_steps.c says which scopes count). hdr.ts = its start, hdr.pid/tid = the step scopes'
 * thread. Written by the recorder when it sees the second end.
 */
struct bs_torch_step {
	struct bs_hdr h;
	__u64 dur;
	__u64 step;    /* 1 for the first step that ended while recording, then 2, ... */
	__u32 name_id; /* string: the step scope ("Optimizer.step#SGD.step", "ProfilerStep#") */
	__u32 _pad;
};

/* The torch family's bit of a STATUS record's state, and its event (shim_records.h). */
#define BS_SHIM_ST_TORCH_ON 0x100 /* a RecordFunction callback records torch ops */
/*
 * The torch module's news (cupti-shim/shim_torch.c), once per session: detail_id says what
 * (callback registered, the version refused, libtorch not loaded yet), cupti_result is 0 when
 * ops are recorded, else a negative errno.
 */
#define BS_SHIM_EV_TORCH 8

BS_ASSERT_RECORD(bs_torch_op, 72);
BS_ASSERT_RECORD(bs_torch_step, 48);

#endif /* BPFSIGHT_TORCH_RECORDS_H */
