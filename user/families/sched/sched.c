// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* sched family, record side: off-CPU intervals (bpf/sched.bpf.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "kernel_features.h"
#include "sched.h"
#include "sched_records.h"
#include "family_attach.h"
#include "record_ctx.h"
#include "sched.skel.h"
#include "msg.h"
#include "family_record.h"
#include "family_stats.h"

/*
 * --stacks=sched: held intervals get their stack from a task work run as the thread returns
 * to user space (sched_switch_tw_btf, where the kernel has bpf_task_work), else from a
 * sys_exit program every system call of the machine runs; only when asked for, and only with
 * task storage, where intervals are held for their stack (bpf/sched.bpf.c).
 */
static int sched_stacks_setup(struct record_ctx *ctx, struct sched_bpf *skel, int allow_tw)
{
	__u64 ns = record_opts__stack_ns(ctx->opts, &family_sched);
	int task_storage = bpf_map__autocreate(skel->maps.thread_sched_task), err = 0;
	int tw;

	if (ns != RECORD_STACKS_OFF && !task_storage) {
		pr_err("no stacks on off-CPU intervals: they need BPF task "
		       "storage (Linux 5.11 with BTF), which this kernel lacks\n");
		ns = RECORD_STACKS_OFF;
	}
	skel->rodata->sched_stack_ns = ns;
	/* (the task work's switch program reads prev_state: every kernel with one has it) */
	tw = allow_tw && ns != RECORD_STACKS_OFF && kfeature__has(KF_TASK_WORK) &&
	     kfeature__has(KF_PREV_STATE);
	skel->rodata->held_by_task_work = tw;
	if (ns == RECORD_STACKS_OFF || tw)
		err = bpf_program__set_autoload(skel->progs.sched_sys_exit_btf, false);
	/* The task work's switch program replaces the one pick_switch_state kept. */
	if (!err && tw)
		err = bpf_program__set_autoload(skel->progs.sched_switch_btf, false);
	if (!err && tw)
		err = kfeature__call_kfunc(skel->progs.sched_switch_tw_btf, BS_SCHED_TASK_WORK_CALL,
					   "bpf_task_work_schedule_resume_impl");
	if (!err && !tw)
		err = bpf_program__set_autoload(skel->progs.sched_switch_tw_btf, false);
	if (!err && !tw)
		err = bpf_map__set_max_entries(skel->maps.held_work, 1);
	return err;
}

/*
 * When the recording stops, once the programs that hold and write intervals are detached (no
 * thread writes its own meanwhile), the task iterator writes the intervals still held for
 * their stack (--stacks=sched) and, with the edges, those still open (a thread asleep at the
 * end): bpf/sched.bpf.c. Failing that, a warning says they are missing.
 */
static void sched_write_at_stop(struct record_ctx *ctx, struct sched_bpf *skel)
{
	struct bpf_link **stop[] = {
		&skel->links.sched_switch_btf,	  &skel->links.sched_switch_taskstate_btf,
		&skel->links.sched_switch_tw_btf, &skel->links.sched_waking_btf,
		&skel->links.sched_sys_exit_btf,  &skel->links.sched_exit_btf
	};
	int open = record_opts__edges(ctx->opts) && ctx->ended_ns;

	if (!open && skel->rodata->sched_stack_ns == RECORD_STACKS_OFF)
		return;
	for (size_t i = 0; i < sizeof(stop) / sizeof(stop[0]); i++) {
		bpf_link__destroy(*stop[i]);
		*stop[i] = NULL;
	}
	skel->bss->sched_stop_ns = open ? ctx->ended_ns : 0;
	record_ctx__run_iter(skel->links.sched_stop_iter_btf,
			     "write the off-CPU intervals still open or waiting for their stack");
}

/* -p with the edges: the threads off their CPU now carry their sleep into the recording. */
static void sched_at_start(struct record_ctx *ctx, void *state)
{
	struct sched_bpf *skel = state;

	(void)ctx;
	record_ctx__run_iter(skel->links.sched_start_iter_btf,
			     "read which threads are off their CPU as the recording begins");
}

/*
 * Keep the sched_switch programs that read prev_state where the tracepoint has it (5.18+),
 * else those that read the task's state (*_taskstate_*). Only turns programs off: which of
 * tp_btf and raw_tp runs was decided before.
 */
static int pick_switch_state(struct bpf_object *obj)
{
	int has = kfeature__has(KF_PREV_STATE), err;
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj) {
		int taskstate = strstr(bpf_program__name(prog), "_taskstate_") != NULL;

		if (strncmp(bpf_program__name(prog), "sched_switch_", 13) || taskstate != has)
			continue;
		err = bpf_program__set_autoload(prog, false);
		if (err)
			return err;
	}
	return 0;
}

/* The object loaded and attached, its held intervals' stacks by task work if ALLOW_TW. */
static struct sched_bpf *sched_load(struct record_ctx *ctx, int allow_tw, int *err)
{
	struct sched_bpf *skel = sched_bpf__open();

	if (!skel) {
		*err = -errno;
		return NULL;
	}
	RECORD_CTX_SET_COMMON_RODATA(skel, ctx, &family_sched);
	*err = record_ctx__prepare(ctx, skel->obj);
	/* A thread's state: task storage (tp_btf) or a hash (raw_tp). */
	if (!*err)
		*err = record_ctx__pick_task_storage(ctx, skel->obj, skel->maps.thread_sched_task,
						     skel->maps.thread_sched);
	if (!*err)
		*err = pick_switch_state(skel->obj);
	if (!*err)
		*err = sched_stacks_setup(ctx, skel, allow_tw);
	if (!*err)
		*err = sched_bpf__load(skel);
	if (!*err)
		*err = sched_bpf__attach(skel);
	if (*err) {
		sched_bpf__destroy(skel);
		return NULL;
	}
	return skel;
}

static int sched_attach(const struct family_attach *a, void **state)
{
	struct record_ctx *ctx = a->ctx;
	int err, tw_err;
	struct sched_bpf *skel = sched_load(ctx, 1, &err);

	/* A kernel that lists the kfunc but refuses its call here: the sys_exit path, said. */
	if (!skel && record_opts__stack_ns(ctx->opts, &family_sched) != RECORD_STACKS_OFF &&
	    kfeature__has(KF_TASK_WORK)) {
		tw_err = err;
		skel = sched_load(ctx, 0, &err);
		if (skel)
			pr_warn("off-CPU stacks by task work refused (%s): read at every system "
				"call's exit instead\n",
				strerror(-tw_err));
	}
	if (!skel)
		return err;
	*state = skel;
	return 0;
}

static void sched_detach(struct record_ctx *ctx, void *state)
{
	sched_write_at_stop(ctx, state);
	sched_bpf__destroy(state);
}

static const struct loss_cause sched_losses[] = {
	{ BS_LOSS_SCHED, "sched_missed", "context switches of a traced thread no program saw" },
	{ 0 },
};

static const struct family_record sched_recording = {
	.stack_default_ns = 1000000,
	.attach = sched_attach,
	.detach = sched_detach,
	.at_start = sched_at_start,
};

static const struct family_decode sched_reading = {
	.decoders = sched_decoders,
};

static const struct family_stats sched_stats = {
	.ledger = &sched_ledger,
	.reports = sched_reports,
	.verdict = &sched_verdict,
	.page = &sched_page,
};

const struct family family_sched = {
	.name = "sched",
	.desc = "off-CPU intervals: blocked vs runnable, wakers (sched_switch, sched_waking)",
	/* --stacks=sched: blocks of 1 ms or more. A stack costs a few us here: at most a few
	 * tenths of a percent of the time the thread was off the CPU anyway, and at most 1000
	 * stacks a second per thread. On by default when attaching (-p): where a running job's
	 * thread waits (its next batch, a collective) is the verdict's first question. */
	.flags = FAMILY_STACKS_DEFAULT | FAMILY_STACKS_DEFAULT_ATTACH | FAMILY_TIMELINE,
	.losses = sched_losses,
	.export = &sched_export,
	.sql = &sched_sql,
	.metrics = &sched_metrics,
	.record = &sched_recording,
	.decode = &sched_reading,
	.stats = &sched_stats,
};
