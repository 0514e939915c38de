// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cuda family, record side: the generic uprobe pair (bpf/cuda.bpf.c) on every function of
 * cuda_table wherever libcudart/libcuda code is mapped (uprobe_mgr), kernel names as
 * SYMBOL records, and cudaProfilerStart/Stop driving --capture-range=cudaProfilerApi.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "capture_gate.h"
#include "cuda.h"
#include "elf_syms.h"
#include "kernel_features.h"
#include "record_ctx.h"
#include "ucall_family.h"
#include "ucall_symbols.h"
#include "cuda.skel.h"

struct cuda_state {
	struct cuda_bpf *skel;
	struct ucall_symbols *syms;
};

static void cuda_free(struct cuda_state *st)
{
	if (!st)
		return;
	cuda_bpf__destroy(st->skel);
	ucall_symbols__free(st->syms);
	free(st);
}

static int cuda_attach(struct record_ctx *ctx, void **state)
{
	struct cuda_state *st = calloc(1, sizeof(*st));
	int err;

	if (!st)
		return -ENOMEM;
	st->syms = ucall_symbols__new();
	st->skel = cuda_bpf__open();
	if (!st->skel || !st->syms) {
		err = st->skel ? -ENOMEM : -errno;
		goto fail;
	}
	RECORD_CTX_SET_COMMON_RODATA(st->skel, ctx);
	st->skel->rodata->ucall_stack_ns = record_opts__stack_ns(ctx->opts, &family_cuda);
	err = ucall_family__load(ctx, &cuda_table, st->skel->obj, st->skel->progs.ucall_entry,
				 st->skel->progs.ucall_return, st->skel->progs.ucall_exit_btf,
				 &st->skel->links.ucall_exit_btf);
	if (err)
		goto fail;
	*state = st;
	return 0;
fail:
	cuda_free(st);
	return err;
}

static void cuda_detach(struct record_ctx *ctx, void *state)
{
	cuda_free(state);
}

/* The NUL-terminated deref string of R, or NULL. */
static const char *deref_string(const struct bs_ucall *r)
{
	const char *s = (const char *)(r + 1);

	if (r->deref_len != BS_UCALL_DEREF_STRING ||
	    r->h.size < sizeof(*r) + BS_UCALL_DEREF_STRING ||
	    !memchr(s, 0, BS_UCALL_DEREF_STRING) || !*s)
		return NULL;
	return s;
}

static void cuda_observe(struct record_ctx *ctx, void *state, const struct bs_hdr *rec)
{
	const struct bs_ucall *r = (const void *)rec;
	struct cuda_state *st = state;
	const struct ucall_spec *spec;
	const struct ucall_api *api;
	struct ucall_spec tmp;
	const char *name;
	char buf[4096];
	int arg, ok;

	if (rec->type == BS_REC_EXIT && rec->size >= sizeof(struct bs_exit) &&
	    ((const struct bs_exit *)rec)->group_dead)
		ucall_symbols__proc_exit(st->syms, rec->pid);
	if (rec->type != BS_REC_CUDA_CALL || rec->size < sizeof(*r))
		return;
	api = ucall_table__api(&cuda_table, r->fn);
	if (!api)
		return;
	if (ctx->gate && record_opts__captures(ctx->opts, &family_cuda)) {
		/* The range holds the start and the stop call themselves, as nsys shows them. */
		if (api->flags & CUDA_F_PROFILER_START)
			capture_gate__open(ctx->gate, rec->ts);
		else if (api->flags & CUDA_F_PROFILER_STOP)
			capture_gate__close(ctx->gate, rec->ts + r->dur);
	}
	ok = (__s32)r->ret == 0; /* the code is in eax: rax's upper half is undefined */
	spec = ucall_table__spec(&cuda_table, r->fn, &tmp);
	arg = spec->fn_word; /* the kernel, host function or handle the call names */
	if (arg >= 0 && arg < BS_UCALL_NARGS && r->args[arg]) {
		__u64 fn = r->args[arg];

		/*
		 * A handle named by an earlier call first (CUDA 13's <<<>>> launches pass the
		 * cudaKernel_t that __cudaGetKernel returned), else a host address in the ELF
		 * files (a stub, a host function given to cu/cudaLaunchHostFunc).
		 */
		name = ucall_symbols__get(st->syms, rec->pid, fn);
		if (!name)
			name = ucall_symbols__host(st->syms, ctx, rec->pid, fn);
		if (name && (api->flags & CUDA_F_ALIAS_OUT) && ok && r->out)
			ucall_symbols__set(st->syms, ctx, rec->pid, r->out, name, BS_SYM_HANDLE);
	}
	if ((api->flags & CUDA_F_NAMES_OUT) && ok && r->out && (name = deref_string(r))) {
		demangle(name, buf, sizeof(buf));
		ucall_symbols__set(st->syms, ctx, rec->pid, r->out, buf, BS_SYM_HANDLE);
	}
}

/* --capture-range=cudaProfilerApi: between cudaProfilerStart and cudaProfilerStop, as nsys. */
static const struct family_capture cuda_capture = { .kind = "cudaProfilerApi" };

static const struct loss_cause cuda_losses[] = {
	{ BS_LOSS_CUDA_DEPTH, "cuda_too_deep",
	  "calls nested deeper than the per-thread call stack keeps (8): not timed" },
	{ 0 },
};

const struct family family_cuda = {
	.name = "cuda",
	.desc = "CUDA runtime and driver API calls (uprobes on libcudart/libcuda, static too)",
	/* ucall.bpf.h's generic programs tell the functions apart by their cookies, and keep
	 * the call stacks of threads without a slot in task storage */
	.needs = 1u << KF_ATTACH_COOKIE | 1u << KF_TASK_STORAGE,
	.stack_default_ns = 100000, /* --stacks=cuda: calls of 100 us or more (nsys: 80 us) */
	.attach = cuda_attach,
	.detach = cuda_detach,
	.observe = cuda_observe,
	.capture = &cuda_capture,
	.api = &cuda_table,
	.losses = cuda_losses,
	.decoders = cuda_decoders,
	.reports = cuda_reports,
	.page = &cuda_page,
	.verdict = &cuda_verdict,
	.chrome = &cuda_chrome,
	.sqlite = &cuda_sqlite,
	.metrics = &cuda_metrics,
	.top = &cuda_top,
	.steps = cuda_step_sources,
};
