// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * torch family, record side: the cupti-shim channel (shim_link.c) asked for torch ops. The
 * kernel bumps the shim's torch semaphore where the channel attaches, and the shim registers
 * its RecordFunction callback in those processes only, removing it when the recording ends.
 * What the shim says of torch (registered, a version refused) is said on stderr once per
 * process; --capture-range=steps is torch_steps.c.
 *
 * Launch mode puts the shim in LD_PRELOAD: a CPU-only job never calls cuInit, which is where
 * CUDA_INJECTION64_PATH would load it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hmap.h"
#include "kernel_features.h"
#include "family_attach.h"
#include "record_ctx.h"
#include "shim_family.h"
#include "shim_link.h"
#include "shim_records.h"
#include "torch.h"
#include "msg.h"
#include "family_record.h"
#include "family_stats.h"

struct torch_proc {
	int said;     /* a note was printed */
	int said_bad; /* ... one saying ops are not recorded (a layout check fails after the
			 note that the callback was registered: it is said too) */
	int missing;  /* the last note: no libtorch_cpu (yet) */
	int refused;  /* the last note: torch ops cannot be recorded in it (a version refused) */
	int on;	      /* its callback was registered */
	__u64 ops;
};

struct torch_state {
	void *shim; /* the channel's state for this family */
	struct record_ctx *ctx;
	struct torch_steps *steps;
	struct hmap *procs; /* {pid, 0} -> struct torch_proc */
	__u32 refused;	    /* the first process whose torch was refused, 0: none */
};

static void note(struct torch_state *st, const struct bs_shim_status *s, const char *text)
{
	struct torch_proc *p = hmap__get(st->procs, (struct hkey){ s->h.pid, 0 }, 1);

	if (!p)
		return;
	p->missing = s->cupti_result == -ENOENT;
	/* A note with ops still recorded (no shapes) is followed by the registration's. */
	p->on |= !s->cupti_result;
	p->refused = s->cupti_result && !p->missing;
	if (p->refused && !st->refused)
		st->refused = s->h.pid;
	if (p->missing || (p->said && (!s->cupti_result || p->said_bad)))
		return; /* not loaded yet: said at the end if it never was */
	p->said = 1;
	p->said_bad = s->cupti_result != 0;
	pr_info("%spid %u: %s\n", s->cupti_result ? "warning: " : "", s->h.pid, text);
}

static void listen(void *arg, const struct bs_hdr *rec, const char *text)
{
	struct torch_state *st = arg;
	struct torch_proc *p;

	if (rec->type == BS_REC_SHIM_STATUS) {
		if (((const struct bs_shim_status *)rec)->event == BS_SHIM_EV_TORCH)
			note(st, (const void *)rec, text);
		return;
	}
	if (rec->type != BS_REC_TORCH_OP)
		return;
	p = hmap__get(st->procs, (struct hkey){ rec->pid, 0 }, 1);
	if (p)
		p->ops++;
	torch_steps__op(st->steps, (const void *)rec, text);
}

static void torch_free(struct record_ctx *ctx, struct torch_state *st)
{
	if (!st)
		return;
	if (st->shim) {
		shim_link__listen(st->shim, NULL, NULL);
		shim_link__detach(ctx, st->shim);
	}
	torch_steps__free(st->steps);
	hmap__free(st->procs);
	free(st);
}

static int torch_attach(const struct family_attach *a, void **state)
{
	struct record_ctx *ctx = a->ctx;
	struct torch_state *st = calloc(1, sizeof(*st));
	int err;

	if (!st || !(st->procs = hmap__new(sizeof(struct torch_proc)))) {
		free(st);
		return -ENOMEM;
	}
	st->ctx = ctx;
	st->steps =
		torch_steps__new(ctx, ctx->gate && record_opts__captures(ctx->opts, &family_torch)
					      ? ctx->opts->capture_arg
					      : NULL);
	if (!st->steps) {
		torch_free(ctx, st);
		return -ENOMEM;
	}
	err = shim_link__attach(a, &st->shim);
	if (err) {
		torch_free(ctx, st);
		return err;
	}
	shim_link__listen(st->shim, listen, st);
	*state = st;
	return 0;
}

static void torch_detach(struct record_ctx *ctx, void *state)
{
	torch_free(ctx, state);
}

static int torch_consume(struct record_ctx *ctx, void *state, const struct bs_hdr *rec)
{
	return shim_link__consume(ctx, ((struct torch_state *)state)->shim, rec);
}

/* 1 when some process registered the callback: ops can be recorded. */
static int some_on(const struct torch_state *st)
{
	struct torch_proc *p;
	size_t it = 0;

	while ((p = hmap__next(st->procs, &it, NULL)))
		if (p->on && !p->refused)
			return 1;
	return 0;
}

/*
 * --capture-range=steps before its first step: a recording in which no process can ever
 * record an op (no shim reachable, or torch refused where it loaded) fails now, saying how
 * to fix it, rather than wait for steps that never come.
 */
static void capture_check(struct record_ctx *ctx, struct torch_state *st)
{
	const char *arg = ctx->opts->capture_arg;

	if (!torch_steps__waiting(st->steps) || ctx->capture_done)
		return;
	if (shim_link__unreachable(ctx, st->shim)) {
		pr_err("--capture-range=steps:%s: no process of this recording has the "
		       "cupti-shim, so no torch op (and no step) can be recorded: add --inject "
		       "(loads it into the running job), or start the job with "
		       "LD_PRELOAD=<shim> (CUDA_INJECTION64_PATH=<shim> for a GPU job; "
		       "`bpfsight shim --print-env` installs it and prints the line)\n",
		       arg);
	} else if (st->refused && !some_on(st)) {
		pr_err("--capture-range=steps:%s: torch ops cannot be recorded in pid %u "
		       "(said above: bpfsight stats -r shim_sum tells why), so no step can be "
		       "counted\n",
		       arg, st->refused);
	} else {
		return;
	}
	ctx->capture_done = ctx->capture_failed = 1;
}

static int torch_poll(struct record_ctx *ctx, void *state)
{
	struct torch_state *st = state;
	int err = shim_link__poll(ctx, st->shim);

	capture_check(ctx, st);
	return err;
}

/* The shims flushed: say what is missing and why. */
static void torch_stop(struct record_ctx *ctx, void *state)
{
	struct torch_state *st = state;
	struct torch_proc *p;
	struct hkey k;
	size_t it = 0;

	shim_link__stop(ctx, st->shim);
	while ((p = hmap__next(st->procs, &it, &k)))
		if (p->missing && !p->ops)
			pr_info("pid %llu: no torch ops: libtorch_cpu was never "
				"loaded while recording\n",
				(unsigned long long)k.a);
	torch_steps__finish(st->steps);
}

static int torch_prelaunch(const struct record_opts *o)
{
	return shim_link__prelaunch(o, &family_torch);
}

/* ---- options ---- */

static void torch_opts_init(void *opts, const char *cmd)
{
	((struct torch_opts *)opts)->shapes = 0;
}

static int parse_shapes(void *opts, const char *arg, const char *cmd)
{
	((struct torch_opts *)opts)->shapes = 1;
	return 0;
}

static void torch_opts_describe(const void *opts, char *buf, size_t len)
{
	snprintf(buf, len, "%s",
		 ((const struct torch_opts *)opts)->shapes ? " torch_shapes=1" : "");
}

static const struct family_option torch_options[] = {
	{ "torch-shapes", NULL,
	  "-t torch: also record each op's input shapes and concrete inputs (its scalar "
	  "arguments' values), as torch.profiler's record_shapes (costs more per op: "
	  "docs/TORCH.md)",
	  FAMILY_OPT_RECORD, parse_shapes },
	{ 0 },
};

/* ---- what it tells the cupti-shim channel (shim_family.h) ---- */

static int shapes_wanted(const struct record_opts *o)
{
	const struct torch_opts *t = record_opts__family(o, &family_torch);

	return t && t->shapes;
}

/* --stacks=torch: the shim fires torch_op_stack(ts, dur) at each op it records. */
static const struct shim_site torch_sites[] = { { "torch" },
						{ "torch_shapes", shapes_wanted },
						{ "torch_op_stack", .stack_type = BS_REC_TORCH_OP },
						{ 0 } };

static const struct shim_rec torch_recs[] = {
	{ BS_REC_TORCH_OP, sizeof(struct bs_torch_op),
	  .strings = { offsetof(struct bs_torch_op, name_id),
		       offsetof(struct bs_torch_op, shapes_id),
		       offsetof(struct bs_torch_op, concrete_id) } },
	{ 0 },
};

static const struct shim_name torch_states[] = { { BS_SHIM_ST_TORCH_ON, "torch_on" }, { 0 } };
static const struct shim_name torch_events[] = { { BS_SHIM_EV_TORCH, "torch" }, { 0 } };

/* Its ops reach the steps' listener (above) as they are written: no hook of its own. */
static const struct family_shim torch_shim = {
	.sites = torch_sites,
	.recs = torch_recs,
	.states = torch_states,
	.events = torch_events,
	/* CUDA loads the shim at cuInit: a CPU-only job never does */
	.hint = { "CUDA_INJECTION64_PATH", "PyTorch ops (-t torch)",
		  " (a CPU-only job: LD_PRELOAD=<shim>)" },
	.env = NULL, /* launch mode: LD_PRELOAD, as a CPU-only job never calls cuInit */
};

/* --capture-range=steps:[WAIT+]N[xREPEAT]: N whole training steps (torch_steps.c). */
static const struct family_capture torch_capture = { .kind = "steps",
						     .arg = ":[WAIT+]N[xREPEAT]",
						     .check = torch_steps__check,
						     .files = torch_steps__files };

/* --trigger hang: a process whose steps stopped ending made no progress. */
static const __u16 torch_progress[] = { BS_REC_TORCH_STEP, 0 };

static const struct family_record torch_recording = {
	.shim = &torch_shim,
	.ring_only = shim_ring_only,
	.needs = 1u << KF_ATTACH_COOKIE,
	.options = torch_options,
	.opts_size = sizeof(struct torch_opts),
	.opts_init = torch_opts_init,
	.opts_describe = torch_opts_describe,
	.capture = &torch_capture,
	.attach = torch_attach,
	.poll = torch_poll,
	.detach = torch_detach,
	.consume = torch_consume,
	.consumes = shim_link_consumes,
	.stop = torch_stop,
	.prelaunch = torch_prelaunch,
};

static const struct family_decode torch_reading = {
	.progress = torch_progress,
	.decoders = torch_decoders,
	.name_observe = torch_roles__observe,
};

static const struct family_stats torch_stats = {
	.ledger = &torch_ledger,
	.reports = torch_reports,
	.page = &torch_page,
	.steps = torch_step_sources,
	.verdict = &torch_verdict,
};

const struct family family_torch = {
	.name = "torch",
	.desc = "PyTorch ops, backward ops and user scopes (a RecordFunction callback in the "
		"cupti-shim)",
	/*
	 * not by default: it registers a callback in the job, which then costs per op;
	 * --stacks=torch[:THRESHOLD]: every op (ops lasting THRESHOLD or more) carries its stack
	 */
	.flags = FAMILY_OPT_IN | FAMILY_STACKS_EVERY | FAMILY_SHIM,
	.export = &torch_export,
	.sql = &torch_sql,
	.record = &torch_recording,
	.decode = &torch_reading,
	.stats = &torch_stats,
};
