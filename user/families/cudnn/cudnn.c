// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cudnn family, record side: the generic uprobe pair (bpf/ucall.bpf.c) on every function of
 * cudnn_table wherever libcudnn code is mapped (the dispatcher and its sub-libraries). Backend
 * descriptors are joined with the executes on the reading side (cudnn_decode.c's walk).
 */
#include "cudnn.h"
#include "ucall_family.h"

static const struct loss_cause cudnn_losses[] = {
	UCALL_LOSS_TOO_DEEP(BS_LOSS_CUDNN_DEPTH, "cudnn_too_deep"),
	{ 0 },
};

const struct family family_cudnn = {
	.name = "cudnn",
	/* Not in the default set, as in nsys: a recording names it (-t cudnn). */
	.flags = FAMILY_OPT_IN | FAMILY_UPROBES,
	.desc = "cuDNN calls: status, what cudnnBackendExecute ran (uprobes)",
	.needs = UCALL_FAMILY_NEEDS,
	.stack_default_ns = 100000, /* --stacks=cudnn: calls of 100 us or more */
	.api = &cudnn_table,
	.losses = cudnn_losses,
	.attach = ucall_family__attach,
	.detach = ucall_family__detach,
	.walk_new = cudnn_walk__new,
	.walk_observe = cudnn_walk__observe,
	.walk_free = cudnn_walk__free,
	.decoders = cudnn_decoders,
	.reports = cudnn_reports,
	.export = &cudnn_export,
};
