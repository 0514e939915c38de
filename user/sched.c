// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* sched family, record side: off-CPU intervals (bpf/sched.bpf.c). */
#include <errno.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "kernel_features.h"
#include "sched.h"
#include "record_ctx.h"
#include "sched.skel.h"

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

static int sched_attach(struct record_ctx *ctx, void **state)
{
	struct sched_bpf *skel = sched_bpf__open();
	int err;

	if (!skel)
		return -errno;
	RECORD_CTX_SET_COMMON_RODATA(skel, ctx);
	err = record_ctx__prepare(ctx, skel->obj);
	/* A thread's state: task storage (tp_btf) or a hash (raw_tp). */
	if (!err)
		err = record_ctx__pick_task_storage(ctx, skel->obj, skel->maps.thread_sched_task,
						    skel->maps.thread_sched);
	if (!err)
		err = pick_switch_state(skel->obj);
	if (!err)
		err = sched_bpf__load(skel);
	if (!err)
		err = sched_bpf__attach(skel);
	if (err) {
		sched_bpf__destroy(skel);
		return err;
	}
	*state = skel;
	return 0;
}

static void sched_detach(struct record_ctx *ctx, void *state)
{
	sched_bpf__destroy(state);
}

const struct family family_sched = {
	.name = "sched",
	.desc = "off-CPU intervals: blocked vs runnable, wakers (sched_switch, sched_wakeup)",
	.attach = sched_attach,
	.detach = sched_detach,
	.decoders = sched_decoders,
	.reports = sched_reports,
	.sqlite = &sched_sqlite,
};
