// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cudnn family, record side: the generic uprobe pair (bpf/ucall.bpf.c) on every function of
 * cudnn_table wherever libcudnn code is mapped (the dispatcher and its sub-libraries). Backend
 * descriptors are joined with the executes on the reading side (cudnn_decode.c's walk).
 */
#include "cudnn.h"
#include "ucall_family.h"
#include "family_record.h"
#include "family_stats.h"

static const struct loss_cause cudnn_losses[] = {
	UCALL_LOSS_TOO_DEEP(BS_LOSS_CUDNN_DEPTH, "cudnn_too_deep"),
	{ 0 },
};

static const struct family_record cudnn_recording = {
	.nsys_trace = "cudnn,cudnn-verbose", /* nsys -t */
	.needs = UCALL_FAMILY_NEEDS,
	.stack_default_ns = 100000, /* --stacks=cudnn: calls of 100 us or more */
	.attach = ucall_family__attach,
	.detach = ucall_family__detach,
};

static const struct family_decode cudnn_reading = {
	.walk_new = cudnn_walk__new,
	.walk_observe = cudnn_walk__observe,
	.walk_free = cudnn_walk__free,
	.decoders = cudnn_decoders,
};

static const struct family_stats cudnn_stats = {
	.ledger = &cudnn_ledger,
	.reports = cudnn_reports,
};

const struct family family_cudnn = {
	.name = "cudnn",
	/* Not in the default set, as in nsys: a recording names it (-t cudnn). */
	.flags = FAMILY_OPT_IN | FAMILY_UPROBES,
	.desc = "cuDNN calls: status, what cudnnBackendExecute ran (uprobes)",
	.api = &cudnn_table,
	.losses = cudnn_losses,
	.export = &cudnn_export,
	.record = &cudnn_recording,
	.decode = &cudnn_reading,
	.stats = &cudnn_stats,
};
