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

/*
 * The tp_btf programs keep the call in flight in task storage, the raw_tp ones in a hash
 * (bpf/osrt.bpf.c). record_ctx__prepare picked by BTF alone; a kernel with BTF but without
 * task storage for tracing programs (before 5.12) gets the raw_tp ones too. Only the map
 * the chosen programs use is created: the hash preallocates 65536 entries.
 */
static int choose_variant(struct osrt_bpf *skel, int use_btf)
{
	struct bpf_program *prog;
	int task_storage, err;

	task_storage = use_btf && libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) > 0;
	if (use_btf && !task_storage) {
		bpf_object__for_each_program(prog, skel->obj) {
			const char *name = bpf_program__name(prog);
			size_t n = strlen(name);
			int raw = n > 4 && !strcmp(name + n - 4, "_raw");

			err = bpf_program__set_autoload(prog, raw);
			if (err)
				return err;
		}
	}
	err = bpf_map__set_autocreate(skel->maps.sys_start_task, task_storage);
	if (!err)
		err = bpf_map__set_autocreate(skel->maps.sys_start, !task_storage);
	return err;
}

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
		err = choose_variant(st->skel, ctx->use_btf);
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
