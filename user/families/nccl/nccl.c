// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * nccl family, record side: the generic uprobe pair (bpf/nccl.bpf.c) on every function of
 * nccl_table wherever libnccl code is mapped (shared, or linked into libtorch_cuda.so).
 * Communicators are joined with their rank on the reading side (nccl_decode.c's walk).
 */
#include <errno.h>
#include "nccl.h"
#include "kernel_features.h"
#include "record_ctx.h"
#include "ucall_family.h"
#include "nccl.skel.h"

static int nccl_attach(struct record_ctx *ctx, void **state)
{
	struct nccl_bpf *skel = nccl_bpf__open();
	int err;

	if (!skel)
		return -errno;
	RECORD_CTX_SET_COMMON_RODATA(skel, ctx);
	skel->rodata->ucall_stack_ns = record_opts__stack_ns(ctx->opts, &family_nccl);
	err = ucall_family__load(ctx, &nccl_table, skel->obj, skel->progs.ucall_entry,
				 skel->progs.ucall_return, skel->progs.ucall_exit_btf,
				 &skel->links.ucall_exit_btf);
	if (err) {
		nccl_bpf__destroy(skel);
		return err;
	}
	*state = skel;
	return 0;
}

static void nccl_detach(struct record_ctx *ctx, void *state)
{
	nccl_bpf__destroy(state);
}

static void *nccl_walk_new(void)
{
	return nccl_walk__new();
}

static void nccl_walk_observe(void *w, const struct bs_hdr *rec)
{
	nccl_walk__observe(w, rec);
}

static void nccl_walk_free(void *w)
{
	nccl_walk__free(w);
}

static const struct loss_cause nccl_losses[] = {
	{ BS_LOSS_NCCL_DEPTH, "nccl_too_deep",
	  "calls nested deeper than the per-thread call stack keeps (8): not timed" },
	{ 0 },
};

const struct family family_nccl = {
	.name = "nccl",
	.desc = "NCCL calls: collectives, point-to-point, groups, communicators (uprobes)",
	/* ucall.bpf.h's generic programs tell the functions apart by their cookies, and keep
	 * the call stacks of threads without a slot in task storage */
	.needs = 1u << KF_ATTACH_COOKIE | 1u << KF_TASK_STORAGE,
	.stack_default_ns = 100000, /* --stacks=nccl: calls of 100 us or more */
	.api = &nccl_table,
	.losses = nccl_losses,
	.attach = nccl_attach,
	.detach = nccl_detach,
	.walk_new = nccl_walk_new,
	.walk_observe = nccl_walk_observe,
	.walk_free = nccl_walk_free,
	.decoders = nccl_decoders,
	.reports = nccl_reports,
	.chrome = &nccl_chrome,
	.sqlite = &nccl_sqlite,
	.metrics = &nccl_metrics,
	.sync = &nccl_sync,
};
