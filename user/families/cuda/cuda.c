// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cuda family, record side: the generic uprobe pair (bpf/ucall.bpf.c) on every function of
 * cuda_table wherever libcudart/libcuda code is mapped (uprobe_mgr), kernel names as
 * SYMBOL records, and cudaProfilerStart/Stop driving --capture-range=cudaProfilerApi.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "capture_gate.h"
#include "cuda.h"
#include "elf_syms.h"
#include "family_attach.h"
#include "record_ctx.h"
#include "ucall_family.h"
#include "ucall_symbols.h"
#include "family_record.h"
#include "family_stats.h"

struct cuda_state {
	void *ucall; /* the generic program's copy (ucall_family.h) */
	struct ucall_symbols *syms;
};

static void cuda_free(struct record_ctx *ctx, struct cuda_state *st)
{
	if (!st)
		return;
	ucall_family__detach(ctx, st->ucall);
	ucall_symbols__free(st->syms);
	free(st);
}

static int cuda_attach(const struct family_attach *a, void **state)
{
	struct cuda_state *st = calloc(1, sizeof(*st));
	int err;

	if (!st)
		return -ENOMEM;
	st->syms = ucall_symbols__new(a->uprobes);
	err = st->syms ? ucall_family__attach(a, &st->ucall) : -ENOMEM;
	if (err) {
		cuda_free(a->ctx, st);
		return err;
	}
	*state = st;
	return 0;
}

static void cuda_detach(struct record_ctx *ctx, void *state)
{
	cuda_free(ctx, state);
}

/* --trigger hang: a synchronization (or any call) entered and not left. */
static void cuda_in_flight(struct record_ctx *ctx, void *state, family_in_flight_fn fn, void *arg)
{
	ucall_family__in_flight(ctx, ((struct cuda_state *)state)->ucall, fn, arg);
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

/* A process's exit forgets its names; a call may name a kernel or a handle. */
static const __u16 cuda_observes[] = { BS_REC_EXIT, BS_REC_CUDA_CALL, 0 };

/* --capture-range=cudaProfilerApi: between cudaProfilerStart and cudaProfilerStop, as nsys. */
static const struct family_capture cuda_capture = { .kind = "cudaProfilerApi" };

static const struct loss_cause cuda_losses[] = {
	UCALL_LOSS_TOO_DEEP(BS_LOSS_CUDA_DEPTH, "cuda_too_deep"),
	{ 0 },
};

static const struct family_record cuda_recording = {
	.nsys_trace = "cuda,cuda-hw", /* nsys -t */
	.needs = UCALL_FAMILY_NEEDS,
	.stack_default_ns = 100000, /* --stacks=cuda: calls of 100 us or more (nsys: 80 us) */
	.attach = cuda_attach,
	.detach = cuda_detach,
	.in_flight = cuda_in_flight,
	.observe = cuda_observe,
	.observes = cuda_observes,
	.capture = &cuda_capture,
};

static const struct family_decode cuda_reading = {
	.decoders = cuda_decoders,
};

static const struct family_stats cuda_stats = {
	.ledger = &cuda_ledger,
	.reports = cuda_reports,
	.page = &cuda_page,
	.verdict = &cuda_verdict,
	.steps = cuda_step_sources,
};

const struct family family_cuda = {
	.name = "cuda",
	.flags = FAMILY_UPROBES,
	.desc = "CUDA runtime and driver API calls (uprobes on libcudart/libcuda, static too)",
	.api = &cuda_table,
	.losses = cuda_losses,
	.export = &cuda_export,
	.sql = &cuda_sql,
	.metrics = &cuda_metrics,
	.top = &cuda_top,
	.record = &cuda_recording,
	.decode = &cuda_reading,
	.stats = &cuda_stats,
};
