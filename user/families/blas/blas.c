// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * blas family, record side: the generic uprobe pair (bpf/ucall.bpf.c) on every function of
 * blas_table wherever a BLAS library (libblas, OpenBLAS, MKL) is mapped.
 */
#include "blas.h"
#include "ucall_family.h"

static const struct loss_cause blas_losses[] = {
	UCALL_LOSS_TOO_DEEP(BS_LOSS_BLAS_DEPTH, "blas_too_deep"),
	{ 0 },
};

const struct family family_blas = {
	.name = "blas",
	/* Not in the default set: a small GEMM costs less than its probes (-t blas). */
	.flags = FAMILY_OPT_IN | FAMILY_UPROBES,
	.desc = "CPU BLAS GEMMs (sgemm_, cblas_sgemm...): shapes and FLOPs (uprobes)",
	.needs = UCALL_FAMILY_NEEDS,
	.stack_default_ns = 100000, /* --stacks=blas: calls of 100 us or more */
	.api = &blas_table,
	.losses = blas_losses,
	.attach = ucall_family__attach,
	.detach = ucall_family__detach,
	.decoders = blas_decoders,
	.reports = blas_reports,
	.verdict = &blas_verdict,
	.export = &blas_export,
};
