// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What a recording runs beside its families: the BPF maps they all share, and the services
 * (the uprobe manager, the stack service, the shim channel), each made only when a recorded
 * family uses it, before any family attaches, each handed the ones below it that it uses.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "family.h"
#include "family_record.h"
#include "family_attach.h"
#include "kernel_features.h"
#include "recording.h"
#include "shim_link.h"
#include "stack_svc.h"
#include "unwind_load.h"
#include "uprobe_mgr.h"
#include "msg.h"

int recording__create_maps(struct recording *r)
{
	struct record_ctx *ctx = &r->ctx;
	LIBBPF_OPTS(bpf_map_create_opts, no_prealloc, .map_flags = BPF_F_NO_PREALLOC);

	ctx->events_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "events", 0, 0,
					ctx->opts->ringbuf_bytes, NULL);
	if (ctx->events_fd < 0)
		return -errno;
	ctx->targets_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "targets", sizeof(__u32), sizeof(__u8),
					 record_ctx__map_entries("targets") ?: 65536, NULL);
	if (ctx->targets_fd < 0)
		return -errno;
	ctx->excluded_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "excluded", sizeof(__u32),
					  sizeof(__u8), 65536, &no_prealloc);
	if (ctx->excluded_fd < 0)
		return -errno;
	ctx->lost_fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "lost", sizeof(__u32),
				      sizeof(__u64), BS_LOST_KEYS, NULL);
	if (ctx->lost_fd < 0)
		return -errno;
	ctx->control_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "control", sizeof(__u32),
					 sizeof(__u32), BS_CTL_ENTRIES, NULL);
	if (ctx->control_fd < 0)
		return -errno;
	/* --start-at: the probes write nothing (and count no loss) until the instant. */
	if (ctx->opts->start_at.set)
		bpf_map_update_elem(ctx->control_fd, &(__u32){ 0 }, &(__u32){ BS_CTL_STOPPED },
				    BPF_ANY);
	ctx->py_procs_fd = bpf_map_create(
		BPF_MAP_TYPE_HASH, "py_procs", sizeof(__u32), sizeof(struct bs_py_cfg),
		record_ctx__map_entries("py_procs") ?: 4096, &no_prealloc);
	if (ctx->py_procs_fd < 0)
		return -errno;
	ctx->py_codes_fd =
		bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "py_codes", sizeof(struct bs_py_code_key),
			       sizeof(struct bs_py_code_id), BS_PY_CODES, NULL);
	if (ctx->py_codes_fd < 0)
		return -errno;
	return unwind_load__create(record_opts__wants_stacks(ctx->opts) &&
					   kfeature__has(KF_UNWIND_TABLES) && !ctx->opts->unwind_fp,
				   ctx->opts->unwind_rows, &ctx->unw_rows_fd, &ctx->unw_procs_fd,
				   &ctx->unw_cache_fd);
}

void recording__close_maps(struct recording *r)
{
	int *fds[] = { &r->ctx.events_fd,   &r->ctx.targets_fd,	  &r->ctx.lost_fd,
		       &r->ctx.control_fd,  &r->ctx.py_procs_fd,  &r->ctx.py_codes_fd,
		       &r->ctx.unw_rows_fd, &r->ctx.unw_procs_fd, &r->ctx.unw_cache_fd,
		       &r->ctx.excluded_fd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
}

/* What the families O records need: the uprobe manager, the stack service, the shim channel. */
static void needs(const struct record_opts *o, int *uprobes, int *stacks, int *shim)
{
	/* --trigger hang reads the job's stacks when it fires. */
	*stacks = record_opts__wants_stacks(o) || o->thread_names || o->flight.hang_ns ||
		  record_opts__edges(o) || /* the edges name where each thread is */
		  o->now_every_ns;	   /* top -p: what each thread is in now */
	*shim = 0;
	*uprobes = 0;
	for_each_family(it) {
		if (!(o->families & (1ull << it.i)))
			continue;
		*shim |= it.f->record->shim != NULL;
		*uprobes |= !!(it.f->flags & FAMILY_UPROBES);
	}
	/* The stack service names native frames from the manager's files; the channel finds
	 * the shims by its discovery. */
	*uprobes |= *stacks || *shim;
}

int recording__make_services(struct recording *r)
{
	struct record_ctx *ctx = &r->ctx;
	int uprobes, stacks, shim, err;

	needs(ctx->opts, &uprobes, &stacks, &shim);
	if (uprobes && !(r->uprobes = uprobe_mgr__open(ctx, &err))) {
		pr_err("cannot start the uprobe manager: %s\n", strerror(-err));
		return -1;
	}
	/* Before the families: the service hears only of code examined after it exists. */
	if (stacks && !(r->stacks = stack_svc__new(ctx, r->uprobes, &err))) {
		pr_err("cannot start the stack service: %s\n", strerror(-err));
		return -1;
	}
	if (shim && !(r->shim = shim_link__new(ctx, r->uprobes, &err))) {
		pr_err("cannot start the cupti-shim channel: %s\n", strerror(-err));
		return -1;
	}
	return 0;
}

void recording__attach_args(const struct recording *r, int i, struct family_attach *a)
{
	*a = (struct family_attach){
		.ctx = (struct record_ctx *)&r->ctx,
		.self = families[i],
		.uprobes = r->uprobes,
		.stacks = r->stacks,
		.shim = r->shim,
	};
}

void recording__close_services(struct recording *r)
{
	uprobe_mgr__close(r->uprobes);
	r->uprobes_closed = 1;
	stack_svc__uprobes_closed(r->stacks);
}

void recording__free_services(struct recording *r)
{
	shim_link__free(r->shim);
	r->shim = NULL;
	stack_svc__free(r->stacks);
	r->stacks = NULL;
	uprobe_mgr__free(r->uprobes);
	r->uprobes = NULL;
}
