// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cublas family, record side: the generic uprobe pair (bpf/cublas.bpf.c) on every function of
 * cublas_table wherever libcublas and libcublasLt code is mapped. Streams and cuBLASLt
 * descriptors are joined with the calls on the reading side (cublas_decode.c's walk).
 */
#include <errno.h>
#include "cublas_decode.h"
#include "kernel_features.h"
#include "record_ctx.h"
#include "ucall_family.h"
#include "cublas.skel.h"

static int cublas_attach(struct record_ctx *ctx, void **state)
{
	struct cublas_bpf *skel = cublas_bpf__open();
	int err;

	if (!skel)
		return -errno;
	RECORD_CTX_SET_COMMON_RODATA(skel, ctx);
	skel->rodata->ucall_stack_ns = record_opts__stack_ns(ctx->opts, &family_cublas);
	err = ucall_family__load(ctx, &cublas_table, skel->obj, skel->progs.ucall_entry,
				 skel->progs.ucall_return, skel->progs.ucall_exit_btf,
				 &skel->links.ucall_exit_btf);
	if (err) {
		cublas_bpf__destroy(skel);
		return err;
	}
	*state = skel;
	return 0;
}

static void cublas_detach(struct record_ctx *ctx, void *state)
{
	cublas_bpf__destroy(state);
}

static void *cublas_walk_new(void)
{
	return cublas_walk__new();
}

static void cublas_walk_observe(void *w, const struct bs_hdr *rec)
{
	cublas_walk__observe(w, rec);
}

static void cublas_walk_free(void *w)
{
	cublas_walk__free(w);
}

static const struct loss_cause cublas_losses[] = {
	{ BS_LOSS_CUBLAS_DEPTH, "cublas_too_deep",
	  "calls nested deeper than the per-thread call stack keeps (8): not timed" },
	{ 0 },
};

const struct family family_cublas = {
	.name = "cublas",
	/* Not in the default set, as in nsys: a recording names it (-t cublas). */
	.flags = FAMILY_OPT_IN,
	.desc = "cuBLAS and cuBLASLt calls: GEMM shapes, types and FLOPs (uprobes)",
	/* ucall.bpf.h's generic programs tell the functions apart by their cookies, and keep
	 * the call stacks of threads without a slot in task storage */
	.needs = 1u << KF_ATTACH_COOKIE | 1u << KF_TASK_STORAGE,
	.stack_default_ns = 100000, /* --stacks=cublas: calls of 100 us or more */
	.api = &cublas_table,
	.losses = cublas_losses,
	.attach = cublas_attach,
	.detach = cublas_detach,
	.walk_new = cublas_walk_new,
	.walk_observe = cublas_walk_observe,
	.walk_free = cublas_walk_free,
	.decoders = cublas_decoders,
	.reports = cublas_reports,
	.verdict = &cublas_verdict,
	.sqlite = &cublas_sqlite,
};
