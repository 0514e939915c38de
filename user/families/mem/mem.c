// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * mem family, record side: bpf/mem.bpf.c's tracepoints (resident memory, process exits)
 * attached at once, and its uprobes on PyTorch's allocator code wherever the uprobe manager
 * finds it (mem_probes.c), in launch mode, -p and -a alike: no cupti-shim, no injection.
 * Nothing stays behind: the probes and the USDT semaphores go with the links.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "family_attach.h"
#include "mem_report.h"
#include "mem_state.h"
#include "mem_walk.h"
#include "msg.h"
#include "stack_svc.h"
#include "uprobe_mgr.h"
#include "family_record.h"
#include "family_stats.h"

static void mem_state_free(struct mem_state *st)
{
	if (!st)
		return;
	mem_files_free(st);
	mem_bpf__destroy(st->skel);
	free(st);
}

static int prepare_uprobes(struct mem_bpf *skel)
{
	struct bpf_program *progs[] = {
		skel->progs.mem_alloc,
		skel->progs.mem_cpu_delete,
		skel->progs.mem_oom,
		skel->progs.mem_usdt_malloc,
	};
	int err = 0;

	if (!uprobe_multi__supported())
		return 0;
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]) && !err; i++)
		err = uprobe_multi__prepare(progs[i]);
	return err;
}

/*
 * The uprobe manager's first scan is done (the uprobes came with the files): the running
 * targets' interpreters are looked for now, then allocations take stacks and the
 * tracepoints are attached, so that every stack has its Python frames (the first scan of a
 * torch job takes a while; a launched CMD waits until the recording is live).
 */
static void mem_started(void *arg)
{
	struct mem_state *st = arg;
	int err;

	if (st->stacks)
		stack_svc__start(st->ctx, st->stacks);
	st->skel->bss->mem_stacks_live = 1;
	err = mem_bpf__attach(st->skel);
	if (err)
		pr_warn("mem: cannot attach the resident-memory tracepoint: %s\n", strerror(-err));
}

static int mem_attach(const struct family_attach *a, void **state)
{
	struct record_ctx *ctx = a->ctx;
	const struct mem_opts *mo = record_opts__family(ctx->opts, &family_mem);
	struct mem_state *st = calloc(1, sizeof(*st));
	struct uprobe_listener lis = {
		.file = mem_on_file, .mapped = mem_on_mapped, .started = mem_started, .arg = st
	};
	__u64 stack_bytes;
	int err;

	if (!st)
		return -ENOMEM;
	st->ctx = ctx;
	st->listener = -1;
	st->skel = mem_bpf__open();
	if (!st->skel) {
		err = -errno;
		goto fail;
	}
	RECORD_CTX_SET_COMMON_RODATA(st->skel, ctx, &family_mem);
	stack_bytes = record_opts__stack_ns(ctx->opts, &family_mem);
	st->skel->rodata->mem_stack_bytes = stack_bytes;
	if (stack_bytes != RECORD_STACKS_OFF && mo->sample_rate) {
		st->skel->rodata->mem_sample_rate = mo->sample_rate;
		for (int i = 0; i < 256; i++)
			st->skel->rodata->mem_log2_frac[i] =
				(__u32)lround(log2(1 + (i + 0.5) / 256) * 65536);
	}
	st->skel->rodata->mem_native_frames = mo->native_frames;
	st->skel->rodata->rss_step = mo->step;
	st->skel->rodata->grow_step = mo->step;
	err = prepare_uprobes(st->skel);
	if (!err)
		err = record_ctx__prepare(ctx, st->skel->obj);
	if (!err)
		err = mem_bpf__load(st->skel);
	if (err)
		goto fail;
	st->uprobes = a->uprobes;
	st->stacks = a->stacks;
	st->listener = a->uprobes ? uprobe_mgr__add_listener(a->uprobes, &lis) : -EINVAL;
	if (st->listener < 0) {
		err = st->listener;
		goto fail;
	}
	*state = st;
	return 0;
fail:
	mem_state_free(st);
	return err;
}

static void mem_observe(struct record_ctx *ctx, void *state, const struct bs_hdr *rec)
{
	if (rec->type == BS_REC_EXIT && rec->size >= sizeof(struct bs_exit) &&
	    ((const struct bs_exit *)rec)->group_dead)
		mem_proc_gone(state, rec->pid);
}

static const __u16 mem_observes[] = { BS_REC_EXIT, 0 };

static void mem_detach(struct record_ctx *ctx, void *state)
{
	struct mem_state *st = state;

	mem_bpf__detach(st->skel);
	mem_unlink_all(st);
	uprobe_mgr__remove_listener(st->uprobes, st->listener);
	mem_state_free(st);
}

/* --trigger mem:oom: an OOM is the incident; the window shows the allocations that led to it. */
static const struct family_trigger mem_triggers[] = {
	{ "oom", BS_REC_MEM_OOM, "an allocation refused for want of memory (mem_oom)" },
	{ 0 },
};
static const struct report *const mem_reports[] = { &mem_sum, &mem_peak, &mem_leaks, &mem_growth,
						    NULL };

static const struct family_record mem_recording = {
	.stack_default_ns = MEM_STACK_DEFAULT_BYTES,
	.stack_bytes = 1,
	.options = mem_options,
	.opts_size = sizeof(struct mem_opts),
	.opts_init = mem_opts_init,
	.opts_describe = mem_opts_describe,
	.attach = mem_attach,
	.detach = mem_detach,
	.observe = mem_observe,
	.observes = mem_observes,
};

static const struct family_decode mem_reading = {
	.triggers = mem_triggers,
	.walk_new = mem_walk_new,
	.walk_observe = mem_walk_observe,
	.walk_free = mem_walk_free,
	.decoders = mem_decoders,
};

static const struct family_stats mem_stats = {
	.reports = mem_reports,
	.verdict = &mem_verdict,
	.page = &mem_page,
};

const struct family family_mem = {
	.name = "mem",
	.desc = "PyTorch tensor allocations and frees (CPU, GPU), allocator totals, RSS, "
		"resident growth by stack, OOMs (uprobes on c10, kmem:rss_stat)",
	.flags = FAMILY_OPT_IN | FAMILY_STACKS_DEFAULT | FAMILY_UPROBES,
	.export = &mem_export,
	.sql = &mem_sql,
	.metrics = &mem_metrics,
	.top = &mem_top,
	.record = &mem_recording,
	.decode = &mem_reading,
	.stats = &mem_stats,
};
