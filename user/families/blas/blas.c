// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * blas family, record side: the generic uprobe pair (bpf/ucall.bpf.c) on every function of
 * blas_table wherever a BLAS library (libblas, OpenBLAS, MKL) is mapped.
 */
#include "blas.h"
#include "ucall_family.h"
#include "family_record.h"
#include "family_stats.h"

static const struct loss_cause blas_losses[] = {
	UCALL_LOSS_TOO_DEEP(BS_LOSS_BLAS_DEPTH, "blas_too_deep"),
	{ 0 },
};

static const struct family_record blas_recording = {
	.needs = UCALL_FAMILY_NEEDS,
	.stack_default_ns = 100000, /* --stacks=blas: calls of 100 us or more */
	.attach = ucall_family__attach,
	.detach = ucall_family__detach,
};

static const struct family_decode blas_reading = {
	.decoders = blas_decoders,
};

static const struct family_stats blas_stats = {
	.ledger = &blas_ledger,
	.reports = blas_reports,
	.verdict = &blas_verdict,
};

const struct family family_blas = {
	.name = "blas",
	/* Not in the default set: a small GEMM costs less than its probes (-t blas). */
	.flags = FAMILY_OPT_IN | FAMILY_UPROBES,
	.desc = "CPU BLAS GEMMs (sgemm_, cblas_sgemm...): shapes and FLOPs (uprobes)",
	.api = &blas_table,
	.losses = blas_losses,
	.export = &blas_export,
	.sql = &blas_sql,
	.record = &blas_recording,
	.decode = &blas_reading,
	.stats = &blas_stats,
};
