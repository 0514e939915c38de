// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * nccl family, record side: the generic uprobe pair (bpf/ucall.bpf.c) on every function of
 * nccl_table wherever libnccl code is mapped (shared, or linked into libtorch_cuda.so).
 * Communicators are joined with their rank on the reading side (nccl_decode.c's walk).
 */
#include "nccl.h"
#include "ucall_family.h"

static const struct loss_cause nccl_losses[] = {
	UCALL_LOSS_TOO_DEEP(BS_LOSS_NCCL_DEPTH, "nccl_too_deep"),
	{ 0 },
};

const struct family family_nccl = {
	.name = "nccl",
	.flags = FAMILY_UPROBES,
	.desc = "NCCL calls: collectives, point-to-point, groups, communicators (uprobes)",
	.needs = UCALL_FAMILY_NEEDS,
	.stack_default_ns = 100000, /* --stacks=nccl: calls of 100 us or more */
	.api = &nccl_table,
	.losses = nccl_losses,
	.attach = ucall_family__attach,
	.detach = ucall_family__detach,
	.in_flight = ucall_family__in_flight, /* a collective entered and not left: a hang */
	.walk_new = nccl_walk__new,
	.walk_observe = nccl_walk__observe,
	.walk_free = nccl_walk__free,
	.decoders = nccl_decoders,
	.reports = nccl_reports,
	.chrome = &nccl_chrome,
	.sqlite = &nccl_sqlite,
	.metrics = &nccl_metrics,
	.sync = &nccl_sync,
	.verdict = &nccl_verdict,
};
