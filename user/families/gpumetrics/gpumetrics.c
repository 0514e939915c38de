// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gpumetrics family, record side: the sampler process started at attach (gpum_spawn.c), its
 * records taken into the recording at every poll (gpum_drain.c), ended at the stop. No BPF
 * program: nothing here needs the kernel's features. Where NVML is absent, or the sampler
 * cannot run, it is said once, a STATUS record says why, and the recording goes on as
 * without the family.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "family_attach.h"
#include "hmap.h"
#include "gpum_state.h"
#include "msg.h"
#include "mono_clock.h"
#include "record_ctx.h"
#include "family_record.h"
#include "family_stats.h"

/* Wait for the sampler's first word: NVML started (or why not), its devices opened. */
static void wait_started(struct record_ctx *ctx, struct gpum_state *st)
{
	struct timespec pause = { 0, 5000000 };
	__u64 until = mono_now_ns() + GPUM_START_WAIT_NS;

	while (__atomic_load_n(&st->sp.chan->state, __ATOMIC_ACQUIRE) == BS_GPUM_STARTING &&
	       !gpum_sampler__exited(&st->sp) && mono_now_ns() < until &&
	       !record_ctx__must_stop(ctx))
		nanosleep(&pause, NULL);
	gpum_drain(ctx, st);
	gpum_check_alive(ctx, st);
}

/* bpfsight's own: -a does not trace it (its wake-ups would fill the trace). */
static void own_process(void *ctx, pid_t pid)
{
	record_ctx__own_process(ctx, pid);
}

static int gpum_attach(const struct family_attach *a, void **state)
{
	struct record_ctx *ctx = a->ctx;
	const struct gpum_opts *o = record_opts__family(ctx->opts, a->self);
	struct gpum_state *st = calloc(1, sizeof(*st));
	int err;

	if (!st)
		return -ENOMEM;
	*state = st;
	st->sp.chan_fd = -1;
	st->hz = o->hz;
	st->verbose = ctx->opts->verbose;
	if (!strcmp(o->devices, "none") || ctx->opts->dry_run) /* --dry-run records nothing */
		return 0;
	err = gpum_sampler__start(&st->sp, o->devices, o->hz, 1, own_process, ctx);
	if (err) {
		pr_warn("gpumetrics: cannot start the sampler: %s: no GPU metrics are recorded\n",
			strerror(-err));
		gpum_status(ctx, st, BS_GPUM_NO_SAMPLER, "cannot start the sampler: %s",
			    strerror(-err));
		return 0; /* the recording goes on without it */
	}
	wait_started(ctx, st);
	return 0;
}

static int gpum_poll(struct record_ctx *ctx, void *state)
{
	struct gpum_state *st = state;

	gpum_drain(ctx, st);
	gpum_check_alive(ctx, st);
	gpum_forget_children(st, mono_now_ns());
	return 0;
}

/* The recording ends: the sampler's last ticks taken, then it ends. */
static void gpum_stop(struct record_ctx *ctx, void *state)
{
	struct gpum_state *st = state;

	if (st->sp.pid <= 0)
		return;
	gpum_check_alive(ctx, st); /* ended already, since the last poll: said */
	gpum_sampler__stop(&st->sp, GPUM_STOP_WAIT_NS + 1000000000ull / (st->hz ? st->hz : 1));
	gpum_drain(ctx, st);
	if (!st->ended_said && st->state == BS_GPUM_RUNNING)
		gpum_stopped(ctx, st);
	st->ended_said = 1; /* its end is the recording's */
	st->sp.pid = 0;
}

static void gpum_detach(struct record_ctx *ctx, void *state)
{
	struct gpum_state *st = state;

	if (!st)
		return;
	gpum_stop(ctx, st);
	gpum_sampler__free(&st->sp);
	hmap__free(st->children);
	free(st);
}

static const struct loss_cause gpum_losses[] = {
	{ BS_LOSS_GPUM_LATE, "gpu_metrics_late",
	  "GPU metrics ticks skipped: the sampler woke late, or a tick's NVML reads ran past "
	  "the next" },
	{ BS_LOSS_GPUM_LOST, "gpu_metrics_lost",
	  "GPU metrics samples of a device that stopped answering NVML" },
	{ BS_LOSS_GPUM_FULL, "gpu_metrics_full",
	  "GPU metrics samples the recorder's buffer could not take: it fell behind" },
	{ 0 },
};

static const __u16 gpum_observes[] = { BS_REC_FORK, BS_REC_EXIT, 0 };

static const __u16 gpum_state_records[] = {
	BS_REC_GPUM_DEVICE,
	BS_REC_GPUM_KEY,
	BS_REC_GPUM_STATUS,
	0,
};

static const struct family_record gpumetrics_recording = {
	.options = gpum_options,
	.opts_size = sizeof(struct gpum_opts),
	.opts_init = gpum_opts_init,
	.opts_describe = gpum_opts_describe,
	.attach = gpum_attach,
	.poll = gpum_poll,
	.stop = gpum_stop,
	.detach = gpum_detach,
	.observe = gpum_observe,
	.observes = gpum_observes,
};

static const struct family_decode gpumetrics_reading = {
	.state_records = gpum_state_records,
	.walk_new = gpum_walk__new,
	.walk_observe = gpum_walk__observe,
	.walk_free = gpum_walk__free,
	.decoders = gpum_decoders,
};

static const struct family_stats gpumetrics_stats = {
	.reports = gpum_reports,
	.verdict = &gpum_verdict,
	.page = &gpum_page,
};

const struct family family_gpumetrics = {
	.name = "gpumetrics",
	.desc = "GPU metrics from NVML and GPM: utilization, SM and tensor activity, DRAM "
		"bandwidth, clocks, power, energy, throttling, PCIe/NVLink (a sampler process)",
	/* Not in the default set, as nsys's --gpu-metrics-devices defaults to none. */
	.flags = FAMILY_OPT_IN,
	.losses = gpum_losses,
	.export = &gpum_export,
	.sql = &gpumetrics_sql,
	.metrics = &gpum_metrics_family,
	.top = &gpum_top,
	.record = &gpumetrics_recording,
	.decode = &gpumetrics_reading,
	.stats = &gpumetrics_stats,
};
