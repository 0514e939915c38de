// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cudnn family, record side: the generic uprobe pair (bpf/cudnn.bpf.c) on every function of
 * cudnn_table wherever libcudnn code is mapped (the dispatcher and its sub-libraries). Backend
 * descriptors are joined with the executes on the reading side (cudnn_decode.c's walk).
 */
#include <errno.h>
#include "cudnn.h"
#include "kernel_features.h"
#include "record_ctx.h"
#include "ucall_family.h"
#include "cudnn.skel.h"

static int cudnn_attach(struct record_ctx *ctx, void **state)
{
	struct cudnn_bpf *skel = cudnn_bpf__open();
	int err;

	if (!skel)
		return -errno;
	RECORD_CTX_SET_COMMON_RODATA(skel, ctx);
	skel->rodata->ucall_stack_ns = record_opts__stack_ns(ctx->opts, &family_cudnn);
	err = ucall_family__load(ctx, &cudnn_table, skel->obj, skel->progs.ucall_entry,
				 skel->progs.ucall_return, skel->progs.ucall_exit_btf,
				 &skel->links.ucall_exit_btf);
	if (err) {
		cudnn_bpf__destroy(skel);
		return err;
	}
	*state = skel;
	return 0;
}

static void cudnn_detach(struct record_ctx *ctx, void *state)
{
	cudnn_bpf__destroy(state);
}

static void *cudnn_walk_new(void)
{
	return cudnn_walk__new();
}

static void cudnn_walk_observe(void *w, const struct bs_hdr *rec)
{
	cudnn_walk__observe(w, rec);
}

static void cudnn_walk_free(void *w)
{
	cudnn_walk__free(w);
}

static const struct loss_cause cudnn_losses[] = {
	{ BS_LOSS_CUDNN_DEPTH, "cudnn_too_deep",
	  "calls nested deeper than the per-thread call stack keeps (8): not timed" },
	{ 0 },
};

const struct family family_cudnn = {
	.name = "cudnn",
	/* Not in the default set, as in nsys: a recording names it (-t cudnn). */
	.flags = FAMILY_OPT_IN,
	.desc = "cuDNN calls: status, what cudnnBackendExecute ran (uprobes)",
	/* ucall.bpf.h's generic programs tell the functions apart by their cookies, and keep
	 * the call stacks of threads without a slot in task storage */
	.needs = 1u << KF_ATTACH_COOKIE | 1u << KF_TASK_STORAGE,
	.stack_default_ns = 100000, /* --stacks=cudnn: calls of 100 us or more */
	.api = &cudnn_table,
	.losses = cudnn_losses,
	.attach = cudnn_attach,
	.detach = cudnn_detach,
	.walk_new = cudnn_walk_new,
	.walk_observe = cudnn_walk_observe,
	.walk_free = cudnn_walk_free,
	.decoders = cudnn_decoders,
	.reports = cudnn_reports,
	.sqlite = &cudnn_sqlite,
};
