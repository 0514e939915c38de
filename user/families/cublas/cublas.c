// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cublas family, record side: the generic uprobe pair (bpf/ucall.bpf.c) on every function of
 * cublas_table wherever libcublas and libcublasLt code is mapped. Streams and cuBLASLt
 * descriptors are joined with the calls on the reading side (cublas_decode.c's walk).
 */
#include "cublas_decode.h"
#include "ucall_family.h"
#include "family_record.h"
#include "family_stats.h"

static const struct loss_cause cublas_losses[] = {
	UCALL_LOSS_TOO_DEEP(BS_LOSS_CUBLAS_DEPTH, "cublas_too_deep"),
	{ 0 },
};

static const struct family_record cublas_recording = {
	.nsys_trace = "cublas,cublas-verbose", /* nsys -t */
	.needs = UCALL_FAMILY_NEEDS,
	.stack_default_ns = 100000, /* --stacks=cublas: calls of 100 us or more */
	.attach = ucall_family__attach,
	.detach = ucall_family__detach,
};

static const struct family_decode cublas_reading = {
	.walk_new = cublas_walk__new,
	.walk_observe = cublas_walk__observe,
	.walk_free = cublas_walk__free,
	.decoders = cublas_decoders,
};

static const struct family_stats cublas_stats = {
	.ledger = &cublas_ledger,
	.reports = cublas_reports,
	.verdict = &cublas_verdict,
};

const struct family family_cublas = {
	.name = "cublas",
	/* Not in the default set, as in nsys: a recording names it (-t cublas). */
	.flags = FAMILY_OPT_IN | FAMILY_UPROBES,
	.desc = "cuBLAS and cuBLASLt calls: GEMM shapes, types and FLOPs (uprobes)",
	.api = &cublas_table,
	.losses = cublas_losses,
	.export = &cublas_export,
	.sql = &cublas_sql,
	.record = &cublas_recording,
	.decode = &cublas_reading,
	.stats = &cublas_stats,
};
