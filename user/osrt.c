// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * osrt family, record side: syscall latency probes (bpf/osrt.bpf.c) and the periodic copy
 * of the in-kernel aggregates of short calls into the trace.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "osrt.h"
#include "recorder.h"
#include "stats_math.h"
#include "osrt.skel.h"

struct osrt_state {
	struct osrt_bpf *skel;
	/* (pid, tid, nr) -> count last written, so only changed aggregates are written. */
	struct hmap *written;
};

static int osrt_attach(struct record_ctx *ctx, void **state)
{
	struct osrt_state *st = calloc(1, sizeof(*st));
	int err;

	if (!st)
		return -ENOMEM;
	st->written = hmap__new(sizeof(__u64));
	st->skel = osrt_bpf__open();
	if (!st->skel || !st->written) {
		err = st->skel ? -ENOMEM : -errno;
		osrt_bpf__destroy(st->skel);
		hmap__free(st->written);
		free(st);
		return err;
	}
	RECORD_CTX_SET_COMMON_RODATA(st->skel, ctx);
	st->skel->rodata->threshold_ns = ctx->opts->osrt_threshold_ns;
	err = record_ctx__prepare(ctx, st->skel->obj);
	if (!err)
		/* The call in flight: task storage (tp_btf) or a hash (raw_tp). */
		err = record_ctx__pick_task_storage(ctx, st->skel->obj,
						    st->skel->maps.sys_start_task,
						    st->skel->maps.sys_start);
	if (!err)
		err = osrt_bpf__load(st->skel);
	if (!err)
		err = osrt_bpf__attach(st->skel);
	if (err) {
		osrt_bpf__destroy(st->skel);
		hmap__free(st->written);
		free(st);
		return err;
	}
	*state = st;
	return 0;
}

static int osrt_poll(struct record_ctx *ctx, void *state)
{
	struct osrt_state *st = state;
	int fd = bpf_map__fd(st->skel->maps.sys_agg);
	struct bs_syscall_agg_key key, next, *prev = NULL;
	struct bs_syscall_agg_val val;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &val))
			continue;
		struct hkey hk = { .a = (__u64)key.pid << 32 | key.tid, .b = key.nr };
		__u64 *last = hmap__get(st->written, hk, 1);

		if (!last || *last == val.count)
			continue;
		*last = val.count;
		struct bs_syscall_agg r = {
			.nr = key.nr,
			.count = val.count,
			.total_ns = val.total_ns,
			.min_ns = val.min_ns,
			.max_ns = val.max_ns,
		};
		record_ctx__hdr(&r.h, BS_REC_SYSCALL_AGG, sizeof(r), key.pid, key.tid, 0);
		record_ctx__write(ctx, &r);
	}
	return 0;
}

static void osrt_detach(struct record_ctx *ctx, void *state)
{
	struct osrt_state *st = state;

	osrt_bpf__detach(st->skel);
	osrt_poll(ctx, st); /* final values, after the last probe ran */
	osrt_bpf__destroy(st->skel);
	hmap__free(st->written);
	free(st);
}

const struct family family_osrt = {
	.name = "osrt",
	.desc = "system call latency (raw_syscalls tracepoints)",
	.attach = osrt_attach,
	.poll = osrt_poll,
	.detach = osrt_detach,
	.decoders = osrt_decoders,
	.reports = osrt_reports,
};
