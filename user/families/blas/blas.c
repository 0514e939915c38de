// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * blas family, record side: the generic uprobe pair (bpf/blas.bpf.c) on every function of
 * blas_table wherever a BLAS library (libblas, OpenBLAS, MKL) is mapped.
 */
#include <errno.h>
#include "blas.h"
#include "kernel_features.h"
#include "record_ctx.h"
#include "ucall_family.h"
#include "blas.skel.h"

static int blas_attach(struct record_ctx *ctx, void **state)
{
	struct blas_bpf *skel = blas_bpf__open();
	int err;

	if (!skel)
		return -errno;
	RECORD_CTX_SET_COMMON_RODATA(skel, ctx);
	skel->rodata->ucall_stack_ns = record_opts__stack_ns(ctx->opts, &family_blas);
	err = ucall_family__load(ctx, &blas_table, skel->obj, skel->progs.ucall_entry,
				 skel->progs.ucall_return, skel->progs.ucall_exit_btf,
				 &skel->links.ucall_exit_btf);
	if (err) {
		blas_bpf__destroy(skel);
		return err;
	}
	*state = skel;
	return 0;
}

static void blas_detach(struct record_ctx *ctx, void *state)
{
	blas_bpf__destroy(state);
}

static const struct loss_cause blas_losses[] = {
	{ BS_LOSS_BLAS_DEPTH, "blas_too_deep",
	  "calls nested deeper than the per-thread call stack keeps (8): not timed" },
	{ 0 },
};

const struct family family_blas = {
	.name = "blas",
	/* Not in the default set: a small GEMM costs less than its probes (-t blas). */
	.flags = FAMILY_OPT_IN,
	.desc = "CPU BLAS GEMMs (sgemm_, cblas_sgemm...): shapes and FLOPs (uprobes)",
	/* ucall.bpf.h's generic programs tell the functions apart by their cookies, and keep
	 * the call stacks of threads without a slot in task storage */
	.needs = 1u << KF_ATTACH_COOKIE | 1u << KF_TASK_STORAGE,
	.stack_default_ns = 100000, /* --stacks=blas: calls of 100 us or more */
	.api = &blas_table,
	.losses = blas_losses,
	.attach = blas_attach,
	.detach = blas_detach,
	.decoders = blas_decoders,
	.reports = blas_reports,
	.sqlite = &blas_sqlite,
};
